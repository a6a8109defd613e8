"""The provider rate bound holds for the whole deployment, not per client
(``recon_pipeline/providers/ratelimit.py``).

The acceptance test runs 4 concurrent ``reconcile_night`` runs (real run worker processes launched by the
daemon) against the simulator with RECON_PROVIDER_MAX_RPS=5 and reads the simulator's own request log:
no one-second window holds more than 5 requests plus 2 (the bucket has no burst: slots are granted 0.2 s
apart by the database's clock, and a request starts within one interval of its slot or reserves a fresh
one, so a second holds at most rate + 2 starts), and the mean rate over the whole run is at most 5.1/s.
Before the shared bucket each run paced itself alone, and the same test counted 18–21 requests in a second.
"""

from __future__ import annotations

import threading
import time
from datetime import date
from typing import Any

import dagster as dg
import httpx
import pytest
from sqlalchemy import Engine, event, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.providers.ratelimit import SharedRateLimiter, bucket_name
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.support.dagster_processes import DagsterDeployment, StartWorld, wait_for_runs
from recon_pipeline_tests.support.rate_processes import busiest_second
from recon_pipeline_tests.support.run_intervals import max_in_progress

MAX_RPS = 5
JITTER_ALLOWANCE = 2  # the bucket's burst is 0 (no idle credit); a start may be up to one interval late
NIGHTS = (date(2026, 11, 27), date(2026, 11, 28))
PROPERTIES = (DEMO_PROPERTIES[0], DEMO_PROPERTIES[2])  # 2 nights × 2 properties = 4 runs
BOOKINGS_PER_NIGHT = 600  # several pages per pull: each run makes enough requests to overlap the others
STARTUP_TIMEOUT_S = 90
RUNS_TIMEOUT_S = 300


def test_busiest_second() -> None:
    assert busiest_second([]) == 0
    assert busiest_second([0.0, 0.5, 0.99, 1.0, 1.5]) == 3
    assert busiest_second([0.0, 1.0, 2.0]) == 1


# --- the bucket alone -----------------------------------------------------------------------------------


def test_limiters_sharing_a_bucket_share_its_rate(engine: Engine) -> None:
    """Two limiters (as two processes would hold) on one bucket, four threads each: the request starts
    are spaced by 1/rate across all of them, and another bucket is not slowed."""
    rate, per_thread = 40, 5
    limiters = [SharedRateLimiter(engine, "acct", rate) for _ in range(2)]
    starts, elapsed = _paced_starts(limiters, threads_each=4, per_thread=per_thread)
    assert len(starts) == 40
    assert elapsed >= (len(starts) - 1) / rate * 0.95  # paced as one client at `rate`
    assert busiest_second([t * rate / MAX_RPS for t in starts]) <= MAX_RPS + JITTER_ALLOWANCE
    other = SharedRateLimiter(engine, "another account", rate)
    assert other.acquire() == 0.0


