"""Benchmark: how long the Dagster UI takes to show an asset's partition status after a year of nights
for a fleet, in both partitionings (issue 13).

    python -m benchmarks.ui_partitions --properties 2000 --nights 365 [--batch-size 100] [--repeat 5] \
        [--old-design] [--old-cap-s 300] [--browser] [--json]

A PostgreSQL-backed instance (deploy/dagster.yaml) is seeded with the history cheaply: materializations
recorded without runs (the event log rows Dagster writes, streamed with COPY), then the real code server
and dagster-webserver serve ``benchmarks/ui_partitions_defs.py`` over it.

- new design (night partitions): ``--nights`` partitions per asset, each night materialized once per
  batch run (``plan_batches`` of a fleet of ``--properties`` at ``--batch-size``) for ``adjustments`` and
  ``findings``;
- old design (``--old-design``): property × night, ``--properties`` × ``--nights`` keys, each
  materialized once. Each query is capped at ``--old-cap-s``: a timeout is a result.

Timed: (a) the two GraphQL queries the asset page issues for partition status (``PartitionHealthQuery``
verbatim from the UI bundle, and the live data's ``partitionStats``): the first one after seeding (the
asset status cache is cold and computed then) and the median of ``--repeat`` more; (b) with
``--browser``, headless Chromium opening the asset's Partitions tab until the page's partition health
query is answered and until the page is idle, median of ``--repeat`` page loads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from datetime import date
from typing import Any, cast

import dagster as dg
import psycopg
from dagster._core.events import DagsterEvent, DagsterEventType, StepMaterializationData
from dagster._core.events.log import EventLogEntry
from dagster._core.instance.utils import RUNLESS_JOB_NAME, RUNLESS_RUN_ID
from playwright.sync_api import Response
from psycopg import sql

from benchmarks import ui_partitions_defs as bench_defs
from benchmarks.environment import add_postgres_url
from benchmarks.fleet_setup import dagster_on_postgres
from benchmarks.worlds import LAST_NIGHT, nights_ending
from recon_pipeline.batches.plan import DEFAULT_BATCH_SIZE, plan_batches
from recon_pipeline.db.engine import make_engine
from recon_pipeline.simulation.demo.fleet import fleet_properties
from recon_pipeline_tests.support.browser import CHROMIUM, chromium_page
from recon_pipeline_tests.support.dagster_processes import (
    REPO_ROOT,
    GraphQL,
    GraphQLError,
)

PARTITION_PLACEHOLDER = "@@partition@@"
PAGE_TIMEOUT_MS = 300_000

# The asset page's partition health query, as the UI bundle of dagster-webserver 1.13.27 sends it.
PARTITION_HEALTH_QUERY = """
query PartitionHealthQuery($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      id
      partitionKeysByDimension { name type partitionKeys }
      assetPartitionStatuses {
        ... on TimePartitionStatuses { ranges { status startTime endTime startKey endKey } }
        ... on DefaultPartitionStatuses { materializedPartitions materializingPartitions failedPartitions }
        ... on MultiPartitionStatuses {
          primaryDimensionName
          ranges {
            primaryDimStartKey primaryDimEndKey primaryDimStartTime primaryDimEndTime
            secondaryDim {
              ... on TimePartitionStatuses { ranges { status startTime endTime startKey endKey } }
              ... on DefaultPartitionStatuses {
                materializedPartitions materializingPartitions failedPartitions
              }
            }
          }
        }
      }
    }
  }
}
"""
PARTITION_STATS_QUERY = """
query AssetPartitionStats($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode { id partitionStats { numMaterialized numMaterializing numFailed numPartitions } }
  }
}
"""


def materialization(asset_key: dg.AssetKey, partition: str) -> EventLogEntry:
    """The event ``instance.report_runless_asset_event(AssetMaterialization(...))`` stores."""
    event = DagsterEvent(
        event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value,
        event_specific_data=StepMaterializationData(dg.AssetMaterialization(asset_key, partition=partition)),
        job_name=RUNLESS_JOB_NAME,
    )
    return EventLogEntry(
        user_message="",
        level=20,
        job_name=RUNLESS_JOB_NAME,
        run_id=RUNLESS_RUN_ID,
        error_info=None,
        timestamp=time.time(),
        step_key=None,
        dagster_event=event,
    )


def seed_materializations(
    instance: dg.DagsterInstance, dagster_url: str, asset_key: dg.AssetKey, partitions: Sequence[str]
) -> dict[str, Any]:
    """Record one materialization of ``asset_key`` per entry of ``partitions`` (repeats allowed).

    The first and last go through the event log storage (it indexes the asset, and the last is its
    latest event); those between are the rows Dagster's own event writer makes (``_event_to_row`` of the
    same event, the partition substituted), streamed with COPY: Dagster's batch write serializes and
    compiles ~400 events a second, and 730,000 of them would take half an hour."""
    started = time.perf_counter()
    storage = instance.event_log_storage
    first, *middle, last = partitions
    storage.store_event(materialization(asset_key, first))
    template = storage._event_to_row(materialization(asset_key, PARTITION_PLACEHOLDER))  # type: ignore[attr-defined]
    columns = list(template)
    engine = make_engine(dagster_url)
    try:
        with engine.begin() as connection:
            driver = cast(psycopg.Connection[Any], connection.connection.dbapi_connection)
            copy = sql.SQL("COPY event_logs ({}) FROM STDIN").format(
                sql.SQL(", ").join(map(sql.Identifier, columns))
            )
            with driver.cursor() as cursor, cursor.copy(copy) as stream:
                for partition in middle:
                    row = {**template, "event": template["event"].replace(PARTITION_PLACEHOLDER, partition)}
                    stream.write_row([partition if name == "partition" else row[name] for name in columns])
    finally:
        engine.dispose()
    storage.store_event(materialization(asset_key, last))
    seconds = time.perf_counter() - started
    return {"events": len(partitions), "seconds": round(seconds, 1)}


def new_design_partitions(nights: Sequence[date], batches: int) -> list[str]:
    """Each night once per batch run: every batch run of a night materializes the night's partition."""
    return [night.isoformat() for night in nights for _ in range(batches)]


