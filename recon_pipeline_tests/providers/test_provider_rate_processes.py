"""Issue 13: the provider rate bound holds across OS processes, and they use at least 90% of it, as the
provider sees it (the simulator's request log, ``recon_pipeline_tests/support/rate_processes.py``).

Four spawned processes, four threads each, take their slots from one bucket (``SharedRateLimiter``) at
20 requests a second for 5 s while the simulator enforces the same limit (a token bucket one second
deep, 429 over it). While every process is pulling, the mean is at least 90% of the limit; the whole
busy interval (first to last arrival) holds no more requests than it has slots; no request is refused;
and no one-second window holds more than the limit plus the arrivals that lateness can push into it. A
slot is granted by the database's clock, and the request reaches the provider after the reservation's
answer, the sleep's overshoot and the server's event loop: up to ``ARRIVAL_JITTER_S`` later on this
shared 2-core machine (measured at 20/s: busiest second 22-24 at load averages of 11-33, 27 at 47; at
50/s, 4-7 over the limit at 13-20). The slots themselves never bunch: a per-process limiter would show
as about ``PROCESSES`` times the limit.

20/s rather than the 50/s of ``benchmarks/ratelimit.py``: at load averages of 20-30 on 2 cores a request
costs a thread ~0.4 s, so 16 threads cannot ask for 50 a second, and the bucket would be judged on what
the machine could not demand. PostgreSQL is the deployment's case and runs in the postgres tier; SQLite,
whose bucket is serialised by the file's write lock, is the same test in the slow tier. Each takes 5 s
of pulling plus the spawning of four interpreters (~2.5 s of CPU each: the package imports pandas): 43-68 s
in all at load averages of 11-47 on 2 cores.
"""

from __future__ import annotations

import math

import pytest

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline_tests.support.provider_fixtures import (
    StartSimulator,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)
from recon_pipeline_tests.support.rate_processes import pull_in_processes, puller_store

RATE = 20
PROCESSES, THREADS, DURATION_S = 4, 4, 5.0
ARRIVAL_JITTER_S = 0.35
MIN_UTILISATION = 0.9


def allowance(rate: float) -> int:
    """Arrivals a one-second window may hold beyond ``rate``: the window's own +1 (n slots 1/rate apart
    span (n - 1)/rate) and those up to ``ARRIVAL_JITTER_S`` late from the window before."""
    return 1 + math.ceil(rate * ARRIVAL_JITTER_S)


def test_allowance_is_in_time_not_requests() -> None:
    assert allowance(20) == 8
    assert allowance(100) == 36


@pytest.mark.parametrize(
    "backend",
    [pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("sqlite", marks=pytest.mark.slow)],
)
def test_processes_sharing_a_bucket_use_90_percent_of_it_and_never_exceed_it(
    backend: str, simulator: StartSimulator, request: pytest.FixtureRequest
) -> None:
    database_url = str(request.getfixturevalue(f"{backend}_url"))
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    engine.dispose()
    sim = simulator(puller_store(PROCESSES))
    sim.set_faults(rate_limit_rps=RATE)  # the provider enforces the same limit: over it is a 429

    figures = pull_in_processes(sim.base_url, database_url, RATE, PROCESSES, THREADS, DURATION_S)

    busy, steady = figures.busy, figures.all_pulling
    print(
        f"{backend}: {busy.requests} requests in {busy.span_s:.2f} s ({busy.mean_rps:.2f}/s); all "
        f"pulling {steady.requests} in {steady.span_s:.2f} s = {figures.utilisation:.1%} of {RATE}/s; "
        f"busiest second {figures.busiest_second}; pullers' median bucket/wait/request "
        + ", ".join(f"{t.bucket_ms:.0f}/{t.wait_ms:.0f}/{t.request_ms:.0f} ms" for t in figures.pullers)
    )
    assert figures.rate_limited == 0
    assert steady.span_s >= DURATION_S / 2  # the processes overlapped (else the figures prove nothing)
    assert figures.busiest_second <= RATE + allowance(RATE)
    assert busy.requests - 1 <= RATE * (busy.span_s + ARRIVAL_JITTER_S)  # its first arrival may be late
    assert figures.utilisation >= MIN_UTILISATION
