"""Cross-night views over ``discrepancies``: unpartitioned assets an analyst opens first each morning.

- ``open_discrepancies_overview``: unresolved (open or acknowledged) findings of every property and
  night by age bucket, property, category and currency;
- ``orphaned_payments_overview``: unresolved orphaned captured payments with their age and booking.

Both are shown as markdown in the UI and write no file: ``recon report overview`` renders them as CSV
on demand (``reports.render``), on any host, from the same queries.

Refresh: ``reports_automation_sensor`` (running by default) evaluates ``REFRESH_CONDITION``: a view is
requested once any ``discrepancy_report`` partition was materialized since the view's last run, and
once a day at ``DAILY_REFRESH_CRON`` (ages grow without new reports), but never while a report
partition or the view itself is still running, so a backfill of many nights refreshes it once at the
end. Dagster's ``eager()`` would never fire here: it waits for *every* upstream partition, and most
property × night partitions are never materialized.
"""

from datetime import UTC, datetime

import dagster as dg

from recon_pipeline.defs.assets import DISCREPANCY_REPORT
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.reports.overview import (
    by_age_markdown,
    open_overview,
    orphans_markdown,
    orphans_overview,
    overview_markdown,
)

GROUP = "reports"
DAILY_REFRESH_CRON = "0 6 * * *"  # UTC

# since_last_handled() spelled out: Dagster's own typing rejects it on an asset-only operand.
_HANDLED = (
    dg.AutomationCondition.newly_requested()
    | dg.AutomationCondition.newly_updated()
    | dg.AutomationCondition.initial_evaluation()
)
REFRESH_CONDITION = (
    (
        dg.AutomationCondition.any_deps_updated()
        | dg.AutomationCondition.cron_tick_passed(DAILY_REFRESH_CRON, "UTC")
    ).since(_HANDLED)
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("after new discrepancy reports, and daily")


@dg.asset(
    deps=[DISCREPANCY_REPORT],
    group_name=GROUP,
    kinds={"sql"},
    automation_condition=REFRESH_CONDITION,
)
def open_discrepancies_overview(
    context: dg.AssetExecutionContext, recon_db: ReconDatabase
) -> dg.MaterializeResult:
    """Unresolved findings of every night by age, property, category and currency (counts, amounts)."""
    as_of = datetime.now(UTC).date()
    with recon_db.engine().connect() as connection:
        overview, findings = open_overview(connection, as_of)
    context.log.info(f"{findings} unresolved findings in {len(overview)} overview rows")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(overview),
            "as_of": as_of.isoformat(),
            "unresolved_findings": findings,
            "by_age": dg.MetadataValue.md(by_age_markdown(overview)),
            "overview": dg.MetadataValue.md(overview_markdown(overview)),
        }
    )


@dg.asset(
    deps=[DISCREPANCY_REPORT],
    group_name=GROUP,
    kinds={"sql"},
    automation_condition=REFRESH_CONDITION,
)
def orphaned_payments_overview(
    context: dg.AssetExecutionContext, recon_db: ReconDatabase
) -> dg.MaterializeResult:
    """Unresolved orphaned captured payments, oldest first, with the booking's status now."""
    now = datetime.now(UTC)
    with recon_db.engine().connect() as connection:
        orphans = orphans_overview(connection, now)
    context.log.info(f"{len(orphans)} unresolved orphaned captured payments")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(orphans),
            "as_of": now.isoformat(timespec="seconds"),
            "orphaned_payments": dg.MetadataValue.md(orphans_markdown(orphans)),
        }
    )


reports_automation_sensor = dg.AutomationConditionSensorDefinition(
    "reports_automation_sensor",
    target=dg.AssetSelection.groups(GROUP),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
    description="Refreshes the cross-night overviews after new discrepancy reports, and once a day.",
)

summary_assets = [open_discrepancies_overview, orphaned_payments_overview]
