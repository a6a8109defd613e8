"""Benchmark: one night for a fleet of properties end to end through a PostgreSQL-backed Dagster
deployment with its daemon (issue 13: 2,000 properties in at most 5 minutes on this 2-core machine).

    python -m benchmarks.scale --properties 2000 [--batch-size 100] [--max-concurrent-runs 4] \
        [--rps 100] [--bookings 5] [--connected-accounts] [--clean] [--window-by-window] \
        [--timeout-s 900] [--json]

Setup (timed apart, not in the figure): the fleet's demo world (``recon_pipeline/simulation/demo/fleet.py``:
eight timezones, a quarter of the properties on the platform account, ~40 provider records per property-night,
every discrepancy category planted, or with ``--clean`` none; with ``--connected-accounts`` each property on
its own connected account, none on the platform's) seeded into a fresh PostgreSQL database; the simulator
(always strict: it refuses any request Stripe does not document, ``providers/stripe/documented.py``)
serving its provider half on loopback, with a rate limit of ``--rps`` that the pipeline is told to keep
(``RECON_PROVIDER_MAX_RPS``); a fresh Dagster
database behind deploy/dagster.yaml with at most ``--max-concurrent-runs`` runs (and as many ``provider_api``
pool slots); the code server, webserver and daemon as in production, schedules and sensors stopped.

Timed: the night's batches (``plan_batches`` at ``--batch-size``, the night asked for whole as ``recon
reconcile-night`` and a backfill from the UI plan it, its windows packed together; with
``--window-by-window`` one window per batch, the batches the nightly schedule requests over the day)
queued through the webserver's GraphQL as the launchpad queues runs, then the daemon launching them and
the runs reconciling, until every run has finished. Reported: wall time, runs, properties per second, run
durations, the provider requests the simulator served (per property-night, by endpoint, refused, and in the
busiest second), the findings in the database against what the world planted, property by property, and
the batches the nightly schedule's ticks request for the night (how many, and whether they are these).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from contextlib import ExitStack
from datetime import date, timedelta
from typing import Any

import dagster as dg
import httpx
from sqlalchemy import Engine, func, select

from benchmarks.environment import add_postgres_url
from benchmarks.fleet_setup import dagster_on_postgres, fleet_night, seed
from benchmarks.worlds import LAST_NIGHT
from recon_pipeline.batches.nightly import nightly_batches
from recon_pipeline.batches.plan import DEFAULT_BATCH_SIZE, plan_batches
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies, night_reconciliations
from recon_pipeline.defs.batches import BATCH_TAG, batch_tags
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.nights import night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.fleet import FLEET_BOOKINGS_PER_NIGHT, PLATFORM_SHARE
from recon_pipeline.simulation.demo.world import World
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline_tests.support.dagster_processes import recon_env, wait_for_runs
from recon_pipeline_tests.support.rate_processes import busiest_second
from recon_pipeline_tests.support.scratch import scratch_database

DEFAULT_RPS = 100  # Stripe's documented live-mode limit
DEFAULT_MAX_CONCURRENT_RUNS = 4


def dagster_overrides(max_concurrent_runs: int) -> dict[str, Any]:
    """deploy/dagster.yaml's limits set to ``max_concurrent_runs`` (runs, provider-bound runs, pool)."""
    return {
        "concurrency": {
            "runs": {
                "max_concurrent_runs": max_concurrent_runs,
                "tag_concurrency_limits": [{"key": PROVIDER_BOUND_TAG, "limit": max_concurrent_runs}],
            },
            "pools": {"default_limit": max_concurrent_runs},
        }
    }


def scheduled_batch_keys(fleet: tuple[PropertyRow, ...], night: date, batch_size: int) -> set[str]:
    """The keys of the batches the nightly schedule requests for ``night`` as the night just closed, at a
    tick a minute after each of the fleet's night windows ends: the schedule's share of the same work."""
    ends = {night_window(night, p.timezone, p.night_cutoff).end for p in fleet}
    return {
        nightly.batch.key
        for end in ends
        for nightly in nightly_batches(fleet, end + timedelta(minutes=1), 0, night, batch_size)
        if nightly.batch.night == night
    }


