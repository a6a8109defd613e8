"""End to end through Dagster: seeded PMS tables, the simulator over real HTTP, `materialize`."""

from __future__ import annotations

import dagster as dg
import pytest

from recon_pipeline.db.schema import adjustments, discrepancies
from recon_pipeline.definitions import defs
from recon_pipeline.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.pipeline_fixtures import SeededPipeline

ADJUSTED_CATEGORIES = ("missing_in_ledger", "missing_at_provider", "amount_mismatch", "duplicate_in_ledger")


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)
    assert defs.resolve_job_def("reconcile_night").partitions_def is not None


def test_every_planted_discrepancy_is_found_on_every_property(seeded_pipeline: SeededPipeline) -> None:
    for prop in DEMO_PROPERTIES:
        result = seeded_pipeline.materialize(prop.property_id)
        assert result.success
        assert seeded_pipeline.found(prop.property_id) == seeded_pipeline.planted(prop.property_id)
        report = result.asset_materializations_for_node("discrepancy_report")[0].metadata
        assert report["count/missing_in_ledger"].value == 4
        assert "amount_mismatch" in str(report["categories"].value)
    expected_adjustments = sum(
        n
        for (_p, _n, category), n in seeded_pipeline.world.expected.items()
        if category in ADJUSTED_CATEGORIES
    )
    assert len(seeded_pipeline.table(adjustments)) == expected_adjustments


def test_rerun_writes_nothing_new(seeded_pipeline: SeededPipeline) -> None:
    prop = DEMO_PROPERTIES[0].property_id
    first = seeded_pipeline.materialize(prop)
    adjustments_before = seeded_pipeline.table(adjustments)
    discrepancies_before = seeded_pipeline.table(discrepancies)
    second = seeded_pipeline.materialize(prop)
    assert first.run_id != second.run_id
    metadata = second.asset_materializations_for_node("adjustments")[0].metadata
    assert metadata["new"].value == 0
    assert metadata["duplicates_suppressed"].value == len(adjustments_before) > 0
    assert seeded_pipeline.table(adjustments) == adjustments_before
    assert seeded_pipeline.table(discrepancies) == discrepancies_before


def test_retries_through_429_and_5xx_then_succeeds(seeded_pipeline: SeededPipeline) -> None:
    prop = DEMO_PROPERTIES[2].property_id
    seeded_pipeline.faults(statuses=[429, 503, 500], retry_after="0")
    assert seeded_pipeline.materialize(prop).success
    stats = seeded_pipeline.stats()
    assert {"429", "503", "500"} <= set(map(str, stats["responses_by_status"]))
    assert seeded_pipeline.found(prop) == seeded_pipeline.planted(prop)


@pytest.mark.parametrize("fault", [{"fail_after_requests": 1}, {"truncate_next": 50}])
def test_a_pull_that_fails_midway_fails_the_partition_and_writes_nothing(
    seeded_pipeline: SeededPipeline, fault: dict[str, object]
) -> None:
    prop = DEMO_PROPERTIES[0].property_id
    seeded_pipeline.faults(**fault)
    result = seeded_pipeline.materialize(prop, raise_on_error=False)
    assert not result.success
    failed = [event for event in result.all_events if event.is_step_failure]
    assert [event.step_key for event in failed] == ["provider_records"]
    assert "IncompletePullError" in str(failed[0].step_failure_data.error)
    assert seeded_pipeline.table(adjustments) == []
    assert seeded_pipeline.table(discrepancies) == []


def test_executor_is_chosen_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon_pipeline.config import ConfigError
    from recon_pipeline.defs.executor import executor_from_env

    assert executor_from_env() is dg.in_process_executor
    monkeypatch.setenv("RECON_EXECUTOR", "multiprocess")
    assert executor_from_env() is dg.multiprocess_executor
    monkeypatch.setenv("RECON_EXECUTOR", "k8s")
    with pytest.raises(ConfigError, match="dagster-k8s"):
        executor_from_env()
    monkeypatch.setenv("RECON_EXECUTOR", "spark")
    with pytest.raises(ConfigError, match="RECON_EXECUTOR"):
        executor_from_env()
