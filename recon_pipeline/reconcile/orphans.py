"""Captured money whose booking never got confirmed: the guest paid, the property holds no stay for it.

A payment is seen by the provider and, usually, by the PMS's own ``payment_orders``; both sightings
arrive here and count once, the provider's winning because it is the authority on money that moved. Its
booking is the one the evidence names: the provider's metadata, else the ``payment_orders`` row that
attributes it (a bare charge on a shared account names no booking of its own, yet its property's PMS
recorded which booking it paid). Only a payment with no booking from either, or whose booking is not
confirmed after the grace, is an orphan.
A capture younger than ``grace`` is still in flight (the confirmation webhook may not have arrived),
so it is not reported yet. The detail names the capture time, not an age, so that re-detecting the
same orphan later leaves its row unchanged.

A payment is keyed by its charge (``record_key`` ``payment:<charge id>``, see ``identity.py``) whichever
id each side holds; its ``provider_record_id`` is the id its ``payment_orders`` row holds when there is one
(what the PMS, the overview and the event processor look it up by), else the charge's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from recon_pipeline.categories import ORPHANED_CAPTURED_PAYMENT, finding_frames
from recon_pipeline.frames import present
from recon_pipeline.reconcile.captured import PAYMENT_ORDER_ID

CONFIRMED = "confirmed"
_SOURCE_PREFERENCE = {"provider": 0, "payment_orders": 1}


def find_orphaned_captured_payments(
    sightings: Sequence[Mapping[str, Any]], statuses: Mapping[str, str], now: datetime, grace: timedelta
) -> pd.DataFrame:
    """Finding rows (category ``orphaned_captured_payment``) ordered by record_key, of the captured
    payments' sightings (``captured.py``); ``statuses``: booking id → status of (at least) the payments'
    bookings.

    A night holds a few dozen sightings: they are walked as Python rows, which costs a fraction of the
    dozen pandas operations (sorts, de-duplications, maps) the same rules take on frames this small."""
    return orphans_of_nights([sightings], statuses, now, grace)[0]


def orphans_of_nights(
    nights: Sequence[Sequence[Mapping[str, Any]]],
    statuses: Mapping[str, str],
    now: datetime,
    grace: timedelta,
) -> list[pd.DataFrame]:
    """:func:`find_orphaned_captured_payments` of many nights' sightings (``statuses`` holds at least every
    night's bookings), their findings built as one frame."""
    cutoff = pd.Timestamp(now) - grace
    return finding_frames([_orphans(sightings, statuses, cutoff) for sightings in nights])


def _orphans(
    sightings: Sequence[Mapping[str, Any]], statuses: Mapping[str, str], cutoff: pd.Timestamp
) -> dict[str, list[Any]]:
    """The finding columns of one night's orphaned captured payments."""
    orphans = [
        (payment, state)
        for payment in sorted(_one_per_payment(sightings).values(), key=lambda row: row["payment_id"])
        if payment["captured_at"] <= cutoff
        and (state := statuses.get(payment["booking_id"]) if present(payment["booking_id"]) else None)
        != CONFIRMED
    ]
    order_ids = _payment_order_ids(sightings)
    amounts = [int(payment["amount_minor"]) for payment, _state in orphans]
    return {
        "category": [ORPHANED_CAPTURED_PAYMENT] * len(orphans),
        "record_key": [f"payment:{payment['payment_id']}" for payment, _state in orphans],
        "kind": ["payment"] * len(orphans),
        "provider_record_id": [
            order_ids.get(payment["payment_id"], payment["payment_id"]) for payment, _state in orphans
        ],
        "booking_id": [_or_none(payment["booking_id"]) for payment, _state in orphans],
        "provider_amount_minor": amounts,
        "difference_minor": amounts,
        "currency": [payment["currency"] for payment, _state in orphans],
        "detail": [
            f"captured {payment['captured_at']:%Y-%m-%d %H:%M} UTC; "
            f"{_booking_state(payment['booking_id'], state)}"
            for payment, state in orphans
        ],
    }


def _one_per_payment(sightings: Sequence[Mapping[str, Any]]) -> dict[object, Mapping[str, Any]]:
    """Each payment once, as the provider saw it when it did, else as payment_orders recorded it (the
    first such sighting), with the booking the most preferred sighting that names one names."""
    chosen: dict[object, Mapping[str, Any]] = {}
    booked: dict[object, Mapping[str, Any]] = {}
    for row in sightings:
        payment_id = row["payment_id"]
        held = chosen.get(payment_id)
        if held is None or _preference(row) < _preference(held):
            chosen[payment_id] = row
        naming = booked.get(payment_id)
        if present(row["booking_id"]) and (naming is None or _preference(row) < _preference(naming)):
            booked[payment_id] = row
    return {
        payment_id: {**row, "booking_id": booked[payment_id]["booking_id"]} if payment_id in booked else row
        for payment_id, row in chosen.items()
    }


def _preference(row: Mapping[str, Any]) -> int:
    return _SOURCE_PREFERENCE.get(row["source"], len(_SOURCE_PREFERENCE))


def _payment_order_ids(sightings: Sequence[Mapping[str, Any]]) -> dict[object, object]:
    """payment id → the id its payment_orders row holds (the first), for the payments that have one."""
    found: dict[object, object] = {}
    for row in sightings:
        if present(row.get(PAYMENT_ORDER_ID)):
            found.setdefault(row["payment_id"], row[PAYMENT_ORDER_ID])
    return found


def _booking_state(booking: object, status: object) -> str:
    if not present(booking):
        return "it names no booking"
    if not present(status):
        return f"booking {booking} does not exist"
    return f"booking {booking} is {status}"


def _or_none(value: object) -> object:
    return value if present(value) else None
