"""A run launched from the UI with no batch config: every valid property of the ``properties`` table is
reconciled, and an invalid row is skipped with an error naming it (it cannot be reconciled, and must not
stop the others)."""

from __future__ import annotations

import logging

import dagster as dg
from sqlalchemy import insert

from recon_pipeline.db.schema import properties
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.properties import PropertyRow
from recon_pipeline.storage.night_outcomes import load_outcomes
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, asset_metadata

MARS = PropertyRow("mars-base", "Mars Base", "Mars/Olympus_Mons", "EUR", "00:00", None)


def test_a_run_without_batch_config_reconciles_every_valid_property_and_skips_a_bad_row(
    seeded_pipeline: SeededPipeline,
) -> None:
    pipeline = seeded_pipeline
    with pipeline.engine.begin() as connection:
        connection.execute(insert(properties), [MARS.row()])
    # What the launchpad submits for a partition when nobody fills in the config: none at all.
    result = dg.materialize(
        reconciliation_assets,
        partition_key=NIGHT.isoformat(),
        instance=pipeline.instance,
        resources=pipeline.resources,
    )
    assert result.success
    report = asset_metadata(result, "discrepancy_report")
    assert report["properties"] == len(pipeline.properties) == 3
    assert report["batch"] == "all"
    for prop in pipeline.properties:
        assert pipeline.found(prop.property_id) == pipeline.planted(prop.property_id)
        assert f"| {prop.property_id} | ok |" in str(report["per_property"])
    assert "mars-base" not in str(report["per_property"])

    with pipeline.engine.connect() as connection:
        outcomes = load_outcomes(connection, NIGHT.isoformat())
    assert sorted(outcomes) == sorted(p.property_id for p in pipeline.properties)
    assert {o.status for o in outcomes.values()} == {"succeeded"}
    assert {o.run_id for o in outcomes.values()} == {result.run_id}
    assert sum(o.findings or 0 for o in outcomes.values()) == report["findings"]

    errors = [
        entry.user_message
        for entry in pipeline.instance.all_logs(result.run_id)
        if entry.level == logging.ERROR and not entry.is_dagster_event
    ]
    assert errors == ["skipped: property 'mars-base' is invalid: unknown IANA timezone 'Mars/Olympus_Mons'"]
