"""Dagster wiring of event processing: the pending-events sensor, the processor job, recovery schedules,
and the sensor that re-opens nights touched by late events. Thin wrappers over ``recon_pipeline.events``."""

import hashlib
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta

import dagster as dg

from recon_pipeline.batches.plan import plan_batches
from recon_pipeline.config import positive_int_from_env
from recon_pipeline.defs.batches import batch_run_request, batch_size
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG, PROVIDER_POOL, failing_once_on_config_error
from recon_pipeline.defs.jobs import reconcile_night_job
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.events.backlog import events_run_key, read_backlog
from recon_pipeline.events.processor import process_available
from recon_pipeline.events.recovery import enqueue_orphaned_payments, recover_missed_events
from recon_pipeline.events.stale import recent_stale_nights
from recon_pipeline.ledger.queries import list_properties
from recon_pipeline.metrics.queues import read_events_queue
from recon_pipeline.properties import PropertyRow, split_valid_properties
from recon_pipeline.storage.night_outcomes import succeeded_nights

IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]
STALE_LOOKBACK = timedelta(days=14)


class ProcessEventsConfig(dg.Config):
    """How much one processor run drains before it ends (the sensor starts another if work remains)."""

    batch_size: int = 100
    max_batches: int = 50


@dg.op(pool=PROVIDER_POOL)
def process_payment_events(
    context: dg.OpExecutionContext,
    config: ProcessEventsConfig,
    recon_db: ReconDatabase,
    provider: ProviderResource,
) -> None:
    """Claim due events, fetch each payment's current state from the provider, apply it, mark processed;
    the run's output metadata gives its counts and the queue left behind (depth, oldest age)."""
    with failing_once_on_config_error(context):
        engine = recon_db.engine()
        client = provider.adapter()
    counts = process_available(
        engine,
        client,
        context.run_id,
        batch_size=config.batch_size,
        max_batches=config.max_batches,
    )
    context.log.info(f"processed events: {counts}")
    with engine.connect() as connection:
        queue = read_events_queue(connection)
    context.add_output_metadata({**asdict(counts), **queue.metadata(datetime.now(UTC))})


@dg.job(tags={PROVIDER_BOUND_TAG: "true"}, description="Drain due payment events (claimed with SKIP LOCKED).")
def process_payment_events_job() -> None:
    process_payment_events()


@dg.sensor(
    job=process_payment_events_job,
    minimum_interval_seconds=positive_int_from_env("RECON_EVENTS_SENSOR_INTERVAL_S", 15),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Starts a run that processes the payment events due now, unless enough such runs are "
    "already under way.",
)
def pending_events_sensor(context: dg.SensorEvaluationContext, recon_db: ReconDatabase) -> dg.SensorResult:
    """Request a processor run for the events due now; the run key is derived from those events."""
    now = datetime.now(UTC)
    with recon_db.engine().connect() as connection:
        backlog = read_backlog(connection, now)
    cursor = str(max(int(context.cursor or 0), backlog.newest_seq))
    age_s = backlog.oldest_age_s(now)
    context.log.info(
        f"backlog: {backlog.waiting} waiting, {len(backlog.due)} due, "
        f"oldest {age_s:.0f}s, {backlog.dead} dead"
    )
    if not backlog.due:
        return dg.SensorResult(skip_reason="no events due", cursor=cursor)
    max_runs = positive_int_from_env("RECON_EVENTS_MAX_RUNS", 2)
    in_flight = context.instance.get_runs_count(
        dg.RunsFilter(job_name=process_payment_events_job.name, statuses=IN_FLIGHT)
    )
    if in_flight >= max_runs:
        return dg.SensorResult(skip_reason=f"{in_flight} processor runs already in flight", cursor=cursor)
    request = dg.RunRequest(
        run_key=events_run_key(backlog.due),
        tags={"recon/backlog_depth": str(backlog.waiting), "recon/oldest_pending_age_s": f"{age_s:.0f}"},
    )
    return dg.SensorResult(run_requests=[request], cursor=cursor)


