"""The reconciliation assets of one (property, night) partition: thin wrappers over the pure logic.

provider_records ─┐
ledger_records ───┴─> reconciliation ─┬─> adjustments
provider_records ──> orphaned_captured_payments ─┴─> discrepancy_report
"""

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import dagster as dg
import pandas as pd

from recon_pipeline.checkpoints import ADJUSTMENTS_BEFORE_COMMIT, ADJUSTMENTS_COMMITTED, reached
from recon_pipeline.db.results import save_discrepancies, sync_adjustments
from recon_pipeline.defs.concurrency import PROVIDER_POOL, provider_step_retry_policy
from recon_pipeline.defs.partitions import property_night, property_night_partitions
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.ledger.queries import (
    PropertyRow,
    list_properties,
    load_bookings,
    load_captured_payment_orders,
    load_ledger_records,
    load_payment_order_owners,
    load_property,
)
from recon_pipeline.ledger.validation import LedgerSplit, split_ledger_records
from recon_pipeline.nights import NightWindow, night_window
from recon_pipeline.providers.attribution import (
    attribute,
    reported_split,
    reports_unattributed,
    unclaimed_payment_ids,
)
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.records import empty_provider_records
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.reconcile.captured import captured_payments
from recon_pipeline.reconcile.diff import DiffResult, diff_night, unmatched_ledger_record_ids, with_findings
from recon_pipeline.reconcile.identity import canonical_ledger, name_booked_ids, payment_aliases
from recon_pipeline.reconcile.lifecycle import SUPERSEDED, WITHDRAWN
from recon_pipeline.reconcile.orphans import find_orphaned_captured_payments
from recon_pipeline.reconcile.report import build_night_report
from recon_pipeline.reconcile.unattributed import unattributed_findings
from recon_pipeline.reports.partition import export_partition

GROUP = "reconciliation"


@dataclass(frozen=True)
class NightTarget:
    """What one partition is about: the property's row, its night and the night's UTC window."""

    property_row: PropertyRow
    night: str
    window: NightWindow

    account: PropertyAccount


def night_target(context: dg.AssetExecutionContext, recon_db: ReconDatabase) -> NightTarget:
    """Resolve the partition key to the property's window and account (with every property sharing it),
    from the properties table."""
    key = property_night(context.partition_key)
    with recon_db.engine().connect() as connection:
        row = load_property(connection, key.property_id)
        sharing = tuple(
            other.property_id
            for other in list_properties(connection)
            if other.provider_account == row.provider_account
        )
    account = PropertyAccount(row.property_id, row.provider_account, sharing)
    return NightTarget(row, key.night, night_window(key.night, row.timezone, row.night_cutoff), account)


def window_metadata(target: NightTarget) -> dict[str, str]:
    return {
        "window_start_utc": target.window.start.isoformat(),
        "window_end_utc": target.window.end.isoformat(),
        "window_hours": f"{target.window.duration.total_seconds() / 3600:g}",
    }


@dg.asset(
    partitions_def=property_night_partitions,
    group_name=GROUP,
    pool=PROVIDER_POOL,
    retry_policy=provider_step_retry_policy(),
    kinds={"api", "pandas"},
)
def provider_records(
    context: dg.AssetExecutionContext, recon_db: ReconDatabase, provider: ProviderResource
) -> dg.Output[pd.DataFrame]:
    """Every charge, fee and refund the provider holds for the property's night; a partial pull fails.

    Records of an account several properties share are attributed (metadata, then payment_orders); the
    ones nobody owns stay in the frame with a null property_id only for the account's first property,
    which reports them."""
    target = night_target(context, recon_db)
    with provider.adapter() as adapter:
        claimed = adapter.pull_claimed(target.account, target.window.start, target.window.end)
    with recon_db.engine().connect() as connection:
        owners = load_payment_order_owners(connection, unclaimed_payment_ids(claimed))
    split = attribute(claimed, target.account, owners)
    frame = split.own
    if reports_unattributed(target.account) and len(split.unattributed):
        frame = pd.concat([frame, split.unattributed], ignore_index=True)
    context.log.info(
        f"pulled {len(split.own)} provider records for {target.property_row.property_id} {target.night}, "
        f"{len(split.unattributed)} attributable to no property"
    )
    return dg.Output(
        frame,
        metadata={
            "dagster/row_count": len(split.own),
            "unattributed": len(split.unattributed),
            **{f"rows/{kind}": int(n) for kind, n in split.own["kind"].value_counts().items()},
            # Fee rows by status: where a provider settles fees later, settled vs provisional.
            **{
                f"fees/{status}": int(n)
                for status, n in split.own.loc[split.own["kind"] == "fee", "status"].value_counts().items()
            },
            **window_metadata(target),
        },
    )


