"""Dagster wiring of posting approved adjustments (issue 15): the ``post_adjustments`` job that drains the
outbox and the sensor that starts it when rows are due. Thin wrappers over ``recon_pipeline.postings``."""

import hashlib
from datetime import UTC, datetime

import dagster as dg
from sqlalchemy import select

from recon_pipeline.config import positive_int_from_env
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.defs.concurrency import failing_once_on_config_error
from recon_pipeline.defs.events import IN_FLIGHT
from recon_pipeline.defs.resources import PostingResource, ReconDatabase
from recon_pipeline.metrics.queues import read_postings_queue
from recon_pipeline.postings.drain import drain
from recon_pipeline.postings.outbox import PostingPolicy, due
from recon_pipeline.postings.store import outbox_depth

DUE_SCAN_LIMIT = 1000


class PostAdjustmentsConfig(dg.Config):
    """How much one run drains (the sensor starts another if rows remain due) and how many posts are in
    flight at once."""

    batch_size: int = 50
    max_batches: int = 20
    concurrency: int = 4


@dg.op
def post_approved_adjustments(
    context: dg.OpExecutionContext,
    config: PostAdjustmentsConfig,
    recon_db: ReconDatabase,
    posting: PostingResource,
) -> None:
    """Claim due outbox rows, post each (or look an unknown one up) in the PMS, commit what it said; the
    run's output metadata gives what it did and the outbox left behind (depth, oldest age, unknown)."""
    with failing_once_on_config_error(context):
        engine = recon_db.engine()
        adapter = posting.build(engine)
    counts = drain(
        engine,
        adapter,
        context.run_id,
        policy=PostingPolicy.configured(),
        batch_size=config.batch_size,
        max_batches=config.max_batches,
        concurrency=config.concurrency,
    )
    context.log.info(f"postings: {counts}")
    with engine.connect() as connection:
        queue = read_postings_queue(connection)
    context.add_output_metadata(
        {
            "claimed": counts.claimed,
            "to_post": counts.to_post,
            "to_look_up": counts.to_look_up,
            "lost": counts.lost,
            **{f"settled/{state}": n for state, n in sorted(counts.by_state.items())},
            **queue.metadata(datetime.now(UTC)),
        }
    )


@dg.job(description="Post approved adjustments to the PMS from the outbox (claimed with SKIP LOCKED).")
def post_adjustments() -> None:
    post_approved_adjustments()


def postings_run_key(due_rows: list[tuple[str, int, int]]) -> str:
    """A run key derived from the work: the same due rows at the same attempt and lookup count give the
    same key, so an unchanged tick never requests a second run; a retry or a lookup is new work."""
    text = ",".join(f"{adjustment}:{attempts}:{lookups}" for adjustment, attempts, lookups in due_rows)
    return f"postings-{len(due_rows)}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


@dg.sensor(
    job=post_adjustments,
    minimum_interval_seconds=positive_int_from_env("RECON_POSTINGS_SENSOR_INTERVAL_S", 30),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Starts a run that posts approved adjustments to the PMS when some are due, unless one is "
    "already under way.",
)
def due_postings_sensor(context: dg.SensorEvaluationContext, recon_db: ReconDatabase) -> dg.SensorResult:
    """Request a ``post_adjustments`` run when outbox rows are due, unless enough runs are in flight."""
    now = datetime.now(UTC)
    with recon_db.engine().connect() as connection:
        due_rows = [
            (row.adjustment_id, row.attempts, row.lookups)
            for row in connection.execute(
                select(outbox.c.adjustment_id, outbox.c.attempts, outbox.c.lookups)
                .where(due(now))
                .order_by(outbox.c.adjustment_id)
                .limit(DUE_SCAN_LIMIT)
            )
        ]
        depth = outbox_depth(connection)
    context.log.info(f"outbox: {depth.open} open, {len(due_rows)} due, oldest {depth.oldest_age_s(now):.0f}s")
    if not due_rows:
        return dg.SensorResult(skip_reason="no postings due")
    max_runs = positive_int_from_env("RECON_POSTINGS_MAX_RUNS", 1)
    in_flight = context.instance.get_runs_count(
        dg.RunsFilter(job_name=post_adjustments.name, statuses=IN_FLIGHT)
    )
    if in_flight >= max_runs:
        return dg.SensorResult(skip_reason=f"{in_flight} posting runs already in flight")
    request = dg.RunRequest(
        run_key=postings_run_key(due_rows),
        tags={"recon/outbox_open": str(depth.open), "recon/outbox_due": str(len(due_rows))},
    )
    return dg.SensorResult(run_requests=[request])