@dg.sensor(
    job=reconcile_night_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Reconciles again, in batch runs, the property-nights a late payment event changed after "
    "they were reconciled.",
)
def stale_nights_sensor(context: dg.SensorEvaluationContext, recon_db: ReconDatabase) -> dg.SensorResult:
    """Reconcile again, in batches, the reconciled property-nights that a late event touched, once per
    stale generation (the run key names each member's generation).

    Only marks made since the property-night's latest successful reconciliation started count: one that
    reconciliation already saw (a reopen run done, or the nightly look-back) is not asked for again when
    another property of its night goes stale, which would change the batch and so its run key."""
    since = datetime.now(UTC) - STALE_LOOKBACK
    with recon_db.engine().connect() as connection:
        marks = recent_stale_nights(connection, since)
        reconciled = succeeded_nights(connection, (since.date() - STALE_LOOKBACK).isoformat())
        properties = {row.property_id: row for row in split_valid_properties(list_properties(connection))[0]}
    generation = {
        (property_id, night): g
        for property_id, night, g, marked_at in marks
        if (property_id, night) in reconciled
        and marked_at >= reconciled[(property_id, night)]
        and property_id in properties
    }
    by_night: dict[str, list[PropertyRow]] = {}
    for property_id, night in sorted(generation):
        by_night.setdefault(night, []).append(properties[property_id])
    requests = []
    for night, rows in by_night.items():
        for batch in plan_batches(rows, date.fromisoformat(night), batch_size(), one_window_each=True):
            generations = ",".join(f"{p}:{generation[(p, night)]}" for p in batch.property_ids)
            digest = hashlib.sha256(generations.encode()).hexdigest()[:10]
            requests.append(
                batch_run_request(batch, f"reopen:{batch.key}:{digest}", tags={"recon/reason": "late_event"})
            )
    return dg.SensorResult(
        run_requests=requests, skip_reason=None if requests else "no reconciled night went stale"
    )


class OrphanSweepConfig(dg.Config):
    grace_minutes: int = 60


@dg.op(pool=PROVIDER_POOL)
def recover_missed_events_op(
    context: dg.OpExecutionContext, recon_db: ReconDatabase, provider: ProviderResource
) -> None:
    """Store provider events that no webhook delivered (``/v1/events`` since the cursor)."""
    with failing_once_on_config_error(context):
        engine, client = recon_db.engine(), provider.adapter()
    counts = recover_missed_events(engine, client, datetime.now(UTC))
    log = context.log.warning if counts.malformed else context.log.info
    log(f"recovery: {counts.seen} events seen, {counts.stored} new, {counts.malformed} malformed (skipped)")


@dg.op
def enqueue_orphaned_payments_op(
    context: dg.OpExecutionContext, config: OrphanSweepConfig, recon_db: ReconDatabase
) -> None:
    """Queue captured payments whose booking is still not confirmed, for the processor to settle."""
    counts = enqueue_orphaned_payments(
        recon_db.engine(), datetime.now(UTC), timedelta(minutes=config.grace_minutes)
    )
    context.log.info(f"orphan sweep: {counts.seen} orphaned payments, {counts.stored} newly queued")


@dg.job(tags={PROVIDER_BOUND_TAG: "true"})
def recover_missed_events_job() -> None:
    recover_missed_events_op()


@dg.job
def enqueue_orphaned_payments_job() -> None:
    enqueue_orphaned_payments_op()


recovery_schedules = [
    dg.ScheduleDefinition(
        job=recover_missed_events_job,
        cron_schedule="*/15 * * * *",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Every 15 minutes: fetches from the provider the events no webhook delivered.",
    ),
    dg.ScheduleDefinition(
        job=enqueue_orphaned_payments_job,
        cron_schedule="7 * * * *",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Hourly: queues the captured payments whose booking is still not confirmed past the "
        "grace, for the event processor to settle.",
    ),
]
