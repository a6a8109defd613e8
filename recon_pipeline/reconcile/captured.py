"""Captured payments as the provider and the PMS report them, in the shape orphan detection reads.

Both sides are keyed by the charge id (``identity.py``): ``payment_orders`` may hold a payment by its
PaymentIntent or order id, the provider's frame knows which charge that is, and one payment must be one
orphan whichever id each side holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from recon_pipeline.frames import present
from recon_pipeline.reconcile.identity import PaymentAliases, canonical_ids

PAYMENT_ORDER_ID = "payment_order_id"  # the id a payment_orders row holds (None for the provider's rows)
# A sighting of a captured payment: payment_id (the charge's where the alias is known), booking_id,
# amount_minor, currency, captured_at, source ("provider" or "payment_orders"), and PAYMENT_ORDER_ID.
Sighting = dict[str, Any]


def captured_payments_from_provider(provider_records: pd.DataFrame) -> list[Sighting]:
    """Settled payments of the property's own records in the pull (those that name a property), keyed by
    charge id."""
    at = np.flatnonzero(
        (provider_records["kind"].to_numpy() == "payment")
        & provider_records["settled"].to_numpy(dtype=bool)
        & provider_records["property_id"].notna().to_numpy()
    )
    if not len(at):
        return []
    ids, bookings, amounts, currencies = (
        provider_records[name].to_numpy()[at].tolist()
        for name in ("provider_record_id", "booking_id", "amount_minor", "currency")
    )
    captured_at = list(provider_records["created_at"].iloc[at])
    return _sightings(ids, bookings, amounts, currencies, captured_at, "provider", [None] * len(at))


def captured_payments(
    provider_records: pd.DataFrame, payment_orders: pd.DataFrame, aliases: PaymentAliases
) -> list[Sighting]:
    """The provider's captured payments and the PMS's captured ``payment_orders``, both keyed by charge id
    where the alias is known (a payment order the pull does not explain keeps its own id); a payment
    order's own id stays in ``payment_order_id``, the id the PMS and the event processor look it up by.

    Sightings are plain rows: orphan detection walks them as rows, and a night's few dozen cost less so
    than through a frame built only to be read back."""
    order_ids = payment_orders["payment_id"]
    bookings, amounts, currencies, captured_at = (
        payment_orders[name].tolist() for name in ("booking_id", "amount_minor", "currency", "captured_at")
    )
    payment_ids = canonical_ids(order_ids, aliases).tolist()
    orders = _sightings(
        payment_ids, bookings, amounts, currencies, captured_at, "payment_orders", order_ids.tolist()
    )
    return captured_payments_from_provider(provider_records) + orders


def _sightings(
    payment_ids: list[Any],
    booking_ids: list[Any],
    amounts: list[Any],
    currencies: list[Any],
    captured_at: list[Any],
    source: str,
    order_ids: list[Any],
) -> list[Sighting]:
    """One source's sightings from its columns."""
    return [
        {
            "payment_id": payment_id,
            "booking_id": booking_id,
            "amount_minor": amount,
            "currency": currency,
            "captured_at": at,
            "source": source,
            PAYMENT_ORDER_ID: order_id,
        }
        for payment_id, booking_id, amount, currency, at, order_id in zip(
            payment_ids, booking_ids, amounts, currencies, captured_at, order_ids, strict=True
        )
    ]


def with_ledger_bookings(sightings: list[Sighting], ledger: pd.DataFrame) -> list[Sighting]:
    """``sightings`` where a provider sighting names no booking, with the booking of the ledger ``payment``
    entry that books it (``ledger``: the frame the diff compares, keyed by charge id, the matcher's pairs
    carrying their record's id).

    A terminal or a channel manager often hands the provider no booking, while the folio that posted the
    payment names one: the PMS recorded which stay the money paid, as a ``payment_orders`` row would.
    Without it every such payment would be an orphan (its booking unknown) although its stay is confirmed.
    A keyed world, whose provider names every booking, is unchanged (the same list is returned)."""
    if ledger.empty or not any(_unbooked(sighting) for sighting in sightings):
        return sightings
    payments = ledger[
        (ledger["kind"] == "payment") & ledger["provider_record_id"].notna() & ledger["booking_id"].notna()
    ].drop_duplicates("provider_record_id")
    if payments.empty:
        return sightings
    booking_of = dict(zip(payments["provider_record_id"], payments["booking_id"], strict=True))
    return [
        {**row, "booking_id": booking_of.get(row["payment_id"])} if _unbooked(row) else row
        for row in sightings
    ]


def _unbooked(sighting: Sighting) -> bool:
    return sighting["source"] == "provider" and not present(sighting["booking_id"])
