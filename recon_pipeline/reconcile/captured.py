"""Captured payments as the provider and the PMS report them, in the shape orphan detection reads.

Both sides are keyed by the charge id (``identity.py``): ``payment_orders`` may hold a payment by its
PaymentIntent or order id, the provider's frame knows which charge that is, and one payment must be one
orphan whichever id each side holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from recon_pipeline.frames import typed_frame
from recon_pipeline.reconcile.identity import PaymentAliases, canonical_ids

CAPTURED_PAYMENT_COLUMNS = ["payment_id", "booking_id", "amount_minor", "currency", "captured_at", "source"]
PAYMENT_ORDER_ID = "payment_order_id"  # the id a payment_orders row holds (null for the provider's rows)
_DTYPES = {
    **dict.fromkeys(CAPTURED_PAYMENT_COLUMNS, "object"),
    "amount_minor": "int64",
    "captured_at": "datetime64[ns, UTC]",
    PAYMENT_ORDER_ID: "object",
}
Columns = dict[str, list[Any]]


def captured_payments_from_provider(provider_records: pd.DataFrame) -> pd.DataFrame:
    """Settled payments of the property's own records in the pull, keyed by charge id."""
    return _frame(_from_provider(provider_records))


def captured_payments(
    provider_records: pd.DataFrame, payment_orders: pd.DataFrame, aliases: PaymentAliases
) -> pd.DataFrame:
    """The provider's captured payments and the PMS's captured ``payment_orders``, both keyed by charge id
    where the alias is known (a payment order the pull does not explain keeps its own id); a payment
    order's own id stays in ``payment_order_id``, the id the PMS and the event processor look it up by.

    Built from column lists in one typed frame: a night's few dozen sightings cost less so than through
    the selections, frames and concatenation pandas would take."""
    order_ids = payment_orders["payment_id"]
    orders: Columns = {
        "payment_id": canonical_ids(order_ids, aliases).tolist(),
        **{name: payment_orders[name].tolist() for name in ("booking_id", "amount_minor", "currency")},
        "captured_at": payment_orders["captured_at"].tolist(),
        "source": ["payment_orders"] * len(payment_orders),
        PAYMENT_ORDER_ID: order_ids.tolist(),
    }
    return _frame(_from_provider(provider_records), orders)


def _from_provider(provider_records: pd.DataFrame) -> Columns:
    """The sightings of the pull: its settled payments that name a property."""
    at = np.flatnonzero(
        (provider_records["kind"].to_numpy() == "payment")
        & provider_records["settled"].to_numpy(dtype=bool)
        & provider_records["property_id"].notna().to_numpy()
    )

    def taken(name: str) -> list[Any]:
        return provider_records[name].to_numpy()[at].tolist()

    return {
        "payment_id": taken("provider_record_id"),
        "booking_id": taken("booking_id"),
        "amount_minor": taken("amount_minor"),
        "currency": taken("currency"),
        "captured_at": list(provider_records["created_at"].iloc[at]),
        "source": ["provider"] * len(at),
        PAYMENT_ORDER_ID: [None] * len(at),
    }


def _frame(*parts: Columns) -> pd.DataFrame:
    columns = {name: [value for part in parts for value in part[name]] for name in _DTYPES}
    return typed_frame(columns, _DTYPES, len(columns["payment_id"]))


def with_ledger_bookings(captured: pd.DataFrame, ledger: pd.DataFrame) -> pd.DataFrame:
    """``captured`` where a provider sighting names no booking, with the booking of the ledger ``payment``
    entry that books it (``ledger``: the frame the diff compares, keyed by charge id, the matcher's pairs
    carrying their record's id).

    A terminal or a channel manager often hands the provider no booking, while the folio that posted the
    payment names one: the PMS recorded which stay the money paid, as a ``payment_orders`` row would.
    Without it every such payment would be an orphan (its booking unknown) although its stay is confirmed.
    A keyed world, whose provider names every booking, is unchanged (the same frame is returned)."""
    unbooked = captured["booking_id"].isna().to_numpy() & (captured["source"] == "provider").to_numpy()
    if not unbooked.any() or ledger.empty:
        return captured
    payments = ledger[
        (ledger["kind"] == "payment") & ledger["provider_record_id"].notna() & ledger["booking_id"].notna()
    ].drop_duplicates("provider_record_id")
    if payments.empty:
        return captured
    booking_of = dict(zip(payments["provider_record_id"], payments["booking_id"], strict=True))
    filled = [
        booking_of.get(payment_id) if missing else booking
        for payment_id, booking, missing in zip(
            captured["payment_id"], captured["booking_id"], unbooked, strict=True
        )
    ]
    return captured.assign(booking_id=pd.Series(filled, index=captured.index, dtype="object"))
