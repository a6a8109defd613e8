"""Cross-night views over ``discrepancies``: unpartitioned assets an analyst opens first each morning.

- ``open_discrepancies_overview``: unresolved (open or acknowledged) findings of every property and
  night by age bucket, property, category and currency;
- ``orphaned_payments_overview``: unresolved orphaned captured payments with their age and booking.

Both are written to ``RECON_HOME/reports/_overview/`` as CSV and shown as markdown in the UI.

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
from recon_pipeline.reports.exports import write_csv
from recon_pipeline.reports.overview import (
    by_age_markdown,
    orphans_markdown,
    orphans_with_age,
    overview_markdown,
    unresolved_by_age,
)
from recon_pipeline.reports.paths import overview_folder
from recon_pipeline.reports.queries import unresolved_findings, unresolved_orphaned_payments

GROUP = "reports"
DAILY_REFRESH_CRON = "0 6 * * *"  # UTC
OPEN_CSV = "open_discrepancies.csv"
ORPHANS_CSV = "orphaned_payments.csv"

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
    kinds={"sql", "csv"},
    automation_condition=REFRESH_CONDITION,
)
def open_discrepancies_overview(
    context: dg.AssetExecutionContext, recon_db: ReconDatabase
) -> dg.MaterializeResult:
    """Unresolved findings of every night by age, property, category and currency (counts, amounts)."""
    as_of = datetime.now(UTC).date()
    with recon_db.engine().connect() as connection:
        findings = unresolved_findings(connection)
    overview = unresolved_by_age(findings, as_of)
    path = write_csv(overview, overview_folder() / OPEN_CSV)
    context.log.info(f"{len(findings)} unresolved findings in {len(overview)} overview rows")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(overview),
            "as_of": as_of.isoformat(),
            "unresolved_findings": len(findings),
            "by_age": dg.MetadataValue.md(by_age_markdown(overview)),
            "overview": dg.MetadataValue.md(overview_markdown(overview)),
            "report_csv": dg.MetadataValue.path(str(path)),
        }
    )


@dg.asset(
    deps=[DISCREPANCY_REPORT],
    group_name=GROUP,
    kinds={"sql", "csv"},
    automation_condition=REFRESH_CONDITION,
)
def orphaned_payments_overview(
    context: dg.AssetExecutionContext, recon_db: ReconDatabase
) -> dg.MaterializeResult:
    """Unresolved orphaned captured payments, oldest first, with the booking's status now."""
    now = datetime.now(UTC)
    with recon_db.engine().connect() as connection:
        orphans = orphans_with_age(unresolved_orphaned_payments(connection), now)
    path = write_csv(orphans, overview_folder() / ORPHANS_CSV)
    context.log.info(f"{len(orphans)} unresolved orphaned captured payments")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(orphans),
            "as_of": now.isoformat(timespec="seconds"),
            "orphaned_payments": dg.MetadataValue.md(orphans_markdown(orphans)),
            "report_csv": dg.MetadataValue.path(str(path)),
        }
    )


reports_automation_sensor = dg.AutomationConditionSensorDefinition(
    "reports_automation_sensor",
    target=dg.AssetSelection.groups(GROUP),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
)

summary_assets = [open_discrepancies_overview, orphaned_payments_overview]
