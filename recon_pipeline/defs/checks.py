"""Freshness and SLO checks, visible on the asset pages of the UI and evaluated every 15 minutes.

- ``previous_night_reconciled``: each property's latest closed night (the one the nightly schedule
  requested last) must have a materialized ``discrepancy_report`` by the morning close (local time,
  ``RECON_MORNING_CLOSE``, default 09:00) after it; until then the night before it must. A property
  whose ``properties`` row is invalid fails the check by name; the others are still judged.
- ``oldest_pending_event_age`` and ``oldest_open_posting_age``: the recovery SLO of the event queue and
  of the posting outbox (``RECON_QUEUE_SLO_S``, default 900 s): the oldest open job's age is a WARN from
  half the SLO, an ERROR from the SLO; young retries, however many, pass. Events dead-lettered and
  postings failed for good fail it as a WARN.

Per partition, in every ``reconcile_night`` run (checks of the job's selected assets run with them):

- ``unexplained_discrepancy_amount`` (blocking, ERROR): the night's open findings may add up to at most
  the property's threshold per currency (``recon findings threshold``, else
  ``RECON_UNEXPLAINED_THRESHOLD_MINOR``). A failure fails the run; with ``run_retries`` the daemon
  re-executes it from the failure, which re-runs only this check (no provider calls), at most
  ``max_retries`` times: acknowledging or resolving the findings in between lets the retry pass.
- ``orphaned_payment_age`` (not blocking): the night's open ``orphaned_captured_payment`` findings
  (captured, past the grace, booking still not confirmed, not acknowledged or resolved) are a WARN, an
  ERROR once the night closed more than ``RECON_ORPHAN_ERROR_HOURS`` (24) ago. It reads the rows
  ``findings`` wrote, hence its place on the report after it: the review status lives there, and an
  unpartitioned check on ``orphaned_captured_payments`` could only load every partition of it
  (partitioned checks are a preview in Dagster 1.13).
"""

from collections import Counter
from collections.abc import Callable, Container
from datetime import UTC, date, datetime, timedelta

import dagster as dg
from sqlalchemy import Connection, RowMapping

from recon_pipeline.batches.coverage import night_coverage
from recon_pipeline.batches.nightly import late_night, previous_nights
from recon_pipeline.categories import ORPHANED_CAPTURED_PAYMENT
from recon_pipeline.config import text_from_env
from recon_pipeline.defs.assets import DISCREPANCY_REPORT
from recon_pipeline.defs.batches import QUEUED_BATCHES_TAG, batch_properties
from recon_pipeline.defs.partitions import partition_night
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.ledger.queries import list_properties, load_property
from recon_pipeline.metrics.queues import QueueState, read_events_queue, read_postings_queue
from recon_pipeline.metrics.slo import SloLevel, judge_oldest_age, queue_slo_s
from recon_pipeline.nights import night_window, parse_cutoff
from recon_pipeline.properties import PropertyRow, split_valid_properties
from recon_pipeline.review.limits import OrphanVerdict, judge_orphans, judge_unexplained, orphan_error_after
from recon_pipeline.review.render import findings_markdown, money
from recon_pipeline.review.store import Threshold, threshold_for
from recon_pipeline.storage.findings import (
    OPEN,
    FindingFilter,
    count_findings,
    list_findings,
    unexplained_amounts,
)
from recon_pipeline.storage.night_outcomes import load_outcomes, succeeded_nights

ORPHANS_LISTED = 20

payment_events_backlog = dg.AssetSpec(
    "payment_events_backlog",
    group_name="events",
    description="The queue of received payment events awaiting processing (payment_event_processing).",
    kinds={"sql"},
)

posting_outbox = dg.AssetSpec(
    "posting_outbox",
    group_name="postings",
    description="Approved adjustments awaiting their posting to the PMS (posting_outbox).",
    kinds={"sql"},
)


@dg.asset_check(
    asset=DISCREPANCY_REPORT,
    description="Each property's latest closed night is reconciled by the morning close, and no "
    "properties row is invalid.",
)
def previous_night_reconciled(
    context: dg.AssetCheckExecutionContext, recon_db: ReconDatabase
) -> dg.AssetCheckResult:
    morning_close = parse_cutoff(text_from_env("RECON_MORNING_CLOSE", "09:00"), "RECON_MORNING_CLOSE")
    now = datetime.now(UTC)
    with recon_db.engine().connect() as connection:
        properties, invalid = split_valid_properties(list_properties(connection))
        judged = previous_nights(properties, now, morning_close)
        since = min((p.night for p in judged), default=now.date()) - timedelta(days=1)
        reconciled = succeeded_nights(connection, since.isoformat())
    for error in invalid:
        context.log.error(f"not judged: {error}")
    late = [
        f"{previous.property_id} {night}"
        for previous in judged
        if (night := late_night(previous, now, _reconciled_in(reconciled, previous.property_id)))
    ]
    return dg.AssetCheckResult(
        passed=not late and not invalid,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "morning_close_local": morning_close.strftime("%H:%M"),
            "properties_judged": len(judged),
            "late": dg.MetadataValue.md("\n".join(f"- {item}" for item in late) or "none"),
            "invalid_properties": dg.MetadataValue.md("\n".join(f"- {error}" for error in invalid) or "none"),
        },
    )


