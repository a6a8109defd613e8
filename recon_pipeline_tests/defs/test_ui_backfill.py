"""Backfills launched over the real webserver's GraphQL API, executed by the real daemon: one property's
missed week (the launchpad's backfill with config naming the property) and three nights of every property
(the asset graph's backfill with no config, which queues each night's batches).

Processes: the code server (`dagster code-server start`), `dagster-webserver` and `dagster-daemon`, all
on deploy/workspace.yaml and a temporary DAGSTER_HOME holding deploy/dagster.yaml (PostgreSQL storage:
SQLite instance storage gives "database is locked" under concurrent runs). The simulator runs in this
process; the reconciliation tables live in their own PostgreSQL database.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import pytest
from sqlalchemy import Engine, func, select

from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments, discrepancies, night_reconciliations
from recon_pipeline.defs.assets import ADJUSTMENTS, DISCREPANCY_REPORT, reconciliation_assets
from recon_pipeline.defs.batches import (
    BATCH_TAG,
    NIGHT_TAG,
    PROPERTIES_TAG,
    QUEUED_BATCHES_TAG,
    QUEUED_BY_TAG,
    batch_properties,
    batch_run_config,
)
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.storage.night_outcomes import SUCCEEDED
from recon_pipeline_tests.support.dagster_processes import (
    JOB_NAME,
    LAUNCH_BACKFILL_MUTATION,
    DagsterDeployment,
    GraphQL,
    PgDagsterWorld,
    StartWorld,
    queued_batch_runs,
    wait_for_runs,
)

MISSED_WEEK = tuple(date(2026, 11, 23) + timedelta(days=i) for i in range(7))
BOOKINGS_PER_NIGHT = 10
# Two properties, one with a connected account (Stripe-Account scoping) and one attributed by metadata.
PROPERTIES = (DEMO_PROPERTIES[0], DEMO_PROPERTIES[1])
BACKFILLED = DEMO_PROPERTIES[1].property_id  # kyoto-gion, the connected account
STARTUP_TIMEOUT_S = 90
RUN_TIMEOUT_S = 90
BACKFILL_TIMEOUT_S = 360
ASSET_NAMES = [key.path[-1] for asset in reconciliation_assets for key in asset.keys]
DAGSTER_YAML = {"run_queue": {"dequeue_interval_seconds": 1}}

PropertyNightKey = tuple[str, str]


@pytest.mark.slow
@pytest.mark.postgres
def test_backfill_of_one_propertys_missed_week_reconciles_it_alone_once_per_night(
    pg_dagster_world: StartWorld,
) -> None:
    """The launchpad's backfill of the week's 7 night partitions with config naming one property: 7 runs
    of ``reconcile_night``, each reconciling that property's night once, and nothing of the other.

    The UI sends a backfill of assets that one job materializes with that job's partition set as selector
    (``launch_asset_backfill(job_name=...)``), so its runs are runs of the job with the job's tags."""
    started = time.monotonic()
    w = pg_dagster_world(MISSED_WEEK, BOOKINGS_PER_NIGHT, PROPERTIES, dagster_yaml=DAGSTER_YAML)
    world, instance = w.world, w.instance
    nights = world.partition_keys()
    assert len(nights) == 7
    first_night = nights[0]
    engine = make_engine(w.recon_url)
    try:
        with w.deployment() as deployment:
            client = start_without_instigators(w, deployment)
            with deployment.logs_on_failure():
                # The property's first night was reconciled before the week was backfilled: the backfill's
                # run of it must propose nothing new.
                first_run = client.launch_partition_run(first_night, [BACKFILLED])
                [record] = wait_for_runs(instance, [first_run], RUN_TIMEOUT_S, deployment)
                assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS, deployment.logs()
                first_rows = _adjustment_run_ids(engine, BACKFILLED, first_night)
                assert first_rows and set(first_rows.values()) == {first_run}

                backfill_id = client.launch_asset_backfill(
                    ASSET_NAMES, nights, run_config=batch_run_config([BACKFILLED]), job_name=JOB_NAME
                )
                status = client.wait_for_backfill(backfill_id, BACKFILL_TIMEOUT_S, deployment)
            assert status in ("COMPLETED", "COMPLETED_SUCCESS")

            backfill_runs = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
            assert {r.dagster_run.status for r in backfill_runs} == {dg.DagsterRunStatus.SUCCESS}
            run_of_night = {
                r.dagster_run.tags["dagster/partition"]: r.dagster_run.run_id for r in backfill_runs
            }
            assert len(backfill_runs) == len(run_of_night) == 7 and sorted(run_of_night) == nights
            assert all(r.dagster_run.job_name == JOB_NAME for r in backfill_runs)
            assert all(batch_properties(r.dagster_run.run_config) == [BACKFILLED] for r in backfill_runs)
            # The job's tag, so the run queue's provider-bound limit holds for the backfill's runs.
            assert all(r.dagster_run.tags.get(PROVIDER_BOUND_TAG) == "true" for r in backfill_runs)
            assert record.dagster_run.tags.get(PROVIDER_BOUND_TAG) == "true"
            _assert_only_runs(instance, {first_run, *run_of_night.values()})
            assert set(nights) <= instance.get_materialized_partitions(DISCREPANCY_REPORT)

            # The backfill's run of the already-reconciled night proposed the same adjustments and the
            # business keys suppressed every one of them.
            events = instance.fetch_materializations(ADJUSTMENTS, limit=100).records
            [rerun_metadata] = [
                e.asset_materialization.metadata  # type: ignore[union-attr]
                for e in events
                if e.run_id == run_of_night[first_night]
            ]
            assert rerun_metadata["new"].value == 0
            assert rerun_metadata["unchanged"].value == len(first_rows)
            assert rerun_metadata["properties"].value == 1

        # Exactly once per night: one outcome per property-night, succeeded, by that night's backfill run.
        assert _outcomes(engine) == {
            (BACKFILLED, night): (SUCCEEDED, run_of_night[night]) for night in nights
        }
        expected = world.planted([BACKFILLED])
        assert {night for _p, night, _c in expected} == set(nights)  # every night had findings planted
        assert _found(engine) == expected
        rows, distinct_keys = _adjustment_counts(engine)
        assert rows == distinct_keys == world.planted_adjustments([BACKFILLED]) > 0
        assert _adjustment_run_ids(engine, BACKFILLED, first_night) == first_rows
    finally:
        engine.dispose()
    print(f"missed-week backfill test wall time: {time.monotonic() - started:.1f} s")


