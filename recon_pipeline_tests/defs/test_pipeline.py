"""End to end through Dagster: seeded PMS tables, the simulator over real HTTP, `materialize`; once per
provider (Stripe on SQLite and PostgreSQL, Razorpay on SQLite)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import dagster as dg
import httpx
import pytest
from sqlalchemy import select

from recon_pipeline.db.schema import adjustments, discrepancies
from recon_pipeline.nights import night_window
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.razorpay.client import FEE_PROVISIONAL, FEE_SETTLED, RECON_PATH
from recon_pipeline.reconcile.adjustments import ADJUSTMENT_POLICY
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, asset_metadata, seeded

ADJUSTED_CATEGORIES = tuple(ADJUSTMENT_POLICY)  # the categories that propose a correction


def test_every_planted_discrepancy_is_found_on_every_property(provider_pipeline: SeededPipeline) -> None:
    """One run reconciles the night's batch of every property; the report sums them, the table holds each
    property's own findings."""
    result = provider_pipeline.materialize()
    assert result.success
    report = asset_metadata(result, "discrepancy_report")
    assert report["properties"] == len(provider_pipeline.properties)
    assert report["count/missing_in_ledger"] == sum(
        provider_pipeline.planted(prop.property_id).get("missing_in_ledger", 0)
        for prop in provider_pipeline.properties
    )  # four a property, and a won dispute's unbooked reversal where the world has disputes (Stripe)
    assert "amount_mismatch" in str(report["categories"])
    for prop in provider_pipeline.properties:
        assert provider_pipeline.found(prop.property_id) == provider_pipeline.planted(prop.property_id)
        assert f"| {prop.property_id} | ok |" in str(report["per_property"])
    expected_adjustments = sum(
        n
        for prop in provider_pipeline.properties
        for category, n in provider_pipeline.planted(prop.property_id).items()
        if category in ADJUSTED_CATEGORIES
    )
    assert len(provider_pipeline.table(adjustments)) == expected_adjustments


def test_a_clean_night_succeeds_with_no_finding(clean_pipeline: SeededPipeline) -> None:
    """Every captured payment's booking confirmed, every record booked: the run succeeds and finds nothing
    (the orphan report failed on exactly this night, after the adjustments were committed)."""
    for prop in clean_pipeline.properties:
        result = clean_pipeline.materialize(prop.property_id)
        assert result.success
        assert clean_pipeline.found(prop.property_id) == {} == clean_pipeline.planted(prop.property_id)
        report = asset_metadata(result, "discrepancy_report")
        assert report["findings"] == 0 and report["matched"] > 100
        assert report["count/orphaned_captured_payment"] == 0
    assert clean_pipeline.table(adjustments) == []
    assert clean_pipeline.table(discrepancies) == []


def test_rerun_writes_nothing_new(provider_pipeline: SeededPipeline) -> None:
    prop = provider_pipeline.properties[0].property_id
    first = provider_pipeline.materialize(prop)
    adjustments_before = provider_pipeline.table(adjustments)
    discrepancies_before = provider_pipeline.table(discrepancies)
    second = provider_pipeline.materialize(prop)
    assert first.run_id != second.run_id
    metadata = asset_metadata(second, "adjustments")
    assert metadata["new"] == 0
    assert metadata["unchanged"] == len(adjustments_before) > 0
    assert provider_pipeline.table(adjustments) == adjustments_before
    assert provider_pipeline.table(discrepancies) == discrepancies_before


def test_retries_through_429_and_5xx_then_succeeds(provider_pipeline: SeededPipeline) -> None:
    prop = provider_pipeline.properties[-1].property_id
    provider_pipeline.faults(statuses=[429, 503, 500], retry_after="0")
    assert provider_pipeline.materialize(prop).success
    stats = provider_pipeline.stats()
    assert {"429", "503", "500"} <= set(map(str, stats["responses_by_status"]))
    assert provider_pipeline.found(prop) == provider_pipeline.planted(prop)


