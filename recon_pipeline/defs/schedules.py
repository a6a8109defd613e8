"""The nightly schedule: after each property's cutoff, its night just closed plus a look-back."""

from datetime import UTC, date, datetime

import dagster as dg

from recon_pipeline.config import positive_int, text_from_env
from recon_pipeline.defs.jobs import reconcile_night_job
from recon_pipeline.defs.partitions import PROPERTY_DIMENSION, PropertyNight, first_night
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.ledger.queries import list_properties, split_valid_properties
from recon_pipeline.nightly import nightly_requests

DEFAULT_LOOKBACK = 3


def lookback_nights() -> int:
    """RECON_NIGHTLY_LOOKBACK: prior nights re-requested each day (0 disables)."""
    raw = text_from_env("RECON_NIGHTLY_LOOKBACK", str(DEFAULT_LOOKBACK))
    return 0 if raw == "0" else positive_int("RECON_NIGHTLY_LOOKBACK", raw)


@dg.schedule(
    job=reconcile_night_job,
    cron_schedule="*/15 * * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
def nightly_reconciliation_schedule(
    context: dg.ScheduleEvaluationContext, recon_db: ReconDatabase
) -> list[dg.RunRequest] | dg.SkipReason:
    """Every 15 minutes: each property's latest closed night and its look-back; run keys dedupe repeats.

    Each property is validated alone: a bad ``properties`` row is skipped with an error naming it in the
    tick's log, and every other property still gets its runs."""
    now = context.scheduled_execution_time or datetime.now(UTC)
    with recon_db.engine().connect() as connection:
        properties, invalid = split_valid_properties(list_properties(connection))
    for error in invalid:
        context.log.error(f"skipped: {error}")
    partitioned = set(context.instance.get_dynamic_partitions(PROPERTY_DIMENSION))
    requests = [
        dg.RunRequest(
            run_key=request.run_key,
            partition_key=PropertyNight(request.property_id, request.night.isoformat()).partition_key,
            tags={"recon/trigger": "nightly", "recon/lookback": str(request.lookback)},
        )
        for request in nightly_requests(properties, now, lookback_nights(), date.fromisoformat(first_night()))
        if request.property_id in partitioned
    ]
    if not requests:
        skipped = "".join(f"; skipped: {error}" for error in invalid)
        return dg.SkipReason(f"no valid property with a partition yet{skipped}")
    return requests