def _reconciled_in(reconciled: Container[tuple[str, str]], property_id: str) -> Callable[[date], bool]:
    """Whether a night of the property was last reconciled successfully (``night_reconciliations``)."""
    return lambda night: (property_id, night.isoformat()) in reconciled


def _queue_slo_check(
    name: str, asset: dg.AssetSpec, read: Callable[[Connection], QueueState], what: str
) -> dg.AssetChecksDefinition:
    """The recovery-SLO check of one queue: judged on its oldest open job's age (``metrics.slo``), so a
    burst of young retries passes; rows given up for good (dead, failed) fail it as a WARN."""

    @dg.asset_check(
        name=name,
        asset=asset.key,
        description=f"No {what} waits long enough to threaten the recovery target (15 minutes unless "
        "configured): a warning from half of it, an error past it; none is given up for good.",
    )
    def check(recon_db: ReconDatabase) -> dg.AssetCheckResult:
        slo_s = queue_slo_s()
        now = datetime.now(UTC)
        with recon_db.engine().connect() as connection:
            queue = read(connection)
        verdict = judge_oldest_age(queue.oldest_age_s(now), slo_s)
        return dg.AssetCheckResult(
            passed=verdict.level is SloLevel.OK and queue.given_up == 0,
            severity=dg.AssetCheckSeverity.ERROR
            if verdict.level is SloLevel.BREACHED
            else dg.AssetCheckSeverity.WARN,
            metadata={
                "slo_level": verdict.level.value,
                "slo_s": slo_s,
                "warn_at_s": verdict.warn_at_s,
                "given_up": queue.given_up,
                **queue.metadata(now),
            },
        )

    return check


oldest_pending_event_age = _queue_slo_check(
    "oldest_pending_event_age", payment_events_backlog, read_events_queue, "payment event"
)
oldest_open_posting_age = _queue_slo_check(
    "oldest_open_posting_age", posting_outbox, read_postings_queue, "approved adjustment's posting"
)


def _batch_rows(context: dg.AssetCheckExecutionContext, connection: Connection) -> list[PropertyRow]:
    """The properties of the run's batch (its run config; empty: every valid property), validated; an
    unknown or invalid one raises naming it (the batch's step already failed on it). A run that queued
    the night's batches reconciled none: each batch run judges its own."""
    run = context.instance.get_run_by_id(context.run.run_id)
    if run is not None and QUEUED_BATCHES_TAG in run.tags:
        return []
    named = batch_properties(context.run.run_config)
    if not named:
        return split_valid_properties(list_properties(connection))[0]
    return [load_property(connection, property_id) for property_id in named]


@dg.asset_check(
    asset=DISCREPANCY_REPORT,
    blocking=True,
    description="Each property's open findings of the night add up to at most its threshold, per "
    "currency. Acknowledge or resolve what is explained (`recon findings ack|resolve`), then "
    "re-execute.",
)
def unexplained_discrepancy_amount(
    context: dg.AssetCheckExecutionContext, recon_db: ReconDatabase
) -> dg.AssetCheckResult:
    """Judged per property of the run's batch; the metadata shows the first property over its threshold
    (else the one with the largest amount) and lists every property over."""
    night = partition_night(context.partition_key)
    judged = []
    with recon_db.engine().connect() as connection:
        for row in _batch_rows(context, connection):
            amounts = unexplained_amounts(connection, row.property_id, night)
            threshold = threshold_for(connection, row.property_id)
            judged.append(
                (row.property_id, judge_unexplained(amounts, threshold.minor, row.currency), threshold)
            )
    over = [(p, verdict) for p, verdict, _ in judged if not verdict.passed]
    property_id, verdict, threshold = max(
        judged,
        key=lambda j: (not j[1].passed, j[1].amount_minor / max(j[2].minor, 1)),
        default=("", judge_unexplained({}, 0, ""), Threshold(0, "default")),
    )
    return dg.AssetCheckResult(
        passed=not over,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "properties_judged": len(judged),
            "over_threshold": dg.MetadataValue.md(
                "\n".join(f"- {p}: {', '.join(v.exceeded)}" for p, v in over) or "none"
            ),
            "property": property_id,
            "currency": verdict.currency,
            "amount_minor": verdict.amount_minor,
            "amount": money(verdict.amount_minor, verdict.currency),
            "threshold_minor": threshold.minor,
            "threshold": money(threshold.minor, verdict.currency),
            "threshold_source": threshold.source,
            "exceeded_in": ", ".join(verdict.exceeded) or "none",
            **{f"unexplained/{cur}": money(amount, cur) for cur, amount in verdict.amounts_minor.items()},
        },
    )