def findings_check(engine: Engine, world: World, night: date) -> dict[str, Any]:
    """Findings in ``discrepancies`` for the night against what the world planted, per property and
    category: how many were found and planted, and the properties whose findings differ."""
    query = (
        select(discrepancies.c.property_id, discrepancies.c.category, func.count())
        .where(discrepancies.c.night == night.isoformat())
        .group_by(discrepancies.c.property_id, discrepancies.c.category)
    )
    with engine.connect() as connection:
        found = Counter({(p, cat): int(n) for p, cat, n in connection.execute(query)})
        by_status = (
            select(night_reconciliations.c.status, func.count())
            .where(night_reconciliations.c.night == night.isoformat())
            .group_by(night_reconciliations.c.status)
        )
        outcomes = {str(status): int(n) for status, n in connection.execute(by_status)}
        planted = Counter({(p, cat): n for (p, _night, cat), n in world.expected.items()})
        off = sorted((found - planted) + (planted - found))
        differing = sorted({p for p, _cat in off})
        stated = select(discrepancies.c.property_id, discrepancies.c.category, discrepancies.c.detail).where(
            discrepancies.c.night == night.isoformat(),
            discrepancies.c.property_id.in_(differing[:2]),
            discrepancies.c.category.in_({category for _p, category in off}),
        )
        sentences = [f"{p} {c}: {detail}" for p, c, detail in connection.execute(stated)][:20]
    return {
        "findings_found": sum(found.values()),
        "findings_planted": sum(planted.values()),
        "properties_differing": len(differing),
        "first_differing": differing[:5],
        "first_differences": [f"{p} {c}: {found[p, c]} found, {planted[p, c]} planted" for p, c in off[:10]],
        "first_differing_findings": sentences,  # what the first two differing properties' findings say
        "property_nights": outcomes,
    }


def by_endpoint(requests_by_path: dict[str, int]) -> dict[str, int]:
    """Requests per endpoint: ``/v1/charges/{id}`` counted as one path, not one per id."""
    counts: Counter[str] = Counter()
    for path, n in requests_by_path.items():
        parts = path.split("/")
        counts["/".join(parts[:3]) + ("/{id}" if len(parts) > 3 else "")] += n
    return dict(counts)


