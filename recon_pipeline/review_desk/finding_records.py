"""Both sides of a finding for its page: the provider's records and the PMS's, and its adjustments.

Every query is narrowed to the finding's own property in SQL (a payment order, ledger entry or booking
of another property with the same id is never shown), so a finding's page shows nothing its viewer may
not see. The finding itself was already read narrowed to the viewer's properties.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, RowMapping, select

from recon_pipeline.db.schema import (
    FINDING_KEY,
    adjustments,
    bookings,
    ledger_entries,
    payment_events,
    payment_orders,
    payouts,
)

MAX_EVENTS = 50  # a payment's webhook events shown; a payment has a handful


@dataclass(frozen=True)
class FindingRecords:
    """What the database holds about a finding's records; None or empty where it holds nothing."""

    payment_order: RowMapping | None
    payment_events: list[RowMapping]
    payout: RowMapping | None
    ledger_entry: RowMapping | None
    booking: RowMapping | None
    adjustments: list[RowMapping]


def finding_records(connection: Connection, finding: Mapping[Any, Any]) -> FindingRecords:
    """The stored records behind ``finding``: provider side by its provider_record_id, PMS side by its
    ledger_entry_id and booking_id (else the ledger entry's or payment order's booking)."""
    property_id = finding["property_id"]
    record_id = finding["provider_record_id"]
    order = payout = None
    events: list[RowMapping] = []
    if record_id is not None:
        order = _first(
            connection,
            select(payment_orders).where(
                payment_orders.c.provider_payment_id == record_id, payment_orders.c.property_id == property_id
            ),
        )
        payout = _first(
            connection,
            select(payouts).where(
                payouts.c.payout_id == record_id, payouts.c.holder_property_id == property_id
            ),
        )
    if order is not None:  # events carry no property: only those of the property's own payment
        events = list(
            connection.execute(
                select(
                    payment_events.c.event_id,
                    payment_events.c.provider,
                    payment_events.c.event_type,
                    payment_events.c.received_at,
                )
                .where(payment_events.c.provider_payment_id == order["provider_payment_id"])
                .order_by(payment_events.c.received_at, payment_events.c.event_id)
                .limit(MAX_EVENTS)
            ).mappings()
        )
    entry = None
    if finding["ledger_entry_id"] is not None:
        entry = _first(
            connection,
            select(ledger_entries).where(
                ledger_entries.c.entry_id == finding["ledger_entry_id"],
                ledger_entries.c.property_id == property_id,
            ),
        )
    booking_id = finding["booking_id"] or _field(entry, "booking_id") or _field(order, "booking_id")
    booking = None
    if booking_id is not None:
        booking = _first(
            connection,
            select(bookings).where(
                bookings.c.booking_id == booking_id, bookings.c.property_id == property_id
            ),
        )
    return FindingRecords(order, events, payout, entry, booking, finding_adjustments(connection, finding))


def finding_adjustments(connection: Connection, finding: Mapping[Any, Any]) -> list[RowMapping]:
    """The adjustments proposed for the finding (same property, night, category and record), by revision."""
    query = (
        select(adjustments)
        .where(*(adjustments.c[name] == finding[name] for name in FINDING_KEY))
        .order_by(adjustments.c.revision, adjustments.c.created_at)
    )
    return list(connection.execute(query).mappings())


def _first(connection: Connection, query: Any) -> RowMapping | None:
    return connection.execute(query).mappings().first()


def _field(row: RowMapping | None, name: str) -> Any:
    return None if row is None else row[name]