def old_design_partitions(nights: Sequence[date], property_ids: Sequence[str]) -> list[str]:
    """Each property-night once (the old runs' one partition each)."""
    return [
        str(dg.MultiPartitionKey({"night": night.isoformat(), bench_defs.PROPERTY_DIMENSION: property_id}))
        for night in nights
        for property_id in property_ids
    ]


def timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def query_asset(client: GraphQL, asset_key: dg.AssetKey) -> dict[str, Any]:
    """Both partition-status queries of the asset page; the stats, checked to be an asset node's."""
    variables = {"assetKey": {"path": list(asset_key.path)}}
    client.execute(PARTITION_HEALTH_QUERY, variables)
    node = client.execute(PARTITION_STATS_QUERY, variables)["assetNodeOrError"]
    if "partitionStats" not in node:
        raise GraphQLError(f"{asset_key.to_user_string()}: not an asset node: {node}")
    stats: dict[str, Any] = node["partitionStats"]
    return stats


def time_queries(client: GraphQL, asset_key: dg.AssetKey, repeat: int) -> dict[str, Any]:
    """The first (cold status cache) and then ``repeat`` more, each timed; None on a timeout."""
    stats: dict[str, Any] = {}

    def once() -> float | None:
        try:
            seconds = timed(lambda: stats.update(query_asset(client, asset_key)))
        except Exception as error:  # a timeout, or the webserver's own error: the figure is that it failed
            print(f"{asset_key.to_user_string()}: query failed: {str(error)[:300]}")
            return None
        return round(seconds, 3)

    first = once()
    warm = [once() for _ in range(repeat)] if first is not None else []
    finished = [s for s in warm if s is not None]
    return {
        "first_s": first,
        "warm_s": warm,
        "warm_median_s": round(statistics.median(finished), 3) if finished else None,
        "stats": stats,
        "timeout_s": client.timeout_s,
    }


