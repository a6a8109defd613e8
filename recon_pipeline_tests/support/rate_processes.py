"""Several OS processes pulling from one provider through one shared rate bucket, judged on the provider's
side: the simulator's own request log (test support, kept out of the package; ``benchmarks/ratelimit.py``
uses it too).

Threads of one process share its GIL, its connection pool and its clock, so they cannot show what a
deployment of run workers does to the bucket. Here each puller is a spawned process (nothing inherited
but its arguments) with its own engine, its own ``ProviderHttp`` and its own threads; all start together
once every one is connected, pull for the same duration, and the simulator's arrival times say what the
provider saw. Each puller asks for its own charge, so the log also shows when each one pulled: the
utilisation is judged while all of them were pulling (a puller spawned late on a loaded machine, or
stopping early, is not the bucket's loss). Each puller also reports where its threads' time went
(bucket, wait, request), which is what explains a low utilisation: the bucket can only use its slots
while some thread is waiting for one.
"""

from __future__ import annotations

import bisect
import multiprocessing
import queue
import statistics
import threading
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import TypeVar

from recon_pipeline.db.engine import make_engine
from recon_pipeline.providers.http import ProviderHttp, RetryPolicy
from recon_pipeline.providers.ratelimit import SharedRateLimiter
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.loopback import loopback_client

# A request over the provider's limit is a 429, never retried here: the log holds first attempts only.
ONE_ATTEMPT = RetryPolicy(max_attempts=1, timeout_s=10)
T = TypeVar("T")
STARTUP_TIMEOUT_S = 60.0  # a spawned interpreter imports the package afresh: seconds on a loaded machine
PULLER_SLACK_S = 30.0  # beyond its duration: a puller's last requests, its report and its exit


def charge_id(puller: int) -> str:
    """The one small object puller ``puller`` asks for: the provider answers in a few ms, so the pullers
    (not the simulator serving them) are what the bucket paces, and the path names the puller."""
    return f"ch_puller_{puller:03d}"


def puller_store(processes: int) -> SimulatorStore:
    """A simulator store holding each puller's charge."""
    from recon_pipeline_tests.support.provider_fixtures import (
        make_charge,  # not in the pullers: they stay light
    )

    return SimulatorStore(charges=[make_charge(charge_id(i), 1_767_225_600) for i in range(processes)])


def busiest_second(arrivals: list[float]) -> int:
    """The most arrivals in any half-open one-second window [t, t + 1)."""
    times = sorted(arrivals)
    return max((bisect.bisect_left(times, t + 1.0) - i for i, t in enumerate(times)), default=0)


@dataclass(frozen=True)
class PullerTimes:
    """Medians over one puller's requests, in ms: ``bucket`` is the reservation's own cost (the acquire
    minus the wait it answered), ``wait`` the sleep until the slot, ``request`` the whole ``get_json``
    (both of those and the HTTP exchange)."""

    requests: int
    bucket_ms: float
    wait_ms: float
    request_ms: float


@dataclass(frozen=True)
class Interval:
    """Arrivals over an interval, first to last."""

    requests: int
    span_s: float

    @classmethod
    def of(cls, arrivals: list[float]) -> Interval:
        return cls(len(arrivals), max(arrivals) - min(arrivals) if arrivals else 0.0)

    @property
    def mean_rps(self) -> float:
        """Request starts a second: n arrivals are n - 1 intervals of the pace."""
        return (self.requests - 1) / self.span_s if self.span_s > 0 else 0.0


@dataclass(frozen=True)
class RateFigures:
    """What the provider saw: every arrival (``busy``: first to last), the interval while every puller
    was pulling (``all_pulling``: from the last puller's first arrival to the first puller's last), the
    busiest second, the 429s; and the pullers' own times."""

    limit: float
    busy: Interval
    all_pulling: Interval
    busiest_second: int
    rate_limited: int
    pullers: tuple[PullerTimes, ...]

    @property
    def utilisation(self) -> float:
        """The mean rate while every puller pulled, as a share of the limit (1.0: every slot used)."""
        return self.all_pulling.mean_rps / self.limit


class _TimedLimiter:
    """The shared limiter, timed: what each acquire cost beyond the wait it was told."""

    def __init__(self, limiter: SharedRateLimiter) -> None:
        self._limiter = limiter
        self.costs: list[tuple[float, float]] = []  # (acquire's seconds, of which waited)

    def acquire(self) -> float:
        started = time.perf_counter()
        waited = self._limiter.acquire()
        self.costs.append((time.perf_counter() - started, waited))
        return waited

    def hold(self, count: int) -> None:
        self._limiter.hold(count)