def _paced_starts(
    limiters: list[SharedRateLimiter], threads_each: int, per_thread: int
) -> tuple[list[float], float]:
    """``threads_each`` threads per limiter, each acquiring ``per_thread`` slots: every request's start
    time and the seconds all of them took."""
    starts: list[float] = []
    lock = threading.Lock()

    def work(limiter: SharedRateLimiter) -> None:
        for _ in range(per_thread):
            limiter.acquire()
            with lock:
                starts.append(time.monotonic())

    began = time.monotonic()
    threads = [
        threading.Thread(target=work, args=(limiter,)) for limiter in limiters for _ in range(threads_each)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return starts, time.monotonic() - began


def _count_reservations(engine: Engine) -> list[str]:
    """The bucket statements ``engine`` runs from now on (a real listener on the real engine)."""
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "provider_rate_slots" in statement:
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    return statements


def test_held_slots_are_one_statement_and_keep_the_shared_schedule(database_url: str) -> None:
    """A process announcing 10 requests sends them after one statement, and they interleave with
    another process's single slots on the one schedule: still 1/rate apart across both."""
    rate, per_thread = 20, 5
    engines = [make_engine(database_url) for _ in range(2)]
    migrations.upgrade(engines[0])
    holding, single = (SharedRateLimiter(engine, "acct", rate) for engine in engines)
    statements = _count_reservations(engines[0])
    holding.hold(2 * per_thread)
    starts, elapsed = _paced_starts([holding, single], threads_each=2, per_thread=per_thread)
    assert len(starts) == 4 * per_thread
    # the hold, and a fresh slot for any acquire a stalled thread made past its held slot's interval
    assert 1 <= len(statements) < per_thread
    assert elapsed >= (len(starts) - 1) / rate * 0.95
    assert busiest_second([t * rate / MAX_RPS for t in starts]) <= MAX_RPS + JITTER_ALLOWANCE
    for engine in engines:
        engine.dispose()


def test_a_held_slot_is_spent_even_unused_and_never_used_late(engine: Engine) -> None:
    """Holding moves the bucket at once (another process waits behind the held slots); a held slot not
    taken within an interval of its time is dropped, and the request reserves a fresh one."""
    rate = 20
    holder, other = SharedRateLimiter(engine, "acct", rate), SharedRateLimiter(engine, "acct", rate)
    statements = _count_reservations(engine)
    holder.hold(4)
    assert statements == []  # reserved by the first request, not before its threads start
    assert holder.acquire() <= 0.05  # the first of 4 slots; 3 held
    assert 3 / rate - 0.05 <= other.reserve() <= 4 / rate + 0.05  # behind the 4 slots
    time.sleep(5 / rate + 0.1)  # every held slot is now past by more than an interval
    assert holder.acquire() <= 0.05  # a fresh slot, not a stale one
    assert len(statements) == 3


def test_a_slot_a_thread_woke_late_for_is_spent_and_a_fresh_one_reserved(engine: Engine) -> None:
    """A thread the host wakes 0.3 s past its slot does not start then: it reserves again, on the shared
    schedule, and starts within ``late_s`` of the fresh slot."""
    rate = 20
    late = [0.3]

    def sleep(seconds: float) -> None:
        time.sleep(seconds + (late.pop() if late else 0.0))

    limiter = SharedRateLimiter(engine, "acct", rate, sleep=sleep)
    statements = _count_reservations(engine)
    limiter.acquire()
    limiter.acquire()  # its slot is 1/rate after the first; the thread wakes 0.3 s after that
    assert len(statements) == 3
    assert limiter.late_s == 1 / rate


def test_a_sqlite_slot_leaves_its_pooled_connection_as_durable_as_it_was(sqlite_url: str) -> None:
    """The slot's own commit skips the WAL fsync; the connection the pipeline's writes get next from the
    pool is back to SQLite's default (FULL), also when the statement fails."""
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    limiter = SharedRateLimiter(engine, "acct", 1e9)
    with engine.connect() as connection:
        default = connection.exec_driver_sql("PRAGMA synchronous").scalar_one()
    assert [limiter.reserve() <= 0 for _ in range(3)] == [True] * 3
    broken = SharedRateLimiter(engine, "acct", 1e9)
    broken._statement = text("SELECT no_such_column FROM provider_rate_slots")
    with pytest.raises(OperationalError):
        broken.reserve()
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar_one() == default == 2
    assert engine.pool.checkedin() == 1  # one pooled connection served them all: it is the one checked
    engine.dispose()


@pytest.mark.postgres
def test_the_bucket_keeps_one_connection_and_replaces_one_the_database_dropped(postgres_url: str) -> None:
    """On PostgreSQL the limiter's statements share one kept connection of the pool (no checkout, no ping
    each); when the database drops it (a restart, an idle timeout), the next slot is still reserved, on a
    fresh connection; a statement that fails otherwise raises and gives its connection back."""
    engine = make_engine(postgres_url)
    migrations.upgrade(engine)
    limiter = SharedRateLimiter(engine, "acct", 1e9)
    assert [limiter.reserve() <= 0 for _ in range(3)] == [True] * 3
    assert engine.pool.checkedout() == 1
    with engine.connect() as admin:
        dropped = admin.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ).scalar_one()
    assert dropped == 1
    assert limiter.reserve() <= 0
    assert engine.pool.checkedout() == 1
    limiter._statement = text("SELECT no_such_column FROM provider_rate_slots")
    with pytest.raises(ProgrammingError):
        limiter.reserve()
    assert engine.pool.checkedout() == 0
    engine.dispose()


