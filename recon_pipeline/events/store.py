"""Store provider events once per event id, with their processing rows, in the caller's transaction.

Used by the webhook receiver (a batch of concurrent deliveries per transaction), by the recovery pull of
``/v1/events`` and by the orphan sweep, so that whichever path sees an event first stores it and every
other path is a no-op on the event id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection

from recon_pipeline.db.schema import payment_event_processing, payment_events
from recon_pipeline.db.upsert import inserted_keys
from recon_pipeline.events.parse import ProviderEvent


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