# Enough truncations to outlast every HTTP and step retry of every list a pull reads at once (Razorpay's
# payments, refunds and four settlement recon days).
@pytest.mark.parametrize("fault", [{"fail_after_requests": 1}, {"truncate_next": 200}])
def test_a_pull_that_fails_midway_fails_the_partition_and_writes_nothing(
    provider_pipeline: SeededPipeline, fault: dict[str, object]
) -> None:
    provider_pipeline.faults(**fault)
    assert_pull_failed_and_nothing_written(provider_pipeline)


def assert_pull_failed_and_nothing_written(pipeline: SeededPipeline) -> str:
    """Materialize the first property's night: its pull fails, the batch step fails naming it, nothing is
    written; its error."""
    property_id = pipeline.properties[0].property_id
    result = pipeline.materialize(property_id, raise_on_error=False)
    assert not result.success
    failed = [event for event in result.all_events if event.is_step_failure]
    assert [event.step_key for event in failed] == ["reconcile_batch"]
    assert f"property {property_id} night {NIGHT.isoformat()}" in str(failed[0].step_failure_data.error)
    error = str(failed[0].step_failure_data.error)
    assert "IncompletePullError" in error
    assert pipeline.table(adjustments) == []
    assert pipeline.table(discrepancies) == []
    return error


def test_executor_is_chosen_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon_pipeline.defs.executor import celery_config, executor_from_env
    from recon_pipeline.errors import ConfigError

    assert executor_from_env() is dg.in_process_executor
    monkeypatch.setenv("RECON_EXECUTOR", "multiprocess")
    assert executor_from_env() is dg.multiprocess_executor
    monkeypatch.setenv("RECON_EXECUTOR", "k8s")
    assert executor_from_env() is importlib.import_module("dagster_k8s").k8s_job_executor
    monkeypatch.setitem(sys.modules, "dagster_k8s", None)  # as if not installed: import fails
    with pytest.raises(ConfigError, match="dagster-k8s"):
        executor_from_env()
    monkeypatch.setenv("RECON_EXECUTOR", "celery")
    monkeypatch.setenv("RECON_CELERY_QUEUE", "recon-nightly")
    with pytest.raises(ConfigError, match="RECON_CELERY_BROKER_URL"):  # never a silent localhost default
        executor_from_env()
    monkeypatch.setenv("RECON_CELERY_BROKER_URL", "pyamqp://guest:guest@127.0.0.1:5672//")
    celery = executor_from_env()
    # Configured, so runs without `execution:` run config (schedules, sensors, the CLI) reach the workers.
    assert celery.name == "celery" and celery is not importlib.import_module("dagster_celery").celery_executor
    assert celery_config() == {
        "broker": {"env": "RECON_CELERY_BROKER_URL"},  # resolved when a run starts, never in run config
        "backend": "rpc://",
        "config_source": {"task_default_queue": "recon-nightly"},
    }
    monkeypatch.setenv("RECON_EXECUTOR", "spark")
    with pytest.raises(ConfigError, match="RECON_EXECUTOR"):
        executor_from_env()


@pytest.fixture
def razorpay_pipeline(sqlite_url: str) -> Iterator[SeededPipeline]:
    with seeded(sqlite_url, "razorpay") as pipeline:
        yield pipeline


