"""Benchmark: one night of the fleet through dagster-celery's executor, on 1 and then 2 Celery workers.

    python -m benchmarks.celery [--properties 200] [--workers 1 2] [--batch-size 50] [--concurrency 1]
                                [--timeout 1800] [--json]

The deployment of ``recon_pipeline_tests/defs/test_celery_executor.py`` (code server, webserver, daemon on a
scratch PostgreSQL instance with deploy/dagster.yaml's run queue and limits; RabbitMQ at
RECON_TEST_CELERY_BROKER, default the local one), built afresh for each worker count: the fleet's night
(``simulation/demo/fleet.py``) cut into batches as the nightly schedule cuts it, one run per batch submitted
at once. The wall time runs from the first submission to the last run's end, so it includes what a night costs
beyond the work: launching run workers, and each Celery task loading the code location. Each worker has
``--concurrency`` task slots. Every run must succeed and every planted discrepancy be found; otherwise the
figure is printed with the failed runs' reasons and the exit status is non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg
from sqlalchemy import create_engine, select

from benchmarks.environment import load_average
from recon_pipeline.db.schema import discrepancies
from recon_pipeline.simulation.demo.fleet import FLEET_BOOKINGS_PER_NIGHT, fleet_properties
from recon_pipeline_tests.support.celery_workers import (
    BROKER_URL,
    CELERY_DAGSTER_YAML,
    NO_THRESHOLD,
    broker_reachable,
    celery_night,
)
from recon_pipeline_tests.support.dagster_processes import pg_dagster_world_in

NIGHT = date(2026, 11, 29)


def found_findings(recon_url: str) -> Counter[tuple[str, str, str]]:
    engine = create_engine(recon_url)
    try:
        with engine.connect() as connection:
            return Counter(
                (row.property_id, row.night, row.category)
                for row in connection.execute(
                    select(discrepancies.c.property_id, discrepancies.c.night, discrepancies.c.category)
                )
            )
    finally:
        engine.dispose()


def failure_reasons(instance: dg.DagsterInstance, run_id: str) -> str:
    """What failed a run: its failure event's message and its steps' first error lines."""
    reasons = []
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        if event is None:
            continue
        if event.event_type == dg.DagsterEventType.RUN_FAILURE:
            reasons.append(event.message or "run failure")
        elif event.event_type == dg.DagsterEventType.STEP_FAILURE and event.step_failure_data is not None:
            error = event.step_failure_data.error
            reasons.append(f"{event.step_key}: {error.message.splitlines()[0] if error else 'failed'}")
    return "; ".join(reasons) or "no failure event"


def measure(
    properties: int, workers: int, batch_size: int, concurrency: int, timeout_s: float
) -> dict[str, Any]:
    """One night on ``workers`` workers in a fresh deployment: its figures, and why any run failed."""
    with (
        tempfile.TemporaryDirectory(prefix="bench_celery_") as folder,
        pg_dagster_world_in(
            Path(folder), [NIGHT], FLEET_BOOKINGS_PER_NIGHT, fleet_properties(properties), CELERY_DAGSTER_YAML
        ) as world,
    ):
        load_before = load_average()
        night = celery_night(
            world, Path(folder), NIGHT, workers, batch_size, concurrency, NO_THRESHOLD, timeout_s
        )
        failed = {
            r.dagster_run.run_id: failure_reasons(world.instance, r.dagster_run.run_id)
            for r in night.records
            if r.dagster_run.status != dg.DagsterRunStatus.SUCCESS
        }
        return {
            "failed_runs": failed,
            "found_as_planted": found_findings(world.recon_url) == world.world.world.expected,
            "workers": workers,
            "concurrency": concurrency,
            "properties": properties,
            "runs": len(night.records),
            "steps": sum(len(steps) for steps in night.ran_by.values()),
            "steps_per_worker": dict(sorted(night.steps_per_worker().items())),
            "wall_s": round(night.wall_s, 1),
            "properties_per_s": round(properties / night.wall_s, 2),
            "load_before": load_before,
            "load_after": load_average(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=1, help="task slots per Celery worker")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds a night may take")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    unreachable = broker_reachable()
    if unreachable is not None:
        sys.exit(f"RabbitMQ unreachable at {BROKER_URL}: {unreachable}")
    os.environ.setdefault("RECON_STEP_RETRY_DELAY_S", "0.05")  # as in the tests
    results = []
    for workers in args.workers:
        result = measure(args.properties, workers, args.batch_size, args.concurrency, args.timeout)
        print(json.dumps(result), file=sys.stderr, flush=True)  # each figure survives a later failure
        results.append(result)
    failed = [r for r in results if r["failed_runs"] or not r["found_as_planted"]]
    if args.json:
        print(json.dumps(results))
        sys.exit(1 if failed else 0)
    print("| workers | slots each | properties | runs | steps | wall s | properties/s | steps per worker |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        per_worker = ", ".join(f"{name.split('@')[0]}: {n}" for name, n in r["steps_per_worker"].items())
        print(
            f"| {r['workers']} | {r['concurrency']} | {r['properties']} | {r['runs']} | {r['steps']} "
            f"| {r['wall_s']} | {r['properties_per_s']} | {per_worker} |"
        )
    print(f"load average before/after each: {[(r['load_before'], r['load_after']) for r in results]}")
    for r in failed:  # a figure of a night that did not reconcile is not a result
        sys.exit(
            f"{r['workers']} worker(s): failed runs {r['failed_runs']}, found as planted: "
            f"{r['found_as_planted']}"
        )


if __name__ == "__main__":
    main()