MISSED_NIGHTS = tuple(date(2026, 11, 27) + timedelta(days=i) for i in range(3))


@pytest.mark.slow
@pytest.mark.postgres
def test_the_asset_graphs_backfill_of_three_nights_queues_each_nights_batches(
    pg_dagster_world: StartWorld,
) -> None:
    """The asset graph's "Materialize all… → Custom" backfill of 3 nights (launchPartitionBackfill with
    no job and no config, as the UI sends it): each night's run queues the night's batches at the
    deployment's batch size, its windows packed together (batches of 2 here: the three properties' three
    windows are 2 batches a night, one of two windows), every run carries the provider-bound tag by
    itself, and each property-night is reconciled exactly once, by its batch run."""
    started = time.monotonic()
    w = pg_dagster_world(MISSED_NIGHTS, BOOKINGS_PER_NIGHT, DEMO_PROPERTIES, dagster_yaml=DAGSTER_YAML)
    w.env["RECON_BATCH_SIZE"] = "2"
    world, instance = w.world, w.instance
    windows = {p.property_id: (p.timezone, p.night_cutoff) for p in DEMO_PROPERTIES}
    assert len(set(windows.values())) == 3
    nights = world.partition_keys()
    property_ids = sorted(world.property_ids)
    engine = make_engine(w.recon_url)
    try:
        with w.deployment() as deployment:
            client = start_without_instigators(w, deployment)
            with deployment.logs_on_failure():
                backfill_id = client.launch_asset_backfill(ASSET_NAMES, nights)
                client.wait_for_backfill(backfill_id, BACKFILL_TIMEOUT_S, deployment)
                night_runs, queued = queued_batch_runs(instance, backfill_id)
                assert len(night_runs) == 3
                batch_runs = wait_for_runs(instance, queued, BACKFILL_TIMEOUT_S, deployment)
            night_of = {}
            for run_id in night_runs:
                run = instance.get_run_by_id(run_id)
                assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
                assert batch_properties(run.run_config) == []
                assert run.tags[PROVIDER_BOUND_TAG] == "true"  # set by the run itself
                assert run.tags[QUEUED_BATCHES_TAG] == "2"
                assert run.tags[NIGHT_TAG] == run.tags["dagster/partition"]
                night_of[run.run_id] = run.tags["dagster/partition"]
            assert sorted(night_of.values()) == nights
            reconciled: dict[tuple[str, str], str] = {}
            sizes: Counter[int] = Counter()
            for record in batch_runs:
                run = record.dagster_run
                assert run.status == dg.DagsterRunStatus.SUCCESS
                assert run.tags[PROVIDER_BOUND_TAG] == "true"
                night = run.tags["dagster/partition"]
                assert run.tags[NIGHT_TAG] == night == night_of[run.tags[QUEUED_BY_TAG]]
                members = batch_properties(run.run_config)
                assert len({windows[p] for p in members}) == len(members)  # one window each: packed
                assert run.tags[PROPERTIES_TAG] == str(len(members)) and run.tags[BATCH_TAG].startswith(night)
                sizes[len(members)] += 1
                for property_id in members:
                    assert (property_id, night) not in reconciled
                    reconciled[(property_id, night)] = run.run_id
            assert sizes == {2: len(nights), 1: len(nights)}
            assert sorted(reconciled) == sorted((p, n) for p in property_ids for n in nights)
            _assert_only_runs(instance, {*night_of, *reconciled.values()})
            assert set(nights) == instance.get_materialized_partitions(DISCREPANCY_REPORT)

        # Once per property-night: each outcome is its batch run's, none the night run's.
        assert _outcomes(engine) == {key: (SUCCEEDED, run_id) for key, run_id in reconciled.items()}
        assert _found(engine) == world.planted(nights=nights)
    finally:
        engine.dispose()
    print(f"3-night asset graph backfill test wall time: {time.monotonic() - started:.1f} s")


