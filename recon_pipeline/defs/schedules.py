"""The nightly schedule: after each property's cutoff, its night just closed plus a look-back, in batches."""

from datetime import UTC, date, datetime

import dagster as dg

from recon_pipeline.batches.nightly import nightly_batches
from recon_pipeline.config import positive_int, text_from_env
from recon_pipeline.defs.batches import batch_run_request, batch_size
from recon_pipeline.defs.jobs import reconcile_night_job
from recon_pipeline.defs.partitions import first_night
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.ledger.queries import list_properties
from recon_pipeline.properties import split_valid_properties

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
    description="Every 15 minutes: the properties whose night has just closed, with the few nights before "
    "it again, reconciled in batch runs (one run per batch, never twice for the same day).",
)
def nightly_reconciliation_schedule(
    context: dg.ScheduleEvaluationContext, recon_db: ReconDatabase
) -> list[dg.RunRequest] | dg.SkipReason:
    """Every 15 minutes: the properties whose night closed, and their look-back, as batch runs; run keys
    dedupe the repeats of the same day.

    Each property is validated alone: a bad ``properties`` row is skipped with an error naming it in the
    tick's log, and every other property still gets its runs."""
    now = context.scheduled_execution_time or datetime.now(UTC)
    with recon_db.engine().connect() as connection:
        properties, invalid = split_valid_properties(list_properties(connection))
    for error in invalid:
        context.log.error(f"skipped: {error}")
    batches = nightly_batches(
        properties, now, lookback_nights(), date.fromisoformat(first_night()), batch_size()
    )
    requests = [
        batch_run_request(
            nightly.batch,
            nightly.run_key,
            tags={"recon/trigger": "nightly", "recon/lookback": str(nightly.lookback)},
        )
        for nightly in batches
    ]
    if not requests:
        skipped = "".join(f"; skipped: {error}" for error in invalid)
        return dg.SkipReason(f"no valid property has a closed night yet{skipped}")
    return requests