@pytest.mark.slow  # Dagster runs
def test_razorpay_fees_are_provisional_until_the_night_settles_then_the_settled_fee_is_reconciled(
    razorpay_pipeline: SeededPipeline,
) -> None:
    pipeline, prop = razorpay_pipeline, razorpay_pipeline.properties[0]
    store, window = pipeline.world.store, night_window(NIGHT, prop.timezone, prop.night_cutoff)
    booked = next(e for e in pipeline.world.ledger_entries if e["kind"] == "fee")  # an ordinary booking's
    charge_id, booked_fee = booked["provider_record_id"], -booked["amount_minor"]
    store.settled_fees[charge_id] = booked_fee + 700  # Razorpay's settlement books a different fee

    def fee_rows(result: dg.ExecuteInProcessResult) -> dict[str, tuple[int, str]]:
        """The fee rows the run's pull saw: the same pull, through the same client, right after it."""
        assert result.success
        account = PropertyAccount(prop.property_id, prop.provider_account, (prop.property_id,))
        frame = pipeline.resources["provider"].adapter().pull_claimed(account, window.start, window.end)
        return {
            r.provider_record_id: (r.amount_minor, r.status) for r in frame[frame.kind == "fee"].itertuples()
        }

    store.clock = lambda: (window.end + timedelta(hours=8)).timestamp()  # the morning after: not settled
    fresh = fee_rows(pipeline.materialize(prop.property_id))
    assert {status for _amount, status in fresh.values()} == {FEE_PROVISIONAL}
    assert fresh[charge_id] == (-booked_fee, FEE_PROVISIONAL)
    assert pipeline.found(prop.property_id) == pipeline.planted(prop.property_id)

    store.clock = lambda: (window.end + timedelta(days=3)).timestamp()  # the lookback re-run: settled
    settled = fee_rows(pipeline.materialize(prop.property_id))
    assert {status for _amount, status in settled.values()} == {FEE_SETTLED}
    assert settled[charge_id] == (-(booked_fee + 700), FEE_SETTLED)
    assert {i: amount for i, (amount, _s) in settled.items()} == {
        i: amount for i, (amount, _s) in fresh.items()
    } | {charge_id: -(booked_fee + 700)}
    planted = pipeline.planted(prop.property_id)
    assert pipeline.found(prop.property_id) == {**planted, "amount_mismatch": planted["amount_mismatch"] + 1}
    with pipeline.engine.connect() as connection:
        finding = connection.execute(
            select(
                discrepancies.c.category,
                discrepancies.c.provider_amount_minor,
                discrepancies.c.ledger_amount_minor,
                discrepancies.c.difference_minor,
            ).where(discrepancies.c.provider_record_id == charge_id)
        ).one()
    assert tuple(finding) == ("amount_mismatch", -(booked_fee + 700), -booked_fee, -700)


@pytest.mark.slow  # Dagster runs
def test_razorpay_a_settlement_recon_that_cannot_be_read_fails_the_partition(
    razorpay_pipeline: SeededPipeline,
) -> None:
    razorpay_pipeline.faults(fail_after_requests=1, path_prefix=RECON_PATH)
    assert RECON_PATH in assert_pull_failed_and_nothing_written(razorpay_pipeline)


def test_properties_sharing_the_platform_account_and_window_are_pulled_once(sqlite_url: str) -> None:
    """Two properties on the platform account (attributed by metadata) with the same night window: a batch
    of both reads the account's window once and splits it, where two runs read it twice; each property
    still gets exactly its own findings."""
    lisbon = next(p for p in DEMO_PROPERTIES if p.provider_account is None)
    annex = replace(lisbon, property_id="porto-annex", name="Porto Annex")  # same zone, own ids
    with seeded(sqlite_url, properties=(lisbon, annex)) as pipeline:

        def charge_list_requests(*property_ids: str) -> int:
            httpx.post(f"{pipeline.simulator.base_url}/_simulator/reset-stats", timeout=5).raise_for_status()
            assert pipeline.materialize(*property_ids).success
            return int(pipeline.stats()["requests_by_path"].get("/v1/charges", 0))

        apart = charge_list_requests(lisbon.property_id) + charge_list_requests(annex.property_id)
        together = charge_list_requests(lisbon.property_id, annex.property_id)
        assert together > 2  # the shared window spans several pages
        assert 2 * together == apart
        for prop in (lisbon, annex):
            assert pipeline.found(prop.property_id) == pipeline.planted(prop.property_id)
