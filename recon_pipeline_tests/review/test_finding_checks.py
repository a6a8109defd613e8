"""The review checks inside real reconcile_night runs: the blocking unexplained-amount check and the
orphan check, their thresholds and severities, and what a retry of a failed run re-executes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import func, select

from recon_pipeline.db.schema import discrepancies
from recon_pipeline.defs.batches import batch_run_config
from recon_pipeline.review.limits import judge_orphans, judge_unexplained
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, asset_metadata
from recon_pipeline_tests.support.review_commands import KYOTO, LISBON, eur, jpy, recon

UNEXPLAINED = "unexplained_discrepancy_amount"
ORPHANS = "orphaned_payment_age"
UNEXPLAINED_STEP = f"discrepancy_report_{UNEXPLAINED}"
ORPHANS_STEP = f"discrepancy_report_{ORPHANS}"


def reconcile_night_job() -> dg.JobDefinition:
    """The code location's reconcile_night job (reconstructable, so its runs can be re-executed)."""
    from recon_pipeline.definitions import build_definitions

    return build_definitions().resolve_job_def("reconcile_night")


def run_night(instance: dg.DagsterInstance, *property_ids: str) -> dg.ExecuteInProcessResult:
    """A run of the night's partition for a batch of ``property_ids``, as the schedule requests it."""
    return reconcile_night_job().execute_in_process(
        partition_key=NIGHT.isoformat(),
        run_config=batch_run_config(property_ids),
        instance=instance,
        raise_on_error=False,
    )


def reexecute(
    instance: dg.DagsterInstance, run_id: str, steps: list[str] | None = None
) -> dg.ExecuteJobResult:
    """Re-execute a run as the run-retry daemon does (from its failure, with the parent's tags and run
    config, so the same night and batch), or only ``steps``."""
    options = (
        dg.ReexecutionOptions.from_failure(run_id, instance)
        if steps is None
        else dg.ReexecutionOptions(run_id, step_selection=steps)
    )
    parent = instance.get_run_by_id(run_id)
    assert parent is not None
    return dg.execute_job(
        dg.reconstructable(reconcile_night_job), instance, tags=parent.tags, reexecution_options=options
    )


def evaluations(
    result: dg.ExecuteInProcessResult | dg.ExecuteJobResult,
) -> dict[str, dg.AssetCheckEvaluation]:
    return {evaluation.check_name: evaluation for evaluation in result.get_asset_check_evaluations()}


def executed_steps(result: dg.ExecuteInProcessResult | dg.ExecuteJobResult) -> set[str]:
    return {event.step_key for event in result.all_events if event.is_step_start and event.step_key}


def open_amount(pipeline: SeededPipeline, property_id: str) -> int:
    """Sum of |difference| of the property's open findings, computed here in SQL."""
    with pipeline.engine.connect() as connection:
        query = select(func.sum(func.abs(discrepancies.c.difference_minor))).where(
            discrepancies.c.property_id == property_id, discrepancies.c.review_status == "open"
        )
        return int(connection.execute(query).scalar_one())


def metadata(evaluation: dg.AssetCheckEvaluation) -> dict[str, Any]:
    return {key: value.value for key, value in evaluation.metadata.items()}


