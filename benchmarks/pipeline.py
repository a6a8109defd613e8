"""Benchmark (d): property-nights end to end through Dagster: one big night, and a backfill of nights.

    python -m benchmarks.pipeline --records 8400 --repeat 3 --properties 10 --nights 30 \
        --backfill-bookings 200 [--postgres-url URL] [--json]

Every run is a real run of the code location's ``reconcile_night`` job for a night partition and a batch
of properties in its run config (every asset and check it selects: pull from the simulator over HTTP,
ledger read, diff, by-id lookups, adjustments, discrepancies and the batch summary) with
``execute_in_process`` on a temporary Dagster instance (``instance_for_test``: SQLite run and event
storage, as the local ``dagster.yaml``), against a scratch PostgreSQL database seeded with a demo world;
seeding is not timed.

- One night: a property-night whose pull yields ``--records`` provider records (the demo's mix, every
  discrepancy category planted), a run of a batch of that one property on a fresh database ``--repeat``
  times; each time it is run once more, as a re-run must be (no new adjustments).
- Backfill: ``--nights`` night partitions of ``--properties`` properties with ``--backfill-bookings``
  bookings each, one run per night reconciling every property (no run config: the batch of all), run one
  after another in this process: the runs a multi-run backfill of the nights launches, without the
  daemon's queueing and run-launch overhead (a real backfill adds that per run). Run once.

Each property-night's findings are checked against what the world planted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any
from unittest import mock

import dagster as dg
from sqlalchemy import Engine

from benchmarks.environment import add_postgres_url
from benchmarks.worlds import LAST_NIGHT, bench_properties, bookings_for_records, build_nights, nights_ending
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.definitions import build_definitions
from recon_pipeline.defs.batches import batch_run_config
from recon_pipeline.defs.jobs import reconcile_night_job
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.run import found_by_category
from recon_pipeline.simulation.demo.seed import seed_world
from recon_pipeline.simulation.demo.world import World
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline_tests.support.pipeline_fixtures import asset_metadata
from recon_pipeline_tests.support.scratch import scratch_database

# Dagster's console logger prints every event at DEBUG; a benchmark of hundreds of runs keeps warnings.
QUIET_RUN = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@dataclass(frozen=True)
class Harness:
    """A seeded database, the simulator serving the world, and the job bound to both."""

    engine: Engine
    world: World
    job: dg.JobDefinition
    instance: dg.DagsterInstance


@contextmanager
def dagster_world(admin_url: str, world: World) -> Iterator[Harness]:
    """The world seeded into a scratch database and served by the simulator, the project's own code
    location configured for both through the environment (as a deployment configures it), and a Dagster
    instance; all torn down afterwards."""
    with (
        scratch_database(admin_url, "recon_bench") as url,
        ServerThread(build_app(world.store)) as simulator,
        tempfile.TemporaryDirectory(
            prefix="recon_bench_home_"
        ) as home,  # RECON_HOME: nothing of the checkout
        mock.patch.dict(
            os.environ,
            RECON_HOME=home,
            RECON_DATABASE_URL=url,
            RECON_PROVIDER="simulator",
            RECON_PROVIDER_BASE_URL=simulator.base_url,
        ),
        dg.instance_for_test() as instance,
    ):
        engine = make_engine(url)
        try:
            migrations.upgrade(engine)
            seed_world(engine, world)
            job = build_definitions().resolve_job_def(reconcile_night_job.name)
            yield Harness(engine, world, job, instance)
        finally:
            engine.dispose()


def run_batch(harness: Harness, night: str, property_ids: Sequence[str]) -> dict[str, Any]:
    """Run the night for a batch of ``property_ids`` (none: every property of the world); its wall time,
    what it pulled and wrote, and how many of its property-nights' findings in the database are what
    the world planted. Raises if the run failed."""
    started = time.perf_counter()
    result = harness.job.execute_in_process(
        partition_key=night,
        instance=harness.instance,
        run_config={**QUIET_RUN, **batch_run_config(property_ids)},
        raise_on_error=False,
    )
    seconds = time.perf_counter() - started
    if not result.success:
        raise RuntimeError(
            f"run of night {night} for {list(property_ids) or 'all'} failed (run {result.run_id})"
        )
    members = property_ids or [p["property_id"] for p in harness.world.properties]
    as_planted = sum(
        found_by_category(harness.engine, property_id, night) == _planted(harness.world, property_id, night)
        for property_id in members
    )
    return {
        "seconds": round(seconds, 3),
        "property_nights": len(members),
        "provider_records": asset_metadata(result, "discrepancy_report")["pulled"],
        "adjustments_new": asset_metadata(result, "adjustments")["new"],
        "findings_as_planted": as_planted,
    }


def _planted(world: World, property_id: str, night: str) -> dict[str, int]:
    return {
        category: n
        for (prop, at, category), n in world.expected.items()
        if (prop, at) == (property_id, night)
    }


def benchmark_night(admin_url: str, records: int, repeat: int) -> dict[str, Any]:
    """One property-night of about ``records`` provider records, ``repeat`` times on fresh databases."""
    prop = bench_properties(1)[0]
    world = build_nights([prop], [LAST_NIGHT], bookings_for_records(prop, LAST_NIGHT, records))
    night, batch = LAST_NIGHT.isoformat(), [prop.property_id]
    runs = []
    for _ in range(repeat):
        with dagster_world(admin_url, world) as harness:
            first = run_batch(harness, night, batch)
            rerun = run_batch(harness, night, batch)
        runs.append({"first": first, "rerun": rerun})
    first_median = statistics.median(run["first"]["seconds"] for run in runs)
    return {
        "records_target": records,
        "provider_records": runs[0]["first"]["provider_records"],
        "repeat": repeat,
        "runs": runs,
        "median_s": round(first_median, 3),
        "rerun_median_s": round(statistics.median(run["rerun"]["seconds"] for run in runs), 3),
        "records_per_second": round(runs[0]["first"]["provider_records"] / first_median),
        "rerun_adjustments_new": sorted({run["rerun"]["adjustments_new"] for run in runs}),
        "findings_as_planted": all(
            run[which]["findings_as_planted"] == 1 for run in runs for which in ("first", "rerun")
        ),
    }


def benchmark_backfill(admin_url: str, properties: int, nights: int, bookings: int) -> dict[str, Any]:
    """``nights`` night partitions of ``properties`` properties: one run per night, every property in it,
    one run after another."""
    props = bench_properties(properties)
    dates: list[date] = nights_ending(LAST_NIGHT, nights)
    world = build_nights(props, dates, bookings)
    with dagster_world(admin_url, world) as harness:
        started = time.perf_counter()
        runs = [run_batch(harness, night.isoformat(), []) for night in dates]
        wall = time.perf_counter() - started
    seconds = [run["seconds"] for run in runs]
    records = sum(run["provider_records"] for run in runs)
    return {
        "properties": properties,
        "nights": nights,
        "partitions": len(runs),
        "property_nights": sum(run["property_nights"] for run in runs),
        "bookings_per_night": bookings,
        "provider_records": records,
        "wall_s": round(wall, 2),
        "partitions_per_second": round(len(runs) / wall, 3),
        "records_per_second": round(records / wall),
        "partition_median_s": round(statistics.median(seconds), 3),
        "partition_max_s": round(max(seconds), 3),
        "findings_as_planted": sum(run["findings_as_planted"] for run in runs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=8_400, help="provider records of the one night")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the one night; medians reported")
    parser.add_argument("--properties", type=int, default=10, help="properties of the backfill")
    parser.add_argument("--nights", type=int, default=30, help="nights of the backfill")
    parser.add_argument("--backfill-bookings", type=int, default=200, help="bookings per backfill night")
    add_postgres_url(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if min(args.records, args.repeat, args.properties, args.nights, args.backfill_bookings) < 1:
        parser.error("every size must be positive")
    figures = {
        "night": benchmark_night(args.postgres_url, args.records, args.repeat),
        "backfill": benchmark_backfill(
            args.postgres_url, args.properties, args.nights, args.backfill_bookings
        ),
    }
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        night, backfill = figures["night"], figures["backfill"]
        print(
            f"one night   {night['provider_records']:,} records: {night['median_s']} s median "
            f"(re-run {night['rerun_median_s']} s), findings as planted: {night['findings_as_planted']}"
        )
        print(
            f"backfill    {backfill['partitions']} night runs of {backfill['properties']} properties in "
            f"{backfill['wall_s']} s = {backfill['partitions_per_second']} runs/s, "
            f"{backfill['findings_as_planted']} of {backfill['property_nights']} property-nights with "
            "findings as planted"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
