"""Benchmark: the deployment-wide provider rate bucket (``providers/ratelimit.py``): what a slot costs, and
how much of the rate several processes sharing it get.

    python -m benchmarks.ratelimit [--acquires 2000] [--threads 8] [--postgres-url URL]
        [--rates 20,50] [--processes 4] [--process-threads 4] [--duration 5] [--json]

Cost: times ``SharedRateLimiter.reserve`` (the one ``INSERT … ON CONFLICT DO UPDATE … RETURNING`` each
provider request pays before it starts) with a rate so high that nobody waits, on a scratch PostgreSQL
database and on a SQLite file: per call from one thread (beside a bare ``SELECT 1`` on the same engine,
the floor), and the throughput of ``--threads`` threads sharing the bucket (the row lock serialises them,
which is the point: that is the ceiling of request starts per second the bucket itself could ever allow).

Utilisation (issue 13): for each of ``--rates``, ``--processes`` spawned processes of
``--process-threads`` threads each pull from the simulator (served here, enforcing the same rate) for
``--duration`` seconds through ``ProviderHttp`` and one shared bucket, on each backend
(``recon_pipeline_tests/support/rate_processes.py``). From the simulator's request log: the mean rate while
every process pulled as a share of the limit, the busiest one-second window, the 429s; and the processes'
median bucket / wait / whole-request times, which say whether a shortfall is the bucket's or the
machine's (a slot is only used if some thread is waiting for it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.providers.ratelimit import SharedRateLimiter
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline_tests.support.rate_processes import RateFigures, pull_in_processes, puller_store
from recon_pipeline_tests.support.scratch import DEFAULT_ADMIN_URL, scratch_database

UNBOUNDED_RATE = 1e9  # slots 1 ns apart: every reserve answers "now", so only the statement is timed


def measure(engine: Engine, acquires: int, threads: int) -> dict[str, Any]:
    migrations.upgrade(engine)
    limiter = SharedRateLimiter(engine, "benchmark", UNBOUNDED_RATE)
    limiter.reserve()  # the row exists, the pool holds a connection
    latencies = []
    for _ in range(acquires):
        started = time.perf_counter()
        limiter.reserve()
        latencies.append(time.perf_counter() - started)
    per_thread = acquires // threads

    def work() -> None:
        for _ in range(per_thread):
            limiter.reserve()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(600)
    elapsed = time.perf_counter() - started
    latencies.sort()
    baseline = []
    for _ in range(acquires):
        started = time.perf_counter()
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        baseline.append(time.perf_counter() - started)
    return {
        "median_ms": round(statistics.median(latencies) * 1000, 3),
        "select_1_median_ms": round(statistics.median(baseline) * 1000, 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
        "threads": threads,
        "reserves_per_s": round(per_thread * threads / elapsed),
    }


def utilisation(
    database_url: str, rates: list[float], processes: int, threads: int, duration_s: float
) -> list[dict[str, Any]]:
    """Each rate's figures from the simulator's side, ``processes`` pullers sharing one bucket."""
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    engine.dispose()
    app = build_app(puller_store(processes))
    rows = []
    with ServerThread(app) as server:
        for rate in rates:
            app.state.faults.configure({"rate_limit_rps": rate})  # the provider enforces it too
            figures = pull_in_processes(
                server.base_url, database_url, rate, processes, threads, duration_s, bucket=f"bench-{rate}"
            )
            rows.append(_row(figures, processes, threads))
    return rows


def _row(figures: RateFigures, processes: int, threads: int) -> dict[str, Any]:
    def median(values: list[float]) -> float:
        return round(statistics.median(values), 1)

    return {
        "rate": figures.limit,
        "processes": processes,
        "threads_per_process": threads,
        "requests": figures.busy.requests,
        "busy_rps": round(figures.busy.mean_rps, 2),
        "all_pulling_rps": round(figures.all_pulling.mean_rps, 2),
        "utilisation": round(figures.utilisation, 3),
        "busiest_second": figures.busiest_second,
        "rate_limited": figures.rate_limited,
        "bucket_ms": median([t.bucket_ms for t in figures.pullers]),
        "wait_ms": median([t.wait_ms for t in figures.pullers]),
        "request_ms": median([t.request_ms for t in figures.pullers]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acquires", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    default_url = os.environ.get("RECON_TEST_POSTGRES_URL", DEFAULT_ADMIN_URL)
    parser.add_argument("--postgres-url", default=default_url)
    parser.add_argument("--rates", default="20,50", help="comma-separated limits for the utilisation runs")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--process-threads", type=int, default=4)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds each utilisation run pulls")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rates = [float(rate) for rate in args.rates.split(",") if rate.strip()]
    shape = (rates, args.processes, args.process_threads, args.duration)
    results: dict[str, Any] = {}
    with scratch_database(args.postgres_url, "bench_rate") as url:
        engine = make_engine(url, pool_size=args.threads)
        results["postgresql"] = measure(engine, args.acquires, args.threads)
        engine.dispose()
        results["postgresql"]["processes"] = utilisation(url, *shape)
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bucket.sqlite'}"
        engine = make_engine(url)
        results["sqlite"] = measure(engine, args.acquires, args.threads)
        engine.dispose()
        results["sqlite"]["processes"] = utilisation(url, *shape)
    if args.json:
        print(json.dumps(results))
        return
    for backend, figures in results.items():
        print(
            f"{backend}: reserve median {figures['median_ms']} ms "
            f"(SELECT 1: {figures['select_1_median_ms']} ms), "
            f"p99 {figures['p99_ms']} ms; "
            f"{figures['reserves_per_s']} reserves/s over {figures['threads']} threads"
        )
        for row in figures["processes"]:
            print(
                f"  {row['rate']:g}/s, {row['processes']} processes x {row['threads_per_process']} threads: "
                f"{row['requests']} requests, {row['all_pulling_rps']}/s while all pulled "
                f"({row['utilisation']:.1%}), busiest second {row['busiest_second']}, "
                f"{row['rate_limited']} x 429; median bucket {row['bucket_ms']} ms, "
                f"wait {row['wait_ms']} ms, request {row['request_ms']} ms"
            )


if __name__ == "__main__":
    main()