@pytest.fixture
def job_env(seeded_pipeline: SeededPipeline, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The code location's resources read these when a run starts; `recon` reads the database one."""
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    monkeypatch.setenv("RECON_PROVIDER", "simulator")
    monkeypatch.setenv("RECON_PROVIDER_BASE_URL", seeded_pipeline.simulator.base_url)
    monkeypatch.delenv("RECON_UNEXPLAINED_THRESHOLD_MINOR", raising=False)
    monkeypatch.delenv("RECON_ORPHAN_ERROR_HOURS", raising=False)


@pytest.mark.usefixtures("job_env")
def test_blocking_check_fails_the_run_above_the_threshold_and_passes_at_or_below(
    seeded_pipeline: SeededPipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = seeded_pipeline.instance
    assert recon(capsys, "findings", "threshold", KYOTO, "--set", "0")[0] == 0
    first = run_night(instance, KYOTO)
    assert not first.success
    unexplained = evaluations(first)[UNEXPLAINED]
    amount = open_amount(seeded_pipeline, KYOTO)
    assert not unexplained.passed and unexplained.severity == dg.AssetCheckSeverity.ERROR
    assert metadata(unexplained) | {"amount": jpy(amount)} == {
        "properties_judged": 1,
        "over_threshold": f"- {KYOTO}: JPY",
        "property": KYOTO,
        "currency": "JPY",
        "amount_minor": amount,
        "amount": jpy(amount),  # whole yen
        "threshold_minor": 0,
        "threshold": "0 JPY",
        "threshold_source": "property",
        "exceeded_in": "JPY",
        "unexplained/JPY": jpy(amount),
    }
    failed = [event for event in first.all_events if event.is_step_failure]
    assert [event.step_key for event in failed] == [UNEXPLAINED_STEP]
    assert "DagsterAssetCheckFailedError" in str(failed[0].step_failure_data.error)
    # The report itself was written: the check judges it, it does not undo it.
    assert asset_metadata(first, "discrepancy_report")["properties"] == 1

    # A retry re-executes from the failure: only the check, no provider call; at the threshold it passes.
    assert recon(capsys, "findings", "threshold", KYOTO, "--set", str(amount))[0] == 0
    requests = seeded_pipeline.stats()["api_requests"]
    retry = reexecute(instance, first.run_id)
    assert retry.success and executed_steps(retry) == {UNEXPLAINED_STEP}
    assert seeded_pipeline.stats()["api_requests"] == requests
    assert evaluations(retry)[UNEXPLAINED].passed

    # One unit above it fails; acknowledging the largest finding explains enough to pass again.
    assert recon(capsys, "findings", "threshold", KYOTO, "--set", str(amount - 1))[0] == 0
    assert not reexecute(instance, first.run_id, [UNEXPLAINED_STEP]).success
    with seeded_pipeline.engine.connect() as connection:
        largest = connection.execute(
            select(discrepancies.c.discrepancy_id, discrepancies.c.difference_minor)
            .where(discrepancies.c.property_id == KYOTO)
            .order_by(func.abs(discrepancies.c.difference_minor).desc())
        ).first()
    assert largest is not None
    code, _, _ = recon(capsys, "findings", "ack", str(largest[0]), "--by", "aiko", "--note", "known")
    assert code == 0
    passing = reexecute(instance, first.run_id, [UNEXPLAINED_STEP])
    assert passing.success
    assert metadata(evaluations(passing)[UNEXPLAINED])["amount_minor"] == amount - abs(largest[1])


@pytest.mark.usefixtures("job_env")
def test_default_threshold_passes_the_demo_night_and_orphans_are_error_then_warn_then_pass(
    seeded_pipeline: SeededPipeline, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = seeded_pipeline.instance
    result = run_night(instance, LISBON)
    assert result.success  # the non-blocking orphan check fails without failing the run
    checks = evaluations(result)
    amount = open_amount(seeded_pipeline, LISBON)
    assert checks[UNEXPLAINED].passed
    assert metadata(checks[UNEXPLAINED])["amount"] == eur(amount)
    assert metadata(checks[UNEXPLAINED])["threshold"] == "10,000.00 EUR"  # the documented default
    assert metadata(checks[UNEXPLAINED])["threshold_source"] == "default"
    assert metadata(checks[UNEXPLAINED])["over_threshold"] == "none"

    with seeded_pipeline.engine.connect() as connection:
        orphans = connection.execute(
            select(discrepancies.c.discrepancy_id, discrepancies.c.difference_minor).where(
                discrepancies.c.property_id == LISBON,
                discrepancies.c.category == "orphaned_captured_payment",
            )
        ).all()
    assert len(orphans) == seeded_pipeline.planted(LISBON)["orphaned_captured_payment"]
    # Night 2026-11-30 closed more than a day ago: its unreviewed orphans are an ERROR.
    orphan_check = checks[ORPHANS]
    assert not orphan_check.passed and orphan_check.severity == dg.AssetCheckSeverity.ERROR
    assert metadata(orphan_check)["open_orphans"] == len(orphans)
    assert metadata(orphan_check)["properties_judged"] == 1
    assert metadata(orphan_check)["amount/EUR"] == eur(sum(amount for _, amount in orphans))
    assert metadata(orphan_check)["hours_since_night_closed"] > 24
    assert all(eur(amount) in str(metadata(orphan_check)["payments"]) for _, amount in orphans)

    monkeypatch.setenv("RECON_ORPHAN_ERROR_HOURS", str(100 * 365 * 24))
    warned = evaluations(reexecute(instance, result.run_id, [ORPHANS_STEP]))[ORPHANS]
    assert not warned.passed and warned.severity == dg.AssetCheckSeverity.WARN

    ids = [str(finding_id) for finding_id, _ in orphans]
    assert recon(capsys, "findings", "ack", *ids, "--by", "rui", "--note", "calling guests")[0] == 0
    assert evaluations(reexecute(instance, result.run_id, [ORPHANS_STEP]))[ORPHANS].passed


@pytest.mark.usefixtures("job_env")
def test_the_checks_judge_every_property_of_the_batch(
    seeded_pipeline: SeededPipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    """One property over its threshold fails the batch's run and is the one shown; the others are judged
    too, and the orphans of every property are counted."""
    assert recon(capsys, "findings", "threshold", KYOTO, "--set", "0")[0] == 0
    result = run_night(seeded_pipeline.instance, LISBON, KYOTO)
    assert not result.success
    assert [e.step_key for e in result.all_events if e.is_step_failure] == [UNEXPLAINED_STEP]
    unexplained = metadata(evaluations(result)[UNEXPLAINED])
    assert unexplained["properties_judged"] == 2
    assert unexplained["over_threshold"] == f"- {KYOTO}: JPY"
    assert (unexplained["property"], unexplained["amount_minor"]) == (
        KYOTO,
        open_amount(seeded_pipeline, KYOTO),
    )
    orphan_check = metadata(evaluations(result)[ORPHANS])
    assert orphan_check["properties_judged"] == 2
    assert orphan_check["open_orphans"] == sum(
        seeded_pipeline.planted(p).get("orphaned_captured_payment", 0) for p in (LISBON, KYOTO)
    )


def test_verdicts_at_their_boundaries() -> None:
    at = judge_unexplained({"JPY": 5_000, "EUR": 0}, 5_000, "JPY")
    assert at.passed and at.amounts_minor == {"JPY": 5_000} and at.currency == "JPY"
    above = judge_unexplained({"JPY": 5_001, "EUR": 7_000}, 5_000, "JPY")
    assert not above.passed and above.exceeded == ["EUR", "JPY"] and above.currency == "EUR"
    nothing = judge_unexplained({}, 0, "EUR")
    assert nothing.passed and (nothing.currency, nothing.amount_minor) == ("EUR", 0)

    end = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
    day = timedelta(hours=24)
    assert judge_orphans(0, end, end + 2 * day, day).passed
    fresh = judge_orphans(2, end, end + day, day)
    assert not fresh.passed and not fresh.is_error
    late = judge_orphans(2, end, end + day + timedelta(seconds=1), day)
    assert not late.passed and late.is_error
