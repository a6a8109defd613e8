"""Store provider events once per event id, with their processing rows, in the caller's transaction.

Used by the webhook receiver (a batch of concurrent deliveries per transaction), by the recovery pull of
``/v1/events`` and by the orphan sweep, so that whichever path sees an event first stores it and every
other path is a no-op on the event id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from recon_pipeline.db.schema import payment_event_conflicts, payment_event_processing, payment_events
from recon_pipeline.db.upsert import insert_new, inserted_keys
from recon_pipeline.providers.events import ProviderEvent


@dataclass(frozen=True)
class ReceivedEvent:
    """An event as it arrived: its ids, its raw body (stored byte for byte) and when it came."""

    event: ProviderEvent
    raw_body: str
    received_at: datetime


def store_events(connection: Connection, provider: str, received: Sequence[ReceivedEvent]) -> list[bool]:
    """Insert the raw events and queue the new ones as pending; per event, whether it was new.

    Two statements for the whole batch, in event-id order (so concurrent batches lock rows in the same
    order); a second copy of an id within the batch, like one already stored, is a duplicate.
    """
    first: dict[str, ReceivedEvent] = {}
    for item in sorted(received, key=lambda r: r.event.event_id):
        first.setdefault(item.event.event_id, item)
    new_ids = set(
        inserted_keys(
            connection,
            payment_events,
            [
                {
                    "event_id": item.event.event_id,
                    "provider": provider,
                    "event_type": item.event.event_type,
                    "provider_payment_id": item.event.provider_payment_id,
                    "payload": item.raw_body,
                    "received_at": item.received_at,
                }
                for item in first.values()
            ],
            ["event_id"],
        )
    )
    inserted_keys(
        connection,
        payment_event_processing,
        [
            {
                "event_id": item.event.event_id,
                "provider": provider,
                "provider_payment_id": item.event.provider_payment_id,
                "account": item.event.account,
                "status": "pending",
                "attempts": 0,
                "available_at": item.received_at,
            }
            for item in first.values()
            if item.event.event_id in new_ids
        ],
        ["event_id"],
    )
    return [item.event.event_id in new_ids and first[item.event.event_id] is item for item in received]


def store_event(
    connection: Connection, provider: str, event: ProviderEvent, raw_body: str, received_at: datetime
) -> bool:
    """Store one event; False when its event id was already stored."""
    return store_events(connection, provider, [ReceivedEvent(event, raw_body, received_at)])[0]


def record_conflicts(
    connection: Connection, provider: str, duplicates: Sequence[ReceivedEvent]
) -> list[ReceivedEvent]:
    """Of deliveries whose event id was already stored, keep those with a different body as evidence in
    ``payment_event_conflicts`` (once per event id and body) and return them; the stored event is never
    modified. Bodies are compared as JSON, so a re-serialised copy (the recovery pull's) is no conflict.
    """
    if not duplicates:
        return []
    ids = sorted({item.event.event_id for item in duplicates})
    query = select(payment_events.c.event_id, payment_events.c.payload).where(
        payment_events.c.event_id.in_(ids)
    )
    stored = {event_id: json.loads(payload) for event_id, payload in connection.execute(query)}
    conflicts = [
        item
        for item in duplicates
        if item.event.event_id in stored and stored[item.event.event_id] != json.loads(item.raw_body)
    ]
    insert_new(
        connection,
        payment_event_conflicts,
        [
            {
                "event_id": item.event.event_id,
                "body_sha256": hashlib.sha256(item.raw_body.encode()).hexdigest(),
                "provider": provider,
                "payload": item.raw_body,
                "received_at": item.received_at,
            }
            for item in conflicts
        ],
        ["event_id", "body_sha256"],
    )
    return conflicts


def conflict_count(connection: Connection) -> int:
    """Distinct conflicting bodies kept so far (the receiver's /healthz shows it)."""
    return int(connection.execute(select(func.count()).select_from(payment_event_conflicts)).scalar_one())