@dg.asset(partitions_def=property_night_partitions, group_name=GROUP, kinds={"sql", "pandas"})
def ledger_records(context: dg.AssetExecutionContext, recon_db: ReconDatabase) -> dg.Output[LedgerSplit]:
    """The PMS ledger entries of the night, with the adjacent nights' entries to spot timing differences;
    entries the contract forbids are split off as findings (``invalid_entries``), disputes deferred."""
    target = night_target(context, recon_db)
    with recon_db.engine().connect() as connection:
        ledger = split_ledger_records(
            load_ledger_records(connection, target.property_row.property_id, target.window)
        )
    frame = ledger.valid
    return dg.Output(
        ledger,
        metadata={
            "dagster/row_count": len(frame),
            "in_night": int(frame["in_night"].sum()),
            "adjacent_nights": int((~frame["in_night"]).sum()),
            "invalid_entries": len(ledger.invalid),
            "deferred_kinds": ledger.deferred,
            **window_metadata(target),
        },
    )


@dg.asset(
    partitions_def=property_night_partitions,
    group_name=GROUP,
    pool=PROVIDER_POOL,
    retry_policy=provider_step_retry_policy(),
    kinds={"pandas"},
)
def reconciliation(
    context: dg.AssetExecutionContext,
    recon_db: ReconDatabase,
    provider: ProviderResource,
    provider_records: pd.DataFrame,
    ledger_records: LedgerSplit,
) -> dg.Output[DiffResult]:
    """Diff of provider against ledger; ledger records absent from the pull are looked up by id first.

    Ledger ids are mapped to charge ids first (``identity.py``), so an entry booked by PaymentIntent or
    order id matches its charge; records nobody owns (``provider_records``) are unattributed findings, and
    invalid ledger entries join the findings without entering the diff."""
    target = night_target(context, recon_db)
    split = reported_split(provider_records)
    own, nobody = split.own, split.unattributed
    ledger = canonical_ledger(ledger_records.valid, payment_aliases(own))
    unmatched = unmatched_ledger_record_ids(own, ledger)
    elsewhere = empty_provider_records()
    if unmatched:
        with provider.adapter() as adapter:
            elsewhere = adapter.fetch_records_by_id(target.account, unmatched)
        ledger = canonical_ledger(ledger_records.valid, payment_aliases(own, elsewhere))
    result = diff_night(own, ledger, elsewhere)
    result = with_findings(
        replace(
            result, discrepancies=name_booked_ids(result.discrepancies, ledger_records.valid)
        ),
        unattributed_findings(nobody),
        ledger_records.invalid,
    )
    context.log.info(
        f"{len(result.discrepancies)} findings, {result.matched_count} matched, "
        f"{result.timing_difference_count} timing differences"
    )
    return dg.Output(
        result,
        metadata={
            "findings": len(result.discrepancies),
            "matched": result.matched_count,
            "timing_differences": result.timing_difference_count,
            "looked_up_by_id": len(unmatched),
            "found_in_other_nights": len(elsewhere),
            "unattributed_reported": int(nobody["kind"].isin(("payment", "refund")).sum()),
        },
    )


class OrphanConfig(dg.Config):
    """How long a captured payment may wait for its booking to be confirmed before it is an orphan."""

    grace_minutes: int = 60


@dg.asset(partitions_def=property_night_partitions, group_name=GROUP, kinds={"sql", "pandas"})
def orphaned_captured_payments(
    context: dg.AssetExecutionContext,
    config: OrphanConfig,
    recon_db: ReconDatabase,
    provider_records: pd.DataFrame,
) -> dg.Output[pd.DataFrame]:
    """Money captured (at the provider or in payment_orders) whose booking is still not confirmed."""
    target = night_target(context, recon_db)
    own = reported_split(provider_records).own
    with recon_db.engine().connect() as connection:
        local = load_captured_payment_orders(connection, target.property_row.property_id, target.window)
        captured = captured_payments(own, local, payment_aliases(own))
        booking_states = load_bookings(connection, captured["booking_id"].dropna())
    orphans = find_orphaned_captured_payments(
        captured, booking_states, datetime.now(UTC), timedelta(minutes=config.grace_minutes)
    )
    return dg.Output(
        orphans, metadata={"dagster/row_count": len(orphans), "grace_minutes": config.grace_minutes}
    )


