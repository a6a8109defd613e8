"""The ``payouts`` asset: one night of payouts for every account (``recon_pipeline/payouts/night.py``), a
thin wrapper. Its night is the payouts' arrival date (a calendar day, as the provider gives it), and the
night whose deposit deadline it is (``RECON_PAYOUT_DEPOSIT_DAYS`` business days later). Its own job and a
daily schedule for the day just ended: it reads accounts, not property batches, so it stays out of the
nightly reconciliation's batch runs. Each morning it re-requests the last ``LOOKBACK_NIGHTS`` nights as
well: Stripe may report a payout failed days after its arrival date, and a statement imported since may
clear a finding; a re-run of a night says what is true now.
"""

from datetime import UTC, date, datetime, timedelta

import dagster as dg

from recon_pipeline.defs.concurrency import (
    PROVIDER_BOUND_TAG,
    PROVIDER_POOL,
    failing_once_on_config_error,
    provider_step_retry_policy,
)
from recon_pipeline.defs.partitions import first_night, night_partitions, partition_night
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.ledger.queries import list_properties
from recon_pipeline.payouts.deposit import bank_holidays, deposit_days
from recon_pipeline.payouts.night import reconcile_payouts
from recon_pipeline.properties import split_valid_properties

PAYOUTS = dg.AssetKey("payouts")
PAYOUTS_JOB = "payouts_night"
LOOKBACK_NIGHTS = 7  # Stripe reports most payout failures within a few business days of arrival


@dg.asset(
    key=PAYOUTS,
    group_name="payouts",
    kinds={"sql"},
    partitions_def=night_partitions,
    pool=PROVIDER_POOL,
    retry_policy=provider_step_retry_policy(),
    description="Payouts arriving on the night, traced to property-nights (tables `payouts`, "
    "`payout_transactions`), matched to bank credits (`bank_credits`); findings `payout_failed` and "
    "`payout_not_deposited` in `discrepancies`. Report: `recon report payouts`.",
)
def payouts(
    context: dg.AssetExecutionContext, recon_db: ReconDatabase, provider: ProviderResource
) -> dg.MaterializeResult:
    """Read, trace, store and judge the night's payouts for every account of the valid properties."""
    night = date.fromisoformat(partition_night(context.partition_key))
    with failing_once_on_config_error(context):
        engine = recon_db.engine()
        client = provider.adapter()
    with engine.connect() as connection:
        properties, invalid = split_valid_properties(list_properties(connection))
    for error in invalid:
        context.log.error(f"skipped: {error}")
    result = reconcile_payouts(
        engine, client, night, properties, deposit_days(), bank_holidays(), context.run_id
    )
    if result.sum_mismatches:
        context.log.warning(result.sum_check)
    return dg.MaterializeResult(
        metadata={
            "payouts": result.payouts,
            "traced": result.traced,
            "untraceable": result.untraceable,
            "failed": result.failed,
            "not_deposited": result.not_deposited,
            "credits_matched": result.credits_matched,
            "sum_check": result.sum_check,
        }
    )


payouts_job = dg.define_asset_job(
    PAYOUTS_JOB,
    selection=dg.AssetSelection.assets(PAYOUTS),
    partitions_def=night_partitions,
    description="One night of payouts for every account: trace, match to the bank, judge.",
    tags={PROVIDER_BOUND_TAG: "true"},
)


@dg.schedule(
    job=payouts_job,
    cron_schedule="0 6 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Each morning at 06:00 UTC: the payouts of the day that just ended and of the week before "
    "it, traced to their nights and matched to the bank.",
)
def payouts_schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """Each morning, the day that just ended (UTC) and the ``LOOKBACK_NIGHTS`` before it: their arrivals,
    and the payouts due at the bank by them. Run keys carry the day, so a re-evaluated tick runs once."""
    today = (context.scheduled_execution_time or datetime.now(UTC)).date()
    nights = [(today - timedelta(days=back)).isoformat() for back in range(1, LOOKBACK_NIGHTS + 2)]
    nights = [night for night in nights if night >= first_night()]
    return [dg.RunRequest(run_key=f"payouts-{today}-{night}", partition_key=night) for night in nights]
