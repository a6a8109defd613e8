"""A backfill launched over the real webserver's GraphQL API, executed by the real daemon.

Processes: the code server (`dagster code-server start`), `dagster-webserver` and `dagster-daemon`, all
on deploy/workspace.yaml and a temporary DAGSTER_HOME holding deploy/dagster.yaml (PostgreSQL storage:
SQLite instance storage gives "database is locked" under concurrent runs). The simulator runs in this
process; the reconciliation tables live in their own PostgreSQL database.
"""

from __future__ import annotations

import time
from datetime import date

import dagster as dg
import pytest
from sqlalchemy import Engine, func, select

from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments, discrepancies
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.dagster_processes import StartWorld, wait_for_runs

NIGHTS = (date(2026, 11, 28), date(2026, 11, 29))
BOOKINGS_PER_NIGHT = 10
# Two properties, one with a connected account (Stripe-Account scoping) and one attributed by metadata.
PROPERTIES = (DEMO_PROPERTIES[0], DEMO_PROPERTIES[1])
STARTUP_TIMEOUT_S = 90
RUN_TIMEOUT_S = 90
BACKFILL_TIMEOUT_S = 240
REPORT = dg.AssetKey("discrepancy_report")


@pytest.mark.slow
@pytest.mark.postgres
def test_backfill_from_the_ui_api_reconciles_every_partition_once(pg_dagster_world: StartWorld) -> None:
    started = time.monotonic()
    w = pg_dagster_world(
        NIGHTS, BOOKINGS_PER_NIGHT, PROPERTIES, dagster_yaml={"run_queue": {"dequeue_interval_seconds": 1}}
    )
    world, instance = w.world, w.instance
    keys = world.partition_keys()  # nights × properties
    engine = make_engine(w.recon_url)
    try:
        # The property partitions (added by the fixture) normally come from property_partitions_sensor;
        # it is stopped below.
        with w.deployment() as deployment:
            deployment.start_code_server(STARTUP_TIMEOUT_S)
            client = deployment.start_webserver(STARTUP_TIMEOUT_S)
            client.wait_for_location(STARTUP_TIMEOUT_S, deployment)
            # The code's schedules and sensors default to RUNNING. The nightly schedule would request
            # these very nights (they are within its look-back of today) and the sensors would add runs
            # and partitions of their own; asserting only on the backfill's runs would still let such a
            # run race ours for the same partitions. So stop them all (as a user would in the UI) before
            # the daemon starts, and then assert that the instance holds no runs but ours.
            stopped = client.stop_all_instigators()
            assert "nightly_reconciliation_schedule" in stopped
            deployment.start_daemon()

            with deployment.logs_on_failure():
                first_key = keys[0]
                first_run = client.launch_partition_run(first_key)
                [record] = wait_for_runs(instance, [first_run], RUN_TIMEOUT_S, deployment)
                assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS, deployment.logs()
                first_night, first_property = first_key.split("|")
                first_rows = _adjustment_run_ids(engine, first_property, first_night)
                assert first_rows and set(first_rows.values()) == {first_run}

                # An asset backfill runs as `__ASSET_JOB`, not as reconcile_night, so it does not inherit
                # the job's recon/provider_bound tag (and so its run limit): add it, as the UI's tag
                # editor would. The assets' `provider_api` pool bounds provider calls either way.
                backfill_id = client.launch_asset_backfill(
                    [asset.key.path[-1] for asset in reconciliation_assets],
                    keys,
                    tags={PROVIDER_BOUND_TAG: "true"},
                )
                status = client.wait_for_backfill(backfill_id, BACKFILL_TIMEOUT_S, deployment)
            assert status in ("COMPLETED", "COMPLETED_SUCCESS")

            backfill_runs = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
            assert backfill_runs
            assert {r.dagster_run.status for r in backfill_runs} == {dg.DagsterRunStatus.SUCCESS}
            assert sorted(r.dagster_run.tags["dagster/partition"] for r in backfill_runs) == sorted(keys)
            assert all(r.dagster_run.tags.get(PROVIDER_BOUND_TAG) == "true" for r in backfill_runs)
            assert record.dagster_run.tags.get(PROVIDER_BOUND_TAG) == "true"  # from the job's tags
            all_runs = {r.dagster_run.run_id for r in instance.get_run_records()}
            assert all_runs == {first_run} | {r.dagster_run.run_id for r in backfill_runs}

            assert set(keys) <= instance.get_materialized_partitions(REPORT)
            # The backfill's run of the already-reconciled partition proposed the same adjustments and
            # the business keys suppressed every one of them.
            rerun = [
                r.dagster_run.run_id
                for r in backfill_runs
                if r.dagster_run.tags["dagster/partition"] == first_key
            ]
            events = instance.fetch_materializations(dg.AssetKey("adjustments"), limit=100).records
            [rerun_metadata] = [e.asset_materialization.metadata for e in events if e.run_id in rerun]  # type: ignore[union-attr]
            assert rerun_metadata["new"].value == 0
            assert rerun_metadata["unchanged"].value == len(first_rows)

        with engine.connect() as connection:
            rows = connection.execute(select(func.count()).select_from(adjustments)).scalar_one()
            distinct_keys = connection.execute(
                select(func.count(func.distinct(adjustments.c.idempotency_key)))
            ).scalar_one()
            found: dict[tuple[str, str, str], int] = {}
            for key in connection.execute(
                select(discrepancies.c.property_id, discrepancies.c.night, discrepancies.c.category)
            ):
                found[tuple(key)] = found.get(tuple(key), 0) + 1  # type: ignore[index]
        assert rows == distinct_keys == world.planted_adjustments() > 0
        assert found == dict(world.world.expected)
        assert _adjustment_run_ids(engine, first_property, first_night) == first_rows
    finally:
        engine.dispose()
    print(f"backfill test wall time: {time.monotonic() - started:.1f} s")


def _adjustment_run_ids(engine: Engine, property_id: str, night: str) -> dict[str, str]:
    """idempotency_key → run_id of the partition's adjustments."""
    with engine.connect() as connection:
        return {
            row.idempotency_key: row.run_id
            for row in connection.execute(
                select(adjustments.c.idempotency_key, adjustments.c.run_id).where(
                    adjustments.c.property_id == property_id, adjustments.c.night == night
                )
            )
        }
