"""Benchmark: what Dagster itself costs per night when nights are backfilled from the UI.

    python -m benchmarks.dagster_cost [--nights 3] [--bookings 10] [--batch-size 500] [--json] \
        [--postgres-url URL]

Setup (not timed): the demo's three keyed properties (three timezones, so three batches a night) over
``--nights`` nights, seeded into a scratch PostgreSQL database and served by the simulator; a scratch
PostgreSQL-backed Dagster instance (deploy/dagster.yaml) with its code server, webserver and daemon,
every schedule and sensor stopped.

Timed: the asset graph's backfill of the nights (``launchPartitionBackfill`` as the UI sends it) until
every batch run the night runs queued has finished. Reported: runs per night (the night's run and its
batch runs), each run's start-up (launched by the daemon to its first step, and queued to launched), its
whole duration, and the Dagster events its runs wrote per property-night.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.events import DagsterEventType

from recon_pipeline.batches.plan import DEFAULT_BATCH_SIZE
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.support.dagster_processes import (
    pg_dagster_world_in,
    queued_batch_runs,
    wait_for_runs,
)

FIRST_NIGHT = date(2026, 11, 20)
ASSET_NAMES = [key.path[-1] for asset in reconciliation_assets for key in asset.keys]
TIMEOUT_S = 900


def _event_times(instance: dg.DagsterInstance, run_id: str) -> tuple[int, dict[DagsterEventType, float]]:
    """The run's events written, and the first time of each event type."""
    records = instance.get_records_for_run(run_id, limit=100_000).records
    first: dict[DagsterEventType, float] = {}
    for record in records:
        event = record.event_log_entry.dagster_event
        if event is not None and event.event_type not in first:
            first[event.event_type] = record.event_log_entry.timestamp
    return len(records), first


def _run_figures(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    events, first = _event_times(instance, run_id)
    queued = first.get(DagsterEventType.RUN_ENQUEUED, first[DagsterEventType.RUN_STARTING])
    starting = first[DagsterEventType.RUN_STARTING]
    step = first.get(DagsterEventType.STEP_START, starting)
    done = max(first.get(DagsterEventType.RUN_SUCCESS, 0.0), first.get(DagsterEventType.RUN_FAILURE, 0.0))
    return {
        "events": events,
        "queued_to_launched_s": starting - queued,
        "launched_to_first_step_s": step - starting,
        "launched_to_end_s": done - starting,
    }


def measure(nights: int, bookings: int, batch_size: int) -> dict[str, Any]:
    night_dates = tuple(FIRST_NIGHT + timedelta(days=i) for i in range(nights))
    with tempfile.TemporaryDirectory(prefix="dagster_cost_") as folder, pg_dagster_world_in(
        Path(folder), night_dates, bookings, DEMO_PROPERTIES, {"run_queue": {"dequeue_interval_seconds": 1}}
    ) as w:
        w.env["RECON_BATCH_SIZE"] = str(batch_size)
        with w.deployment() as deployment, deployment.logs_on_failure():
            deployment.start_code_server(90)
            client = deployment.start_webserver(90)
            client.wait_for_location(90, deployment)
            client.stop_all_instigators()
            deployment.start_daemon()
            started = time.monotonic()
            backfill_id = client.launch_asset_backfill(ASSET_NAMES, [n.isoformat() for n in night_dates])
            client.wait_for_backfill(backfill_id, TIMEOUT_S, deployment)
            night_runs, batch_runs = queued_batch_runs(w.instance, backfill_id)
            wait_for_runs(w.instance, batch_runs, TIMEOUT_S, deployment)
            wall_s = time.monotonic() - started
            night_figures = [_run_figures(w.instance, run_id) for run_id in night_runs]
            batch_figures = [_run_figures(w.instance, run_id) for run_id in batch_runs]
    property_nights = nights * len(DEMO_PROPERTIES)

    def median(figures: list[dict[str, float]], key: str) -> float:
        return round(statistics.median(f[key] for f in figures), 2)

    return {
        "nights": nights,
        "properties": len(DEMO_PROPERTIES),
        "wall_s": round(wall_s, 1),
        "runs_per_night": (len(night_runs) + len(batch_runs)) / nights,
        "batch_runs_per_night": len(batch_runs) / nights,
        "night_run_launched_to_end_s": median(night_figures, "launched_to_end_s"),
        "batch_run_queued_to_launched_s": median(batch_figures, "queued_to_launched_s"),
        "batch_run_launched_to_first_step_s": median(batch_figures, "launched_to_first_step_s"),
        "batch_run_launched_to_end_s": median(batch_figures, "launched_to_end_s"),
        "events_per_night_run": median(night_figures, "events"),
        "events_per_batch_run": median(batch_figures, "events"),
        "events_per_property_night": round(
            sum(f["events"] for f in night_figures + batch_figures) / property_nights, 1
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=3)
    parser.add_argument("--bookings", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--postgres-url", help="the scratch databases' server (else RECON_TEST_POSTGRES_URL's, or local)"
    )
    args = parser.parse_args()
    if args.postgres_url:
        os.environ["RECON_TEST_POSTGRES_URL"] = args.postgres_url  # what the scratch databases are made on
    figures = measure(args.nights, args.bookings, args.batch_size)
    print(json.dumps(figures) if args.json else "\n".join(f"{k}: {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