def start_without_instigators(w: PgDagsterWorld, deployment: DagsterDeployment) -> GraphQL:
    """Code server, webserver, then the daemon once every schedule and sensor is stopped.

    The code's schedules and sensors default to RUNNING. The nightly schedule would request these very
    nights (they are within its look-back of today) and the sensors would add runs of their own; asserting
    only on the backfill's runs would still let such a run race ours for the same property-nights. So stop
    them all (as a user would in the UI) before the daemon starts, and the tests then assert that the
    instance holds no runs but theirs."""
    deployment.start_code_server(STARTUP_TIMEOUT_S)
    client = deployment.start_webserver(STARTUP_TIMEOUT_S)
    client.wait_for_location(STARTUP_TIMEOUT_S, deployment)
    assert "nightly_reconciliation_schedule" in client.stop_all_instigators()
    deployment.start_daemon()
    return client


def _assert_only_runs(instance: dg.DagsterInstance, run_ids: set[str]) -> None:
    assert {r.dagster_run.run_id for r in instance.get_run_records()} == run_ids


def _outcomes(engine: Engine) -> dict[PropertyNightKey, tuple[str, str]]:
    """(property, night) → (status, run_id) of every row of ``night_reconciliations``."""
    with engine.connect() as connection:
        rows = connection.execute(
            select(
                night_reconciliations.c.property_id,
                night_reconciliations.c.night,
                night_reconciliations.c.status,
                night_reconciliations.c.run_id,
            )
        ).all()
    return {(row.property_id, row.night): (row.status, row.run_id) for row in rows}


def _found(engine: Engine) -> dict[tuple[str, str, str], int]:
    """(property, night, category) → findings in ``discrepancies``."""
    with engine.connect() as connection:
        keys = connection.execute(
            select(discrepancies.c.property_id, discrepancies.c.night, discrepancies.c.category)
        ).all()
    return dict(Counter((row.property_id, row.night, row.category) for row in keys))


def _adjustment_counts(engine: Engine) -> tuple[int, int]:
    """Rows of ``adjustments`` and their distinct business keys."""
    with engine.connect() as connection:
        rows = connection.execute(select(func.count()).select_from(adjustments)).scalar_one()
        distinct_keys = connection.execute(
            select(func.count(func.distinct(adjustments.c.idempotency_key)))
        ).scalar_one()
    return int(rows), int(distinct_keys)


def _adjustment_run_ids(engine: Engine, property_id: str, night: str) -> dict[str, str]:
    """idempotency_key → run_id of the property-night's adjustments."""
    with engine.connect() as connection:
        return {
            row.idempotency_key: row.run_id
            for row in connection.execute(
                select(adjustments.c.idempotency_key, adjustments.c.run_id).where(
                    adjustments.c.property_id == property_id, adjustments.c.night == night
                )
            )
        }


@pytest.mark.slow  # a code server process
def test_the_asset_graphs_backfill_of_the_night_assets_is_accepted(tmp_path: Path) -> None:
    """Selecting the night's assets in the asset graph and backfilling nights (no job selector) is accepted
    by the webserver's GraphQL: Dagster 1.13 refused it ("Targeted subset must match between every key in
    a non-subsettable multi-asset") while the batch's summary depended on its two siblings."""
    from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

    definitions_file = tmp_path / "definitions.py"
    definitions_file.write_text(
        "from recon_pipeline.definitions import build_definitions\n\ndefs = build_definitions()\n"
    )
    params = {
        "assetSelection": [{"path": [name]} for name in ASSET_NAMES],
        "partitionNames": [night.isoformat() for night in MISSED_WEEK[:2]],
        "fromFailure": False,
        "title": "asset graph backfill",
        "tags": [],
    }
    with (
        dg.instance_for_test() as instance,
        define_out_of_process_context(str(definitions_file), None, instance) as context,
    ):
        result = execute_dagster_graphql(context, LAUNCH_BACKFILL_MUTATION, {"backfillParams": params})
        assert result.data["launchPartitionBackfill"]["__typename"] == "LaunchBackfillSuccess", result.data
        [backfill] = instance.get_backfills()
        assert sorted(backfill.asset_selection) == sorted(dg.AssetKey(name) for name in ASSET_NAMES)