def _pull(
    base_url: str,
    database_url: str,
    bucket: str,
    rate: float,
    threads: int,
    duration_s: float,
    puller: int,
    ready: Queue[bool],
    go: Event,
    results: Queue[PullerTimes],
) -> None:
    """One puller process: ``threads`` threads of sequential GETs through one client and limiter, for
    ``duration_s`` from the start signal.

    A failed request raises in its thread and the process exits non-zero (``pull_in_processes`` says so)."""
    engine = make_engine(database_url, pool_size=threads)
    failures: list[BaseException] = []
    request_s: list[float] = []
    try:
        with engine.connect():  # the pool holds a connection before the clock starts
            pass
        limiter = _TimedLimiter(SharedRateLimiter(engine, bucket, rate))
        with ProviderHttp(base_url, max_concurrency=threads, retry=ONE_ATTEMPT, limiter=limiter) as http:
            path = f"/v1/charges/{charge_id(puller)}"

            def work() -> None:
                try:
                    while time.monotonic() < stop:
                        started = time.perf_counter()
                        http.get_json(path)
                        request_s.append(time.perf_counter() - started)
                except BaseException as error:  # re-raised below: the exit code reports it
                    failures.append(error)

            workers = [threading.Thread(target=work) for _ in range(threads)]
            ready.put(True)
            if not go.wait(STARTUP_TIMEOUT_S):
                raise TimeoutError("the other pullers never became ready")
            stop = time.monotonic() + duration_s
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
    finally:
        engine.dispose()
    if failures:
        raise failures[0]
    results.put(
        PullerTimes(
            requests=len(request_s),
            bucket_ms=statistics.median(cost - waited for cost, waited in limiter.costs) * 1000,
            wait_ms=statistics.median(waited for _, waited in limiter.costs) * 1000,
            request_ms=statistics.median(request_s) * 1000,
        )
    )


def pull_in_processes(
    simulator_url: str,
    database_url: str,
    rate: float,
    processes: int,
    threads: int,
    duration_s: float,
    bucket: str = "rate-processes",
) -> RateFigures:
    """``processes`` spawned pullers of ``threads`` threads on one bucket of ``database_url`` (migrated to
    head) at ``rate`` for ``duration_s``, against a simulator serving ``puller_store(processes)``; the
    figures from its request log and counters, reset first. Raises if a puller fails or overruns."""
    sim = loopback_client(base_url=simulator_url, timeout=10)
    try:
        sim.post("/_simulator/reset-stats").raise_for_status()
        context = multiprocessing.get_context("spawn")
        ready: Queue[bool] = context.Queue()
        results: Queue[PullerTimes] = context.Queue()
        go = context.Event()
        common = (simulator_url, database_url, bucket, rate, threads, duration_s)
        pullers = [
            context.Process(target=_pull, args=(*common, i, ready, go, results)) for i in range(processes)
        ]
        for puller in pullers:
            puller.start()
        try:
            times = _run(pullers, ready, go, results, duration_s + PULLER_SLACK_S)
        finally:
            for puller in pullers:
                if puller.is_alive():
                    puller.kill()
                    puller.join(10)
        exit_codes = [puller.exitcode for puller in pullers]
        if times is None or exit_codes != [0] * processes:
            raise RuntimeError(f"puller processes failed or overran: exit codes {exit_codes}")
        log = sim.get("/_simulator/requests").json()["requests"]
        stats = sim.get("/_simulator/stats").json()
    finally:
        sim.close()
    arrivals = [float(request["at"]) for request in log]
    by_puller = [
        [float(r["at"]) for r in log if r["path"] == f"/v1/charges/{charge_id(i)}"] for i in range(processes)
    ]
    if any(not times_of_one for times_of_one in by_puller):
        raise RuntimeError("a puller's requests never reached the simulator")
    start, end = max(min(one) for one in by_puller), min(max(one) for one in by_puller)
    return RateFigures(
        limit=rate,
        busy=Interval.of(arrivals),
        all_pulling=Interval.of([at for at in arrivals if start <= at <= end]),
        busiest_second=busiest_second(arrivals),
        rate_limited=int(stats["rate_limited"]),
        pullers=tuple(times),
    )


def _run(
    pullers: list[BaseProcess],
    ready: Queue[bool],
    go: Event,
    results: Queue[PullerTimes],
    timeout_s: float,
) -> list[PullerTimes] | None:
    """Start the pullers together once each is connected, and collect what each reports; None as soon as
    one has died without reporting (the others' results would never make up the set), or on a timeout."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    for _ in pullers:
        if _next(ready, pullers, deadline) is None:
            return None
    go.set()
    deadline = time.monotonic() + timeout_s
    times = []
    for _ in pullers:
        reported = _next(results, pullers, deadline)
        if reported is None:
            return None
        times.append(reported)
    for puller in pullers:
        puller.join(max(0.0, deadline - time.monotonic()))
    return times


def _next(messages: Queue[T], pullers: list[BaseProcess], deadline: float) -> T | None:
    """The next message of a puller; None once the deadline passes or a puller has failed."""
    while time.monotonic() < deadline:
        try:
            return messages.get(timeout=0.2)
        except queue.Empty:
            if any(puller.exitcode not in (None, 0) for puller in pullers):
                return None
    return None
