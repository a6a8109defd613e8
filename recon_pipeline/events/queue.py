"""The event queue in ``payment_event_processing``: claim with a lease, then settle under that lease.

Claiming is one short transaction that selects due rows and marks them ``processing`` with
``locked_by`` / ``locked_until = now + lease`` and ``attempts + 1``:

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

A failure is retried with exponential backoff and jitter on ``available_at`` (status ``failed``); after
``max_attempts`` claims the row becomes ``dead`` with its ``last_error`` and stays in the table, visible
to operators, until someone re-queues it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Connection, Engine, and_, or_, select, update

from recon_pipeline.db.schema import payment_event_processing as processing

AWAITING_STATUSES = ("pending", "failed")
_RNG = random.Random()


@dataclass(frozen=True)
class RetrySchedule:
    """How often a failing event is retried, and how long to wait before each retry."""

    max_attempts: int = 8
    base_delay: timedelta = timedelta(seconds=30)
    max_delay: timedelta = timedelta(hours=1)

    def delay(self, attempts: int, rng: random.Random) -> timedelta:
        """Wait after the ``attempts``-th failed attempt (1-based): half the capped exponential step plus up
        to as much again at random, so the wait is never zero yet retries of one outage spread out."""
        step = min(self.max_delay, self.base_delay * 2 ** max(0, attempts - 1))
        return step / 2 + step * (rng.random() / 2)


@dataclass(frozen=True)
class ClaimedEvent:
    """One event this worker holds a lease on; ``attempts`` counts this claim."""

    seq: int
    event_id: str
    provider: str
    provider_payment_id: str | None
    account: str | None
    attempts: int
    locked_until: datetime


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
                attempts=processing.c.attempts + 1,
            )
            .returning(
                processing.c.seq,
                processing.c.event_id,
                processing.c.provider,
                processing.c.provider_payment_id,
                processing.c.account,
                processing.c.attempts,
                processing.c.locked_until,
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
    """Schedule another attempt (status ``failed``), or dead-letter the event once it has used
    ``policy.max_attempts``; returns the status written, None when the lease is no longer ours."""
    if event.attempts >= policy.max_attempts:
        return "dead" if dead_letter(connection, event, worker_id, error) else None
    result = connection.execute(
        update(processing)
        .where(_ours(event, worker_id))
        .values(
            status="failed",
            last_error=error,
            available_at=now + policy.delay(event.attempts, rng),
            locked_until=None,
        )
    )
    return "failed" if result.rowcount == 1 else None


def dead_letter(connection: Connection, event: ClaimedEvent, worker_id: str, error: str) -> bool:
    """Give up on the event (status ``dead``, ``last_error`` says why); False when the lease is not ours."""
    result = connection.execute(
        update(processing)
        .where(_ours(event, worker_id))
        .values(status="dead", last_error=error, locked_until=None)
    )
    return result.rowcount == 1