@dg.asset(partitions_def=property_night_partitions, group_name=GROUP, kinds={"sql"})
def adjustments(
    context: dg.AssetExecutionContext, recon_db: ReconDatabase, reconciliation: DiffResult
) -> dg.MaterializeResult:
    """Proposed ledger corrections that follow the ledger: new ones inserted once per business key, stale
    proposals withdrawn or superseded, approved/posted/rejected rows never touched (a re-run with no
    change modifies no row).

    One transaction: a run killed before its commit wrote nothing; one killed after it, before Dagster
    recorded this materialization, left every row, which its re-run finds unchanged.
    """
    key = property_night(context.partition_key)
    now = datetime.now(UTC)
    proposals = plan_adjustments(
        key.property_id, key.night, reconciliation.discrepancies, context.run_id, now
    )
    with recon_db.engine().begin() as connection:
        plan = sync_adjustments(connection, key.property_id, key.night, proposals, now)
        reached(ADJUSTMENTS_BEFORE_COMMIT)
    reached(ADJUSTMENTS_COMMITTED)  # the crash window: committed, the materialization not yet reported
    counts = {
        "new": plan.new,
        "withdrawn": plan.count(WITHDRAWN),
        "superseded": plan.count(SUPERSEDED),
        "remainder": plan.remainder,
        "unchanged": plan.unchanged,
    }
    context.log.info("adjustments: " + ", ".join(f"{n} {what}" for what, n in counts.items()))
    return dg.MaterializeResult(metadata={"proposed": len(proposals), **counts})


@dg.asset(partitions_def=property_night_partitions, group_name=GROUP, kinds={"sql"}, deps=[adjustments])
def discrepancy_report(
    context: dg.AssetExecutionContext,
    recon_db: ReconDatabase,
    reconciliation: DiffResult,
    orphaned_captured_payments: pd.DataFrame,
) -> dg.MaterializeResult:
    """The night's findings, upserted into ``discrepancies`` (those no longer seen cleared), exported as CSV,
    Parquet and HTML (read back from the committed table, with each finding's adjustment state) to
    ``RECON_HOME/reports/<property>/<night>/`` and summarised in the UI. After ``adjustments``, whose state
    it shows."""
    target = night_target(context, recon_db)
    property_id, night = target.property_row.property_id, target.night
    findings = pd.concat([reconciliation.discrepancies, orphaned_captured_payments], ignore_index=True)
    with recon_db.engine().begin() as connection:
        counts = save_discrepancies(
            connection, property_id, night, findings, context.run_id, datetime.now(UTC)
        )
    report = build_night_report(reconciliation, orphaned_captured_payments)
    with recon_db.engine().connect() as connection:
        files = export_partition(connection, target.property_row, night, report)
    return dg.MaterializeResult(
        metadata={
            **report.as_metadata(),
            "dagster/row_count": len(findings),
            "discrepancies_new": counts.new,
            "discrepancies_unchanged": counts.already_present,
            "discrepancies_cleared": counts.cleared,
            "discrepancies_reopened": counts.reopened,
            "discrepancies_in_table": files.rows,
            "totals": dg.MetadataValue.md(report.totals_markdown()),
            "categories": dg.MetadataValue.md(report.summary_markdown()),
            "top_discrepancies": dg.MetadataValue.md(report.top_discrepancies_markdown()),
            "adjustment_states": dg.MetadataValue.md(files.adjustment_states_markdown()),
            "report_html": dg.MetadataValue.path(str(files.html)),
            "report_csv": dg.MetadataValue.path(str(files.csv)),
            "report_parquet": dg.MetadataValue.path(str(files.parquet)),
        }
    )


reconciliation_assets = [
    provider_records,
    ledger_records,
    reconciliation,
    orphaned_captured_payments,
    adjustments,
    discrepancy_report,
]
