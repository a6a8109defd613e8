"""Benchmark: the cost of one slot of the deployment-wide provider rate bucket (``ratelimit.py``).

    python -m benchmarks.ratelimit [--acquires 2000] [--threads 8] [--postgres-url URL] [--json]

Times ``SharedRateLimiter.reserve`` (the one ``INSERT … ON CONFLICT DO UPDATE … RETURNING`` each provider
request pays before it starts) with a rate so high that nobody waits, on a scratch PostgreSQL database and
on a SQLite file: per call from one thread (beside a bare ``SELECT 1`` on the same engine, the floor), and
the throughput of ``--threads`` threads sharing the bucket (the row lock serialises them, which is the
point: that is the ceiling of request starts per second the bucket itself could ever allow).
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
from recon_pipeline.ratelimit import SharedRateLimiter
from recon_pipeline_tests.scratch import DEFAULT_ADMIN_URL, scratch_database

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acquires", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    default_url = os.environ.get("RECON_TEST_POSTGRES_URL", DEFAULT_ADMIN_URL)
    parser.add_argument("--postgres-url", default=default_url)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with scratch_database(args.postgres_url, "bench_rate") as url:
        engine = make_engine(url, pool_size=args.threads)
        results["postgresql"] = measure(engine, args.acquires, args.threads)
        engine.dispose()
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(f"sqlite:///{Path(folder) / 'bucket.sqlite'}")
        results["sqlite"] = measure(engine, args.acquires, args.threads)
        engine.dispose()
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


if __name__ == "__main__":
    main()