@dg.asset_check(
    asset=DISCREPANCY_REPORT,
    description="No captured payment of the night waits, unreviewed, for its booking to be confirmed "
    "past the grace: a warning, an error once the night closed more than a day ago (configurable).",
)
def orphaned_payment_age(
    context: dg.AssetCheckExecutionContext, recon_db: ReconDatabase
) -> dg.AssetCheckResult:
    """Over the run's batch: open orphans counted and summed per currency, the night closed longest ago
    judged (an ERROR for any property past the limit)."""
    night = partition_night(context.partition_key)
    now, error_after = datetime.now(UTC), orphan_error_after()
    count, amounts = 0, Counter[str]()
    shown: list[RowMapping] = []
    verdicts: list[OrphanVerdict] = []
    with recon_db.engine().connect() as connection:
        for row in _batch_rows(context, connection):
            orphans = FindingFilter(
                row.property_id, night, ORPHANED_CAPTURED_PAYMENT, OPEN, cleared=False
            )
            found = count_findings(connection, orphans)
            window = night_window(night, row.timezone, row.night_cutoff)
            verdicts.append(judge_orphans(found, window.end, now, error_after))
            if found:
                count += found
                shown += list_findings(connection, orphans, ORPHANS_LISTED - len(shown))
                amounts.update(
                    unexplained_amounts(connection, row.property_id, night, ORPHANED_CAPTURED_PAYMENT)
                )
    worst = max(verdicts, key=lambda v: (not v.passed, v.is_error, v.closed_ago), default=None)
    return dg.AssetCheckResult(
        passed=all(v.passed for v in verdicts),
        severity=dg.AssetCheckSeverity.ERROR
        if any(v.is_error for v in verdicts)
        else dg.AssetCheckSeverity.WARN,
        metadata={
            "open_orphans": count,
            "properties_judged": len(verdicts),
            "hours_since_night_closed": round(worst.closed_ago.total_seconds() / 3600, 1) if worst else 0.0,
            "error_after_hours": error_after.total_seconds() / 3600,
            **{f"amount/{currency}": money(amount, currency) for currency, amount in sorted(amounts.items())},
            "payments": dg.MetadataValue.md(findings_markdown(shown)),
        },
    )


@dg.asset_check(
    asset=DISCREPANCY_REPORT,
    description="Every property of the night is reconciled: a night is done only when none is missing "
    "or failed, whichever runs reconciled them.",
)
def night_reconciled(context: dg.AssetCheckExecutionContext, recon_db: ReconDatabase) -> dg.AssetCheckResult:
    """Judged over the whole night, not the run's batch: the valid properties against the night's latest
    outcomes (``night_reconciliations``), naming those missing or failed."""
    night = partition_night(context.partition_key)
    with recon_db.engine().connect() as connection:
        properties, _invalid = split_valid_properties(list_properties(connection))
        outcomes = load_outcomes(connection, night)
    coverage = night_coverage(night, [p.property_id for p in properties], outcomes)
    return dg.AssetCheckResult(
        passed=coverage.whole,
        severity=dg.AssetCheckSeverity.ERROR,
        description=coverage.sentence(),
        metadata={
            "properties_reconciled": len(coverage.reconciled),
            "properties_missing": len(coverage.missing),
            "properties_failed": len(coverage.failed),
            "missing": dg.MetadataValue.md("\n".join(f"- {p}" for p in coverage.missing) or "none"),
            "failed": dg.MetadataValue.md("\n".join(f"- {p}" for p in coverage.failed) or "none"),
        },
    )


finding_checks = [unexplained_discrepancy_amount, orphaned_payment_age, night_reconciled]

slo_checks = [previous_night_reconciled, oldest_pending_event_age, oldest_open_posting_age]
slo_checks_job = dg.define_asset_job("slo_checks", selection=dg.AssetSelection.checks(*slo_checks))
slo_checks_schedule = dg.ScheduleDefinition(
    job=slo_checks_job,
    cron_schedule="*/15 * * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every 15 minutes: whether each property's last closed night is reconciled by the morning "
    "close, and whether the event queue and the posting outbox keep their recovery target.",
)
