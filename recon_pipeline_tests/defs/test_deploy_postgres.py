"""deploy/dagster.yaml really puts a run and its materializations into PostgreSQL.

The yaml is copied as is into a temporary DAGSTER_HOME; DAGSTER_PG_* point it at a fresh database on the
local server (the shared ``pg_dagster_world``). One night of ``reconcile_night`` for a batch of one
property runs in process against the seeded reconciliation database and the simulator; a second
instance from the same yaml, and plain SQL on the Dagster tables, read the run back.
"""

from __future__ import annotations

from datetime import date

import dagster as dg
import pytest
from sqlalchemy import create_engine, text

from recon_pipeline.definitions import build_definitions
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.batches import batch_properties, batch_run_config
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.support.dagster_processes import (
    DEPLOY_DIR,
    JOB_NAME,
    StartWorld,
    instance_from_home,
)

NIGHT = date(2026, 11, 29)
ASSET_COUNT = sum(len(asset.keys) for asset in reconciliation_assets)  # what one run materializes


@pytest.mark.postgres
@pytest.mark.slow
def test_deploy_instance_stores_runs_and_materializations_in_postgres(
    pg_dagster_world: StartWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    prop = DEMO_PROPERTIES[1]  # kyoto-gion: a connected account, zero-decimal currency
    w = pg_dagster_world([NIGHT], 10, (prop,))
    world, home, instance = w.world, w.home, w.instance
    [key] = world.partition_keys()
    assert (home / "dagster.yaml").read_bytes() == (DEPLOY_DIR / "dagster.yaml").read_bytes()
    for name, value in w.env.items():
        if name.startswith("RECON_"):  # for the run in this process
            monkeypatch.setenv(name, value)
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
    assert instance.run_coordinator.dequeue_interval_seconds == 1  # type: ignore[attr-defined]
    job = build_definitions().resolve_job_def(JOB_NAME)
    result = job.execute_in_process(
        partition_key=key, instance=instance, run_config=batch_run_config([prop.property_id])
    )
    assert result.success
    run_id = result.run_id

    # A second instance from the same yaml: nothing is shared with the first but the database.
    with instance_from_home(home, w.pg_env) as reader:
        record = reader.get_run_record_by_id(run_id)
        assert record is not None
        assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS
        assert record.dagster_run.tags["dagster/partition"] == key
        assert batch_properties(record.dagster_run.run_config) == [prop.property_id]
        assert key in reader.get_materialized_partitions(dg.AssetKey("discrepancy_report"))
        events = reader.fetch_materializations(dg.AssetKey("adjustments"), limit=10).records
        assert [(e.run_id, e.partition_key) for e in events] == [(run_id, key)]
        metadata = events[0].asset_materialization.metadata  # type: ignore[union-attr]
        assert metadata["new"].value == world.planted_adjustments() > 0

    engine = create_engine(w.dagster_url)
    try:
        with engine.connect() as connection:
            runs = connection.execute(text("SELECT run_id, status FROM runs")).all()
            materializations = connection.execute(
                text(
                    "SELECT count(*) FROM event_logs "
                    "WHERE run_id = :run_id AND dagster_event_type = 'ASSET_MATERIALIZATION'"
                ),
                {"run_id": run_id},
            ).scalar_one()
    finally:
        engine.dispose()
    assert [tuple(row) for row in runs] == [(run_id, "SUCCESS")]
    assert materializations == ASSET_COUNT
    # Nothing of the instance landed on disk as SQLite.
    assert not [p for p in home.rglob("*") if p.suffix in (".db", ".sqlite")]
