"""Freshness and SLO checks, visible on the asset pages of the UI and evaluated every 15 minutes.

- ``previous_night_reconciled``: each property's latest night whose morning-close deadline (local time,
  ``RECON_MORNING_CLOSE``, default 09:00) has passed must have a materialized ``discrepancy_report``.
- ``oldest_pending_event_age``: no payment event may wait longer than ``RECON_MAX_PENDING_AGE_S``
  (default 900 s) to be processed; dead-lettered events are reported too.
"""

import os
from datetime import UTC, datetime

import dagster as dg

from recon_pipeline.config import positive_int_from_env
from recon_pipeline.defs.assets import discrepancy_report
from recon_pipeline.defs.partitions import PROPERTY_DIMENSION, PropertyNight
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.events.backlog import read_backlog
from recon_pipeline.ledger.queries import list_properties
from recon_pipeline.nightly import due_nights
from recon_pipeline.nights import parse_cutoff

payment_events_backlog = dg.AssetSpec(
    "payment_events_backlog",
    group_name="events",
    description="The queue of received payment events awaiting processing (payment_event_processing).",
    kinds={"sql"},
)


@dg.asset_check(asset=discrepancy_report, description="Yesterday's night is reconciled by the morning close.")
def previous_night_reconciled(
    context: dg.AssetCheckExecutionContext, recon_db: ReconDatabase
) -> dg.AssetCheckResult:
    morning_close = parse_cutoff(os.environ.get("RECON_MORNING_CLOSE", "09:00"))
    with recon_db.engine().connect() as connection:
        properties = list_properties(connection)
    partitioned = set(context.instance.get_dynamic_partitions(PROPERTY_DIMENSION))
    reconciled = context.instance.get_materialized_partitions(discrepancy_report.key)
    due = [
        (pid, night)
        for pid, night in due_nights(properties, datetime.now(UTC), morning_close)
        if pid in partitioned
    ]
    late = [
        f"{pid} {night}"
        for pid, night in due
        if str(PropertyNight(pid, night.isoformat()).partition_key) not in reconciled
    ]
    return dg.AssetCheckResult(
        passed=not late,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "morning_close_local": morning_close.strftime("%H:%M"),
            "properties_due": len(due),
            "late": dg.MetadataValue.md("\n".join(f"- {item}" for item in late) or "none"),
        },
    )


@dg.asset_check(
    asset=payment_events_backlog.key, description="No payment event waits too long to be processed."
)
def oldest_pending_event_age(recon_db: ReconDatabase) -> dg.AssetCheckResult:
    limit_s = positive_int_from_env("RECON_MAX_PENDING_AGE_S", 900)
    now = datetime.now(UTC)
    with recon_db.engine().connect() as connection:
        backlog = read_backlog(connection, now)
    age_s = backlog.oldest_age_s(now)
    too_old = age_s > limit_s
    return dg.AssetCheckResult(
        passed=not too_old and backlog.dead == 0,
        severity=dg.AssetCheckSeverity.ERROR if too_old else dg.AssetCheckSeverity.WARN,
        metadata={
            "oldest_pending_age_s": round(age_s, 1),
            "limit_s": limit_s,
            "waiting": backlog.waiting,
            "dead_lettered": backlog.dead,
        },
    )


slo_checks_job = dg.define_asset_job(
    "slo_checks", selection=dg.AssetSelection.checks(previous_night_reconciled, oldest_pending_event_age)
)
slo_checks_schedule = dg.ScheduleDefinition(
    job=slo_checks_job, cron_schedule="*/15 * * * *", default_status=dg.DefaultScheduleStatus.RUNNING
)
slo_checks = [previous_night_reconciled, oldest_pending_event_age]
