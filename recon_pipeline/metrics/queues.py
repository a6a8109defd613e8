"""The queues as the database holds them: rows by state, the oldest open job, rows in ``unknown``.

One reading serves the Prometheus gauges, the Dagster run metadata and the SLO check, so all three say
the same thing. An open job is one not yet in a terminal state: an event ``pending``, ``failed`` (waiting
for its retry) or ``processing``; a posting ``approved``, ``posting`` or ``unknown``. A job's age runs
from when it entered the queue (the event's ``received_at``, the outbox row's ``created_at``), not from
its latest retry, so a job that keeps failing grows old while a burst of fresh retries stays young.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy import Connection, func, select

from recon_pipeline.db.outbox_states import OPEN_STATES, OUTBOX_STATES, UNKNOWN
from recon_pipeline.db.schema import payment_event_processing as processing
from recon_pipeline.db.schema import payment_events
from recon_pipeline.db.schema import posting_outbox as outbox

EVENTS: Final = "events"
POSTINGS: Final = "postings"
EVENT_STATES: Final = ("pending", "processing", "failed", "processed", "dead")
OPEN_EVENT_STATES: Final = ("pending", "processing", "failed")


@dataclass(frozen=True)
class QueueState:
    """One queue at one moment: rows per state (every state named, zero included), when its oldest open
    job entered it, and how many rows have an unknown outcome (postings only; events have no such state)."""

    queue: str
    depth: dict[str, int]
    oldest_open_at: datetime | None
    unknown: int

    def oldest_age_s(self, now: datetime) -> float:
        return max(0.0, (now - self.oldest_open_at).total_seconds()) if self.oldest_open_at else 0.0

    @property
    def open(self) -> int:
        open_states = OPEN_EVENT_STATES if self.queue == EVENTS else OPEN_STATES
        return sum(self.depth[state] for state in open_states)

    @property
    def given_up(self) -> int:
        """Rows that stopped for good and wait for a person (events ``dead``, postings ``failed``)."""
        return self.depth["dead" if self.queue == EVENTS else "failed"]

    def metadata(self, now: datetime) -> dict[str, int | float]:
        """The figures as Dagster metadata (``<queue>/…`` keys), for the runs that drain the queue."""
        return {
            **{f"{self.queue}/depth/{state}": count for state, count in self.depth.items()},
            f"{self.queue}/open": self.open,
            f"{self.queue}/oldest_open_age_s": round(self.oldest_age_s(now), 1),
            f"{self.queue}/unknown": self.unknown,
        }


def read_events_queue(connection: Connection) -> QueueState:
    by_state: dict[str, int] = dict(
        connection.execute(select(processing.c.status, func.count()).group_by(processing.c.status))
        .tuples()
        .all()
    )
    oldest = connection.execute(
        select(func.min(payment_events.c.received_at))
        .select_from(processing.join(payment_events, payment_events.c.event_id == processing.c.event_id))
        .where(processing.c.status.in_(OPEN_EVENT_STATES))
    ).scalar()
    return QueueState(EVENTS, {state: int(by_state.get(state, 0)) for state in EVENT_STATES}, oldest, 0)


def read_postings_queue(connection: Connection) -> QueueState:
    by_state: dict[str, int] = dict(
        connection.execute(select(outbox.c.state, func.count()).group_by(outbox.c.state)).tuples().all()
    )
    oldest = connection.execute(
        select(func.min(outbox.c.created_at)).where(outbox.c.state.in_(OPEN_STATES))
    ).scalar()
    depth = {state: int(by_state.get(state, 0)) for state in OUTBOX_STATES}
    return QueueState(POSTINGS, depth, oldest, depth[UNKNOWN])


def read_queues(connection: Connection) -> list[QueueState]:
    """Both queues, in one connection (two grouped counts and two minimums: cheap at scrape time)."""
    return [read_events_queue(connection), read_postings_queue(connection)]
