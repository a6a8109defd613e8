"""Authorization holds judged against a night: which ones are about to be, or were, lost revenue. Pure.

Lodging authorizes at check-in and captures at checkout. An uncaptured hold is neither an orphan (nothing
was captured: ``captured.py`` reads settled payments only) nor missing in the ledger (its charge is not
settled, so the diff never asks for it to be booked). It becomes a finding when it may be lost:

- ``authorization_expiring``: the hold of a **confirmed** booking, not captured, whose ``capture_before``
  falls in ``[end of this night, end of the next night)``. The run of a night happens after the night
  ends, so these are the holds that lapse before the next run: the last warning anyone can act on. Each
  hold falls in exactly one night's range (consecutive nights of a property are contiguous), so one hold
  is one finding, on one night, whichever nights are re-run.
- the same finding, detail "lapsed", once the provider let that hold expire uncaptured: the night keeps
  its finding (it stays true on a re-run), and the detail tells that the revenue is now lost.

Judged against the night's window, never the wall clock, so a re-run of an old night says the same as long
as the provider says the same; a hold captured since (``captured``) or released on purpose (``released``,
e.g. the booking was cancelled) is no finding, so the re-run clears it. A hold of a booking that is not
confirmed is no finding: nothing is owed for a stay that will not happen.

The finding proposes no adjustment (nothing was posted and nothing is to post until the money moves);
``provider_record_id`` is the payment's id (Stripe's PaymentIntent), ``record_key`` ``<id>:payment``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from recon_pipeline.categories import AUTHORIZATION_EXPIRING, finding_frames
from recon_pipeline.money import format_minor
from recon_pipeline.nights import NightWindow
from recon_pipeline.providers.holds import LAPSED, OPEN, AuthorizationHold
from recon_pipeline.reconcile.orphans import CONFIRMED


@dataclass(frozen=True)
class HoldsNight:
    """What judges a property-night's holds: the holds read from the provider, the bookings they pay and
    those bookings' states, the night and the next one."""

    property_id: str
    holds: Sequence[AuthorizationHold]
    booking_of: Mapping[str, str]  # payment id → booking id, as the PMS's ``payment_orders`` know it
    booking_status: Mapping[str, str]  # booking id → status
    night: NightWindow
    next_night: NightWindow


def expiring_authorizations(
    property_id: str,
    holds: Sequence[AuthorizationHold],
    booking_of: Mapping[str, str],
    booking_status: Mapping[str, str],
    night: NightWindow,
    next_night: NightWindow,
) -> pd.DataFrame:
    """``authorization_expiring`` findings of the property's night, ordered by record_key.

    ``booking_of``: payment id → booking id as the PMS's ``payment_orders`` know it (used when the
    provider's metadata names none); ``booking_status``: booking id → status. A hold whose metadata names
    another property is that property's, never this one's."""
    night_holds = HoldsNight(property_id, holds, booking_of, booking_status, night, next_night)
    return expiring_authorizations_of_nights([night_holds])[0]


def expiring_authorizations_of_nights(nights: Sequence[HoldsNight]) -> list[pd.DataFrame]:
    """:func:`expiring_authorizations` of many property-nights, their findings built as one frame."""
    return finding_frames([_expiring(night) for night in nights])


def _expiring(night: HoldsNight) -> dict[str, list[Any]]:
    """The finding columns of one property-night's expiring holds."""
    found = []
    for hold in sorted({hold.payment_id: hold for hold in night.holds}.values(), key=lambda h: h.payment_id):
        booking_id = hold.booking_id or night.booking_of.get(hold.payment_id)
        if (
            hold.state in (OPEN, LAPSED)
            and hold.capture_before is not None
            and night.night.end <= hold.capture_before < night.next_night.end
            and hold.property_id in (None, night.property_id)
            and booking_id is not None
            and night.booking_status.get(booking_id) == CONFIRMED
        ):
            found.append((hold, booking_id))
    return {
        "category": [AUTHORIZATION_EXPIRING] * len(found),
        "record_key": [f"{hold.payment_id}:payment" for hold, _ in found],
        "kind": ["payment"] * len(found),
        "provider_record_id": [hold.payment_id for hold, _ in found],
        "booking_id": [booking_id for _, booking_id in found],
        "provider_amount_minor": [hold.amount_minor for hold, _ in found],
        "difference_minor": [hold.amount_minor for hold, _ in found],
        "currency": [hold.currency for hold, _ in found],
        "detail": [_detail(hold, booking_id, night.next_night) for hold, booking_id in found],
    }


def _detail(hold: AuthorizationHold, booking_id: str, next_night: NightWindow) -> str:
    held = f"hold of {format_minor(hold.amount_minor, hold.currency)} for confirmed booking {booking_id}"
    deadline = f"{hold.capture_before:%Y-%m-%d %H:%M} UTC"
    if hold.state == LAPSED:
        return f"{held} lapsed uncaptured at {deadline}: the revenue is lost unless the guest pays again"
    return f"{held} is uncaptured; capture it before {deadline}, before night {next_night.night} ends"
