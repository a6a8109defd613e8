"""What the Dagster UI says about a night is true: the night's check names the properties no run has
reconciled yet, a night's metadata sums every batch of it, every run says its night and properties in
its tags, and a bad setting fails a run once with its one line, never retried."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from dagster._core.definitions.partitions.context import partition_loading_context
from dagster._core.events import DagsterEventType, RunFailureReason
from dagster._core.execution.retries import auto_reexecution_should_retry_run
from dagster._core.storage.tags import WILL_RETRY_TAG

from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.batches import NIGHT_TAG, PROPERTIES_TAG, batch_run_config
from recon_pipeline.defs.checks import night_reconciled
from recon_pipeline.defs.concurrency import ERROR_TAG, PROVIDER_BOUND_TAG, RETRY_ON_STEP_FAILURE_TAG
from recon_pipeline.defs.partitions import night_partitions
from recon_pipeline.defs.resources import ProviderResource
from recon_pipeline.nights import last_closed_night
from recon_pipeline.simulation.demo.properties import demo_properties
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, asset_metadata, seeded


def _night_check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    [evaluation] = [
        e for e in result.get_asset_check_evaluations() if e.check_name == night_reconciled.check_key.name
    ]
    return evaluation


def _materialize(pipeline: SeededPipeline, *property_ids: str) -> dg.ExecuteInProcessResult:
    """A run of the night's batch of ``property_ids`` with the night's check, as the job runs it."""
    return dg.materialize(
        [*reconciliation_assets, night_reconciled],
        partition_key=NIGHT.isoformat(),
        instance=pipeline.instance,
        resources=pipeline.resources,
        run_config=batch_run_config(property_ids),
    )


def _run_tags(pipeline: SeededPipeline, result: dg.ExecuteInProcessResult) -> dict[str, str]:
    run = pipeline.instance.get_run_by_id(result.run_id)
    assert run is not None
    return dict(run.tags)


@pytest.fixture
def four_properties(database_url: str) -> Iterator[SeededPipeline]:
    """The three keyed demo properties and the hotel-style one: a 4-property night."""
    with seeded(database_url, properties=demo_properties("stripe")[:4]) as pipeline:
        yield pipeline


def test_a_night_is_whole_only_when_every_property_is_reconciled(four_properties: SeededPipeline) -> None:
    """One property of the 4-property night: its run succeeds, and the night's check fails naming the 3
    others; a second run for those 3 passes it, and the night's metadata then sums both batches."""
    pipeline = four_properties
    ids = sorted(p.property_id for p in pipeline.properties)
    assert len(ids) == 4
    first, rest = ids[0], ids[1:]
    night = NIGHT.isoformat()

    one = _materialize(pipeline, first)
    assert one.success
    check = _night_check(one)
    assert not check.passed
    assert check.description == f"{night}: 1 of 4 properties reconciled; not reconciled: {', '.join(rest)}"
    assert str(check.metadata["missing"].value) == "\n".join(f"- {p}" for p in rest)
    tags = _run_tags(pipeline, one)
    assert (tags[NIGHT_TAG], tags[PROPERTIES_TAG], tags[PROVIDER_BOUND_TAG]) == (night, "1", "true")
    first_report = asset_metadata(one, "discrepancy_report")
    assert first_report["night/properties_reconciled"] == 1

    others = _materialize(pipeline, *rest)
    assert others.success
    assert _night_check(others).passed
    assert _night_check(others).metadata["properties_reconciled"].value == 4
    assert _run_tags(pipeline, others)[PROPERTIES_TAG] == "3"
    report = asset_metadata(others, "discrepancy_report")
    found = sum(sum(pipeline.found(p).values()) for p in ids)
    assert report["properties"] == 3  # this batch's
    assert report["night/properties_reconciled"] == 4  # the night's: both batches
    assert report["night/findings"] == report["dagster/row_count"] == found
    assert found > report["findings"]  # more than the last batch found


def test_a_missing_setting_fails_the_run_once_with_its_line_and_no_retry(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RECON_PROVIDER=simulator without its URL (the demo's simulator gone): one attempt of the step, its
    failure the setting's one line, and neither a step retry nor a run retry by the daemon, on an
    instance that retries runs."""
    monkeypatch.setenv("RECON_PROVIDER", "simulator")
    monkeypatch.delenv("RECON_PROVIDER_BASE_URL", raising=False)
    with (
        seeded(sqlite_url) as pipeline,
        dg.instance_for_test(overrides={"run_retries": {"enabled": True, "max_retries": 2}}) as instance,
    ):
        resources = {**pipeline.resources, "provider": ProviderResource(database_url=sqlite_url)}
        result = dg.materialize(
            reconciliation_assets,
            partition_key=NIGHT.isoformat(),
            instance=instance,
            resources=resources,
            run_config=batch_run_config([pipeline.properties[0].property_id]),
            raise_on_error=False,
        )
        assert not result.success
        types = [event.event_type for event in result.all_events]
        assert DagsterEventType.STEP_UP_FOR_RETRY not in types
        assert types.count(DagsterEventType.STEP_START) == 1
        [failure] = [event for event in result.all_events if event.is_step_failure]
        error = failure.step_failure_data.error
        assert error is not None
        line = "RECON_PROVIDER=simulator needs RECON_PROVIDER_BASE_URL"
        assert line in error.message.splitlines()[0]
        run = instance.get_run_by_id(result.run_id)
        assert run is not None
        assert line in run.tags[ERROR_TAG]
        assert run.tags[RETRY_ON_STEP_FAILURE_TAG] == "false"
        assert run.tags.get(WILL_RETRY_TAG) == "false"
        assert not auto_reexecution_should_retry_run(instance, run, RunFailureReason.STEP_FAILURE)


# Every calendar from the first to turn to the last (UTC+14 to UTC-11), and cutoffs from midnight to noon.
ZONES = (
    "Pacific/Kiritimati",
    "Pacific/Auckland",
    "Asia/Kolkata",
    "Europe/Lisbon",
    "America/Denver",
    "Pacific/Pago_Pago",
)


def _last_night(now: datetime) -> str | None:
    with partition_loading_context(effective_dt=now):
        return night_partitions.get_last_partition_key()


@pytest.mark.fast
def test_the_last_night_offered_is_the_last_night_closed_anywhere() -> None:
    """Every half hour over two days: the last partition is a night that has closed on the first calendar
    to turn, and no property's last closed night, whatever its timezone and cutoff, lies beyond it."""
    start = datetime(2026, 11, 30, tzinfo=UTC)
    for step in range(96):
        now = start + timedelta(minutes=30 * step)
        last = _last_night(now)
        assert last == last_closed_night(now, "Pacific/Kiritimati").isoformat(), now
        for zone in ZONES:
            for cutoff in ("00:00", "03:00", "12:00"):
                assert last_closed_night(now, zone, cutoff).isoformat() <= last, (now, zone, cutoff)
    assert _last_night(datetime(2026, 12, 1, 9, 59, tzinfo=UTC)) == "2026-11-30"  # 23:59 at UTC+14
    assert _last_night(datetime(2026, 12, 1, 10, tzinfo=UTC)) == "2026-12-01"
