"""Store a provider event once per event id, with its processing row, in one transaction.

Used by the webhook receiver, by the recovery pull of ``/v1/events`` and by the orphan sweep, so that
whichever path sees an event first stores it and every other path is a no-op on the event id.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection

from recon_pipeline.db.schema import payment_event_processing, payment_events
from recon_pipeline.db.upsert import insert_new
from recon_pipeline.events.parse import ProviderEvent


def store_event(
    connection: Connection, provider: str, event: ProviderEvent, raw_body: str, received_at: datetime
) -> bool:
    """Insert the raw event and queue it as pending; False when the event id was already stored."""
    new = insert_new(
        connection,
        payment_events,
        [
            {
                "event_id": event.event_id,
                "provider": provider,
                "event_type": event.event_type,
                "provider_payment_id": event.provider_payment_id,
                "payload": raw_body,
                "received_at": received_at,
            }
        ],
        ["event_id"],
    )
    if new:
        insert_new(
            connection,
            payment_event_processing,
            [
                {
                    "event_id": event.event_id,
                    "provider": provider,
                    "provider_payment_id": event.provider_payment_id,
                    "account": event.account,
                    "status": "pending",
                    "attempts": 0,
                    "available_at": received_at,
                }
            ],
            ["event_id"],
        )
    return bool(new)
