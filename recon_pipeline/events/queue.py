"""The event queue in ``payment_event_processing``: claim with a lease, then settle under that lease.

Claiming is one short transaction that selects due rows and marks them ``processing`` with
``locked_by`` / ``locked_until = now + lease``:

- PostgreSQL: ``SELECT … ORDER BY seq LIMIT n FOR UPDATE SKIP LOCKED``, so concurrent workers never wait
  on each other and never claim the same row.
- SQLite has no row locks (and SQLAlchemy renders no ``FOR UPDATE`` for it): the same statements run
  under ``BEGIN IMMEDIATE``, which takes the database's single write lock before the read, so two claimers
  are serialised (the second waits on the busy timeout) instead of both reading the same rows.

A row is due when it is ``pending`` or ``failed`` with ``available_at <= now``, or ``processing`` with an
expired lease (its worker crashed or stalled), so no event is lost with a worker. Every settling write
(``complete``, ``retry_later``, ``dead_letter``) is conditional on the lease still being ours
(``locked_by = worker AND status = 'processing'``) and reports whether it was: a slow worker whose lease
expired and was reclaimed cannot overwrite the new owner's result, and must roll back its transaction.

``attempts`` counts real tries only: every settling write adds one, a claim adds nothing. A claim that
never got its turn (the batch outlived its lease behind a hanging provider) is handed back with
``release``, and a lease taken over counts nothing for the worker that lost it; so a slow provider can
neither dead-letter an event it never saw nor stretch its backoff.

A failure is retried with exponential backoff and jitter on ``available_at`` (status ``failed``); once a
failure comes after the retry budget (``RetrySchedule.budget``, from the event's first failed try) the row
becomes ``dead`` with its ``last_error`` and stays in the table, visible to operators, until ``requeue``
brings it back (``recon events requeue``). A budget in time, not in tries, is what makes "an outage
shorter than the budget dead-letters nothing" hold whatever the backoff and however often workers run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Connection, Engine, and_, case, or_, select, update

from recon_pipeline.db.schema import payment_event_processing as processing
from recon_pipeline.retry import RetrySchedule

AWAITING_STATUSES = ("pending", "failed")
_RNG = random.Random()


@dataclass(frozen=True)
class ClaimedEvent:
    """One event this worker holds a lease on; ``attempts`` counts the real tries before this one."""

    seq: int
    event_id: str
    provider: str
    provider_payment_id: str | None
    account: str | None
    attempts: int
    locked_until: datetime
    first_failed_at: datetime | None


def due(now: datetime) -> ColumnElement[bool]:
    """Rows a worker may claim at ``now``: waiting and available, or processing with an expired lease."""
    return or_(
        and_(processing.c.status.in_(AWAITING_STATUSES), processing.c.available_at <= now),
        and_(processing.c.status == "processing", processing.c.locked_until < now),
    )


def claim_batch(
    engine: Engine, worker_id: str, limit: int, lease: timedelta, now: datetime
) -> list[ClaimedEvent]:
    """Claim up to ``limit`` due events, oldest first, for ``lease``; committed before returning."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    with engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        seqs = (
            connection.execute(
                select(processing.c.seq)
                .where(due(now))
                .order_by(processing.c.seq)
                .limit(limit)
                .with_for_update(skip_locked=True)
            )
            .scalars()
            .all()
        )
        if not seqs:
            connection.rollback()
            return []
        rows = connection.execute(
            update(processing)
            .where(processing.c.seq.in_(seqs))
            .values(
                status="processing",
                locked_by=worker_id,
                locked_until=now + lease,
            )
            .returning(
                processing.c.seq,
                processing.c.event_id,
                processing.c.provider,
                processing.c.provider_payment_id,
                processing.c.account,
                processing.c.attempts,
                processing.c.locked_until,
                processing.c.first_failed_at,
            )
        ).all()
        connection.commit()
    return sorted((ClaimedEvent(**row._asdict()) for row in rows), key=lambda event: event.seq)


def _ours(event: ClaimedEvent, worker_id: str) -> ColumnElement[bool]:
    return and_(
        processing.c.seq == event.seq,
        processing.c.locked_by == worker_id,
        processing.c.status == "processing",
    )