def time_page(base_url: str, asset_key: dg.AssetKey, repeat: int) -> dict[str, Any]:
    """Chromium opening the asset's Partitions tab, ``repeat`` times: until the answer to the page's
    partition health query has arrived, and until the page is idle (no request for 0.5 s)."""
    url = f"{base_url}/assets/{'/'.join(asset_key.path)}?view=partitions"
    name = f"ui-partitions-{'-'.join(asset_key.path)}"

    def health(response: Response) -> bool:
        return "PartitionHealthQuery" in (response.request.post_data or "")

    answered, idle = [], []
    with chromium_page(name) as browser:
        page = browser.page
        for _ in range(repeat):
            started = time.perf_counter()
            with page.expect_response(health, timeout=PAGE_TIMEOUT_MS):
                page.goto(url)
            answered.append(round(time.perf_counter() - started, 3))
            page.wait_for_load_state("networkidle", timeout=PAGE_TIMEOUT_MS)
            idle.append(round(time.perf_counter() - started, 3))
        browser.screenshot(name)
    return {
        "health_answered_s": answered,
        "health_answered_median_s": statistics.median(answered),
        "idle_median_s": statistics.median(idle),
    }


def run(
    admin_url: str,
    properties: int,
    nights: int,
    batch_size: int,
    repeat: int,
    old_design: bool,
    old_cap_s: float,
    browser: bool,
) -> dict[str, Any]:
    fleet = fleet_properties(properties)
    dates = nights_ending(LAST_NIGHT, nights)
    batches = len(plan_batches(fleet, LAST_NIGHT, batch_size, one_window_each=True))
    figures: dict[str, Any] = {"properties": properties, "nights": nights, "batch_size": batch_size}
    with ExitStack() as stack:
        dagster = stack.enter_context(dagster_on_postgres(admin_url, "recon_ui_bench"))
        instance, dagster_url = dagster.instance, dagster.dagster_url
        new_partitions = new_design_partitions(dates, batches)
        figures["new"] = {
            "batches_per_night": batches,
            "seed": {
                key.to_user_string(): seed_materializations(instance, dagster_url, key, new_partitions)
                for key in bench_defs.NEW_ASSETS
            },
        }
        if old_design:
            property_ids = [p.property_id for p in fleet]
            instance.add_dynamic_partitions(bench_defs.PROPERTY_DIMENSION, property_ids)
            old_partitions = old_design_partitions(dates, property_ids)
            figures["old"] = {
                "seed": seed_materializations(instance, dagster_url, bench_defs.OLD_ASSET, old_partitions)
            }
        env = {
            "PYTHONPATH": str(REPO_ROOT),  # the code server imports benchmarks.ui_partitions_defs
            "RECON_UI_BENCH_LAST_NIGHT": LAST_NIGHT.isoformat(),
            "RECON_UI_BENCH_NIGHTS": str(nights),
        }
        deployment, client = dagster.start(stack, env, code_module="benchmarks.ui_partitions_defs")
        client.dismiss_community_dialog()
        client.timeout_s = old_cap_s
        findings = bench_defs.NEW_ASSETS[1]
        figures["new"]["queries"] = time_queries(client, findings, repeat)
        if browser:
            figures["new"]["page"] = time_page(deployment.base_url, findings, repeat)
        if old_design:
            figures["old"]["queries"] = time_queries(client, bench_defs.OLD_ASSET, repeat)
            if browser and figures["old"]["queries"]["warm_median_s"] is not None:
                figures["old"]["page"] = time_page(deployment.base_url, bench_defs.OLD_ASSET, repeat)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=2_000)
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs after the first")
    parser.add_argument("--old-design", action="store_true", help="also property × night partitions")
    parser.add_argument("--old-cap-s", type=float, default=300, help="bound on each GraphQL query")
    parser.add_argument("--browser", action="store_true", help="also time the asset page in Chromium")
    add_postgres_url(parser, "the scratch Dagster database")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if min(args.properties, args.nights, args.batch_size, args.repeat) < 1:
        parser.error("every size must be positive")
    if args.browser and not CHROMIUM.exists():
        parser.error(f"--browser needs {CHROMIUM}")
    figures = run(
        args.postgres_url,
        args.properties,
        args.nights,
        args.batch_size,
        args.repeat,
        args.old_design,
        args.old_cap_s,
        args.browser,
    )
    print(json.dumps(figures, sort_keys=True) if args.json else json.dumps(figures, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