def per_interval(arrivals: list[float], seconds: float) -> list[int]:
    """Arrivals per ``seconds`` from the first: where the provider's rate was used and where it sat idle."""
    if not arrivals:
        return []
    first = min(arrivals)
    counts = Counter(int((at - first) // seconds) for at in arrivals)
    return [counts[i] for i in range(max(counts) + 1)]


def failures(instance: dg.DagsterInstance, records: list[dg.RunRecord]) -> list[str]:
    """Each failed run's batch and the first line of its first error (a step's, else the run's)."""
    found = []
    for record in records:
        if record.dagster_run.status != dg.DagsterRunStatus.FAILURE:
            continue
        failed = {dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE}
        events = instance.all_logs(record.dagster_run.run_id, of_type=failed)
        errors = [
            error
            for event in events
            if event.dagster_event is not None
            and (error := getattr(event.dagster_event.event_specific_data, "error", None)) is not None
        ]
        message = errors[0].message if errors else (events[0].message if events else "(no failure event)")
        found.append(f"{record.dagster_run.tags.get(BATCH_TAG)}: {message.strip().splitlines()[0][:300]}")
    return found


def run_durations(records: list[dg.RunRecord]) -> dict[str, Any]:
    """The runs' statuses, each run's time in its worker (start to end) and before it (queued to started)."""
    seconds = [r.end_time - r.start_time for r in records if r.start_time and r.end_time]
    # From queued to its worker running it: the daemon's dequeue, the worker's start-up and code load.
    waits = [r.start_time - r.create_timestamp.timestamp() for r in records if r.start_time]
    statuses = Counter(r.dagster_run.status.value for r in records)
    return {
        "statuses": dict(statuses),
        "queued_to_started_median_s": round(statistics.median(waits), 1) if waits else None,
        "run_median_s": round(statistics.median(seconds), 2) if seconds else None,
        "run_max_s": round(max(seconds), 2) if seconds else None,
        "run_sum_s": round(sum(seconds), 1),
    }


def run(
    admin_url: str,
    properties: int,
    night: date,
    batch_size: int,
    max_concurrent_runs: int,
    rps: int,
    bookings: int,
    timeout_s: float,
    connected_accounts: bool = False,
    plant: bool = True,
    window_by_window: bool = False,
) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "window_by_window": window_by_window,
        "properties": properties,
        "connected_accounts": connected_accounts,
        "planted": plant,
        "night": night.isoformat(),
        "batch_size": batch_size,
        "max_concurrent_runs": max_concurrent_runs,
        "rps": rps,
        "cores": os.cpu_count(),
        "load_before": os.getloadavg()[0],
    }
    prepared = fleet_night(properties, night, bookings, 0 if connected_accounts else PLATFORM_SHARE, plant)
    fleet, world = prepared.fleet, prepared.world
    figures["world_build_s"] = round(prepared.build_s, 1)
    figures["provider_objects"] = len(world.store.charges) + len(world.store.refunds)
    with ExitStack() as stack:
        recon_url = stack.enter_context(scratch_database(admin_url, "recon_scale_data"))
        dagster = stack.enter_context(
            dagster_on_postgres(admin_url, "recon_scale_dagster", dagster_overrides(max_concurrent_runs))
        )
        app = build_app(world.store)
        app.state.faults.configure({"rate_limit_rps": rps})  # the provider enforces its limit
        simulator = stack.enter_context(ServerThread(app))
        figures["seed_s"] = round(seed(recon_url, world, fleet), 1)
        env = {
            "RECON_HOME": str(dagster.tmp / "recon_home"),
            **recon_env(recon_url, simulator.base_url, night - timedelta(days=7)),
            "RECON_PROVIDER_MAX_RPS": str(rps),
        }
        instance = dagster.instance
        startup = time.perf_counter()
        deployment, client = dagster.start(stack, env)
        client.stop_all_instigators()  # the night is submitted here, not by a tick
        deployment.start_daemon()
        figures["deployment_start_s"] = round(time.perf_counter() - startup, 1)

        batches = plan_batches(fleet, night, batch_size, one_window_each=window_by_window)
        scheduled = scheduled_batch_keys(fleet, night, batch_size)
        figures["schedule_batches"] = len(scheduled)
        figures["schedule_requests_the_same_batches"] = scheduled == {batch.key for batch in batches}
        started = time.perf_counter()
        run_ids = [
            client.launch_partition_run(night.isoformat(), batch.property_ids, batch_tags(batch))
            for batch in batches
        ]
        figures["submit_s"] = round(time.perf_counter() - started, 2)
        try:
            records = wait_for_runs(instance, run_ids, timeout_s, deployment)
            figures["timed_out"] = False
        except TimeoutError:  # what finished by then is the figure
            records = list(instance.get_run_records(dg.RunsFilter(run_ids=run_ids)))
            figures["timed_out"] = True
        wall = time.perf_counter() - started
        figures.update(
            load_after=os.getloadavg()[0],
            runs=len(run_ids),
            wall_s=round(wall, 1),
            properties_per_second=round(properties / wall, 1),
            **run_durations(records),
        )
        stats = httpx.get(f"{simulator.base_url}/_simulator/stats", timeout=10).json()
        figures["provider_requests"] = stats["api_requests"]
        figures["requests_per_property_night"] = round(stats["api_requests"] / properties, 2)
        figures["provider_responses_by_status"] = stats["responses_by_status"]
        figures["provider_refused"] = stats["responses_by_status"].get("400", 0)  # a 404 is a lookup's answer
        log = httpx.get(f"{simulator.base_url}/_simulator/requests", timeout=30).json()["requests"]
        arrivals = [float(request["at"]) for request in log]
        figures["peak_requests_per_s"] = busiest_second(arrivals)
        figures["requests_per_10_s"] = per_interval(arrivals, 10.0)
        figures["provider_rate_limited"] = stats["rate_limited"]
        figures["provider_requests_by_endpoint"] = by_endpoint(stats["requests_by_path"])
        figures["failures"] = failures(instance, records)
        engine = make_engine(recon_url)
        try:
            figures.update(findings_check(engine, world, night))
        finally:
            engine.dispose()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=2_000)
    parser.add_argument("--night", type=date.fromisoformat, default=LAST_NIGHT)
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--max-concurrent-runs", type=int, default=DEFAULT_MAX_CONCURRENT_RUNS)
    parser.add_argument("--rps", type=int, default=DEFAULT_RPS, help="the provider's request rate limit")
    parser.add_argument("--bookings", type=int, default=FLEET_BOOKINGS_PER_NIGHT, help="ordinary, per night")
    parser.add_argument(
        "--connected-accounts",
        action="store_true",
        help="every property on its own connected account (default: a quarter on the platform's)",
    )
    parser.add_argument(
        "--clean",
        action="store_true",
        help="plant nothing: the pipeline's cost near the provider's floor, a few list requests a property",
    )
    parser.add_argument(
        "--timeout-s", type=float, default=900, help="bound on the night's runs (then: what finished)"
    )
    parser.add_argument(
        "--window-by-window",
        action="store_true",
        help="one night window per batch, as the nightly schedule asks (default: the night whole)",
    )
    add_postgres_url(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if min(args.properties, args.batch_size, args.max_concurrent_runs, args.rps, args.bookings) < 1:
        parser.error("every size must be positive")
    figures = run(
        args.postgres_url,
        args.properties,
        args.night,
        args.batch_size,
        args.max_concurrent_runs,
        args.rps,
        args.bookings,
        args.timeout_s,
        args.connected_accounts,
        not args.clean,
        args.window_by_window,
    )
    print(json.dumps(figures, sort_keys=True) if args.json else json.dumps(figures, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
