"""The processing backlog as the sensor sees it: what is due now, how deep and how old the queue is."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from recon_pipeline.db.schema import payment_event_processing as processing
from recon_pipeline.db.schema import payment_events
from recon_pipeline.events.queue import AWAITING_STATUSES, due


@dataclass(frozen=True)
class Backlog:
    """Due events (seq, attempts) oldest first, and the queue's depth and age."""

    due: list[tuple[int, int]]
    waiting: int  # pending, or failed and waiting for its retry time
    dead: int
    oldest_waiting_at: datetime | None  # when the oldest waiting event was received
    newest_seq: int

    def oldest_age_s(self, now: datetime) -> float:
        return (now - self.oldest_waiting_at).total_seconds() if self.oldest_waiting_at else 0.0


def read_backlog(connection: Connection, now: datetime, limit: int = 1000) -> Backlog:
    """Events a worker may claim now (awaiting and available, or with an expired lease), and totals."""
    due_now = connection.execute(
        select(processing.c.seq, processing.c.attempts)
        .where(due(now))
        .order_by(processing.c.seq)
        .limit(limit)
    ).tuples()
    waiting, oldest = connection.execute(
        select(func.count(), func.min(payment_events.c.received_at))
        .select_from(processing.join(payment_events, payment_events.c.event_id == processing.c.event_id))
        .where(processing.c.status.in_(AWAITING_STATUSES))
    ).one()
    dead = connection.execute(select(func.count()).where(processing.c.status == "dead")).scalar_one()
    newest = connection.execute(select(func.max(processing.c.seq))).scalar()
    return Backlog(list(due_now), int(waiting), int(dead), oldest, int(newest or 0))


def events_run_key(due: list[tuple[int, int]]) -> str:
    """A run key derived from the work itself: the same due events at the same attempt give the same key,
    so a sensor tick that sees unchanged work never requests a second run; a retry is new work."""
    digest = hashlib.sha256(",".join(f"{seq}:{attempts}" for seq, attempts in due).encode()).hexdigest()[:16]
    return f"events-{due[0][0]}-{due[-1][0]}-{digest}"