def complete(
    connection: Connection,
    event: ClaimedEvent,
    worker_id: str,
    outcome: str,
    property_id: str | None,
    night: str | None,
    now: datetime,
) -> bool:
    """Mark the event processed, in the caller's transaction; False when the lease is no longer ours
    (the caller must then roll back whatever it wrote with it)."""
    result = connection.execute(
        update(processing)
        .where(_ours(event, worker_id))
        .values(
            status="processed",
            outcome=outcome,
            property_id=property_id,
            night=night,
            processed_at=now,
            locked_until=None,
            last_error=None,
            attempts=processing.c.attempts + 1,
        )
    )
    return result.rowcount == 1


def retry_later(
    connection: Connection,
    event: ClaimedEvent,
    worker_id: str,
    error: str,
    now: datetime,
    policy: RetrySchedule,
    rng: random.Random = _RNG,
) -> str | None:
    """Count the failed try and schedule another (status ``failed``), or dead-letter the event when the
    failure comes after ``policy.budget``; returns the status written, None when the lease is not ours."""
    first_failed_at = event.first_failed_at or now
    if policy.spent(first_failed_at, now):
        return "dead" if dead_letter(connection, event, worker_id, error) else None
    result = connection.execute(
        update(processing)
        .where(_ours(event, worker_id))
        .values(
            status="failed",
            last_error=error,
            available_at=now + policy.delay(event.attempts + 1, rng),
            locked_until=None,
            attempts=processing.c.attempts + 1,
            first_failed_at=first_failed_at,
        )
    )
    return "failed" if result.rowcount == 1 else None


def dead_letter(connection: Connection, event: ClaimedEvent, worker_id: str, error: str) -> bool:
    """Give up on the event after a real try (status ``dead``, ``last_error`` says why); False when the
    lease is not ours."""
    result = connection.execute(
        update(processing)
        .where(_ours(event, worker_id))
        .values(status="dead", last_error=error, locked_until=None, attempts=processing.c.attempts + 1)
    )
    return result.rowcount == 1


def release(connection: Connection, event: ClaimedEvent, worker_id: str, now: datetime) -> bool:
    """Hand back a claim that was never tried (its lease ran out before its turn): due again at once, as
    it was before the claim (``failed`` after an earlier try, else ``pending``), no attempt counted.
    False when another worker has taken the lease over meanwhile."""
    result = connection.execute(
        update(processing)
        .where(_ours(event, worker_id))
        .values(
            status=case((processing.c.attempts > 0, "failed"), else_="pending"),
            available_at=now,
            locked_until=None,
            locked_by=None,
        )
    )
    return result.rowcount == 1


class RequeueError(ValueError):
    """A requeue named an event that does not exist or is not dead."""


def requeue(
    connection: Connection,
    event_ids: list[str],
    all_dead: bool,
    provider: str | None,
    who: str,
    now: datetime,
) -> list[str]:
    """Bring dead events back deliberately: ``pending`` and due now, ``attempts`` and the budget reset,
    ``requeued_at``/``requeued_by`` recorded (``last_error`` stays: why it died). Selects the named
    ``event_ids`` and, with ``all_dead``, every dead event, both limited to ``provider`` when given.
    A named event that is unknown or not dead raises RequeueError before anything changes. Returns the
    requeued event ids."""
    if not event_ids and not all_dead:
        raise RequeueError("name events with --event-id or pass --all-dead")
    where = [processing.c.status == "dead"]
    if provider is not None:
        where.append(processing.c.provider == provider)
    if event_ids:
        query = select(processing.c.event_id, processing.c.status, processing.c.provider).where(
            processing.c.event_id.in_(event_ids)
        )
        found = {row.event_id: row for row in connection.execute(query)}
        for event_id in event_ids:
            row = found.get(event_id)
            if row is None:
                raise RequeueError(f"event {event_id!r} is not in payment_event_processing")
            if row.status != "dead":
                raise RequeueError(f"event {event_id!r} is {row.status}, not dead: nothing to requeue")
            if provider is not None and row.provider != provider:
                raise RequeueError(f"event {event_id!r} is a {row.provider} event, not {provider}")
    if not all_dead:
        where.append(processing.c.event_id.in_(event_ids))
    rows = connection.execute(
        update(processing)
        .where(*where)
        .values(
            status="pending",
            attempts=0,
            first_failed_at=None,
            available_at=now,
            locked_until=None,
            locked_by=None,
            requeued_at=now,
            requeued_by=who,
        )
        .returning(processing.c.event_id)
    ).scalars()
    return sorted(rows)

