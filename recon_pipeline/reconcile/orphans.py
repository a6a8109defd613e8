"""Captured money whose booking never got confirmed: the guest paid, the property holds no stay for it.

A payment is seen by the provider and, usually, by the PMS's own ``payment_orders``; both sightings
arrive here and count once, the provider's winning because it is the authority on money that moved.
A capture younger than ``grace`` is still in flight (the confirmation webhook may not have arrived),
so it is not reported yet. The detail names the capture time, not an age, so that re-detecting the
same orphan later leaves its row unchanged.

A payment is keyed by its charge (``record_key`` ``payment:<charge id>``, see ``identity.py``) whichever
id each side holds; its ``provider_record_id`` is the id its ``payment_orders`` row holds when there is one
(what the PMS, the overview and the event processor look it up by), else the charge's.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from recon_pipeline.reconcile.captured import PAYMENT_ORDER_ID
from recon_pipeline.reconcile.categories import ORPHANED_CAPTURED_PAYMENT
from recon_pipeline.reconcile.diff import discrepancy_frame

CONFIRMED = "confirmed"
_SOURCE_PREFERENCE = {"provider": 0, "payment_orders": 1}


def find_orphaned_captured_payments(
    captured_payments: pd.DataFrame, bookings: pd.DataFrame, now: datetime, grace: timedelta
) -> pd.DataFrame:
    """Discrepancy rows (category ``orphaned_captured_payment``) ordered by record_key."""
    payments = _one_per_payment(captured_payments)
    payments = payments[payments["captured_at"] <= pd.Timestamp(now) - grace]
    states = bookings.drop_duplicates("booking_id").set_index("booking_id")["status"]
    status = payments["booking_id"].map(states).to_numpy()
    unconfirmed = status != CONFIRMED
    # Positional: assigning a Series to an empty frame would adopt the Series' index (rows of NaN).
    orphans = payments[unconfirmed].assign(status=status[unconfirmed])
    orphans = orphans.sort_values("payment_id", kind="stable")
    amounts = orphans["amount_minor"].astype("int64").tolist()
    order_ids = orphans["payment_id"].map(_payment_order_ids(captured_payments))
    looked_up_by = order_ids.fillna(orphans["payment_id"])
    return discrepancy_frame(
        {
            "category": [ORPHANED_CAPTURED_PAYMENT] * len(orphans),
            "record_key": [f"payment:{payment_id}" for payment_id in orphans["payment_id"]],
            "kind": ["payment"] * len(orphans),
            "provider_record_id": looked_up_by.tolist(),
            "booking_id": [_or_none(booking) for booking in orphans["booking_id"]],
            "provider_amount_minor": amounts,
            "difference_minor": amounts,
            "currency": orphans["currency"].tolist(),
            "detail": [
                f"captured {captured:%Y-%m-%d %H:%M} UTC; {_booking_state(booking, state)}"
                for captured, booking, state in zip(
                    orphans["captured_at"], orphans["booking_id"], orphans["status"], strict=True
                )
            ],
        }
    )


def _one_per_payment(captured_payments: pd.DataFrame) -> pd.DataFrame:
    """Each payment once, as the provider saw it when it did, else as payment_orders recorded it."""
    preference = captured_payments["source"].map(_SOURCE_PREFERENCE).fillna(len(_SOURCE_PREFERENCE))
    ranked = captured_payments.assign(_preference=preference.to_numpy(dtype=np.int64))
    ranked = ranked.sort_values(["payment_id", "_preference"], kind="stable")
    return ranked.drop_duplicates("payment_id", keep="first").drop(columns="_preference")


def _payment_order_ids(captured_payments: pd.DataFrame) -> pd.Series:
    """payment id → the id its payment_orders row holds, for the payments that have one."""
    if PAYMENT_ORDER_ID not in captured_payments:
        return pd.Series(dtype="object")
    rows = captured_payments.dropna(subset=[PAYMENT_ORDER_ID]).drop_duplicates("payment_id")
    return rows.set_index("payment_id")[PAYMENT_ORDER_ID]


def _booking_state(booking: object, status: object) -> str:
    if not _present(booking):
        return "it names no booking"
    if not _present(status):
        return f"booking {booking} does not exist"
    return f"booking {booking} is {status}"


def _present(value: object) -> bool:
    return value is not None and not pd.isna(value)


def _or_none(value: object) -> object:
    return value if _present(value) else None