def test_bucket_names_never_hold_the_key() -> None:
    name = bucket_name("stripe", "https://api.stripe.com", "sk_live_secret")
    assert "sk_live_secret" not in name
    assert name != bucket_name("stripe", "https://api.stripe.com", "sk_live_other")
    with pytest.raises(ValueError):
        SharedRateLimiter(make_engine("sqlite://"), "b", 0)


# --- the deployment ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.postgres
def test_four_concurrent_runs_stay_under_the_deployment_rate(pg_dagster_world: StartWorld) -> None:
    w = pg_dagster_world(
        NIGHTS,
        bookings_per_night=BOOKINGS_PER_NIGHT,
        properties=PROPERTIES,
        dagster_yaml={
            "concurrency": {
                "runs": {
                    "max_concurrent_runs": 10,
                    "tag_concurrency_limits": [{"key": PROVIDER_BOUND_TAG, "limit": 4}],
                },
                "pools": {"default_limit": 4},
            },
            "run_queue": {"dequeue_interval_seconds": 1},
        },
    )
    instance = w.instance
    batches = w.world.property_nights()  # one run per property-night: a batch of one property
    assert len(batches) == 4
    env = {**w.env, "RECON_PROVIDER_MAX_RPS": str(MAX_RPS)}
    with DagsterDeployment(env, w.log_dir) as deployment:
        deployment.start_code_server(STARTUP_TIMEOUT_S)
        client = deployment.start_webserver(STARTUP_TIMEOUT_S)
        client.wait_for_location(STARTUP_TIMEOUT_S, deployment)
        client.stop_all_instigators()  # only these four runs call the provider
        run_ids = [client.launch_partition_run(night, [property_id]) for night, property_id in batches]
        deployment.start_daemon()
        with deployment.logs_on_failure():
            records = wait_for_runs(instance, run_ids, RUNS_TIMEOUT_S, deployment)
    statuses = {r.dagster_run.run_id: r.dagster_run.status for r in records}
    assert set(statuses.values()) == {dg.DagsterRunStatus.SUCCESS}, statuses
    log = httpx.get(f"{w.simulator_url}/_simulator/requests", timeout=10).json()["requests"]
    stats = httpx.get(f"{w.simulator_url}/_simulator/stats", timeout=10).json()

    intervals = [(float(r.start_time or 0), float(r.end_time or 0)) for r in records]
    arrivals = [float(request["at"]) for request in log]
    span = max(arrivals) - min(arrivals)
    busiest = busiest_second(arrivals)
    print(
        f"rate bound: {len(arrivals)} requests in {span:.1f} s ({len(arrivals) / span:.2f}/s), busiest "
        f"second {busiest}, runs in progress at once {max_in_progress(intervals)}"
    )
    assert len(arrivals) == stats["api_requests"] >= 4 * 8  # several pages per run: a real load
    assert stats["rate_limited"] == 0
    assert max_in_progress(intervals) >= 3  # the runs really overlapped (else the bound proves nothing)
    assert busiest <= MAX_RPS + JITTER_ALLOWANCE
    assert (len(arrivals) - 1) / span <= MAX_RPS * 1.02
