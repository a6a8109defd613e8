"""What a payment's current provider state means for its booking: pure.

The processor never acts on an event's payload (it may be stale, duplicated or out of order); it reads the
payment by id from the provider (``ProviderClient.payment_state``), whose package maps the provider's
objects to a ``PaymentState`` (``providers/events.py``). Everything after that is the same for every
provider:

- attribution: ``property_id`` is what the payment's own metadata names; the processor falls back to
  ``payment_orders`` and to the property that alone owns the event's provider account.
- the booking (``booking_id`` from the payment's metadata) is confirmed only when the money is captured
  (or partially refunded) and the booking is ``pending`` / ``confirming``. A ``cancelled`` booking is never
  touched (outcome ``captured_for_cancelled_booking``, which the orphan report surfaces); created,
  authorized, refunded and failed payments leave the booking as it is, and the outcome says which.
- the night of the payment is the property's night containing ``occurred_at``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from recon_pipeline.nights import night_window, parse_cutoff, property_zone
from recon_pipeline.providers.events import CAPTURED_ORDER_STATUSES

CONFIRMABLE_BOOKING_STATUSES = ("pending", "confirming")


@dataclass(frozen=True)
class BookingAction:
    """Whether to confirm the booking, and the outcome recorded on the processed event."""

    confirm: bool
    outcome: str


def booking_action(order_status: str, booking_id: str | None, booking_status: str | None) -> BookingAction:
    """What the payment's state does to its booking (``booking_status`` None: not in ``bookings``)."""
    if booking_id is None:
        return BookingAction(False, "no_booking_reference")
    if booking_status is None:
        return BookingAction(False, "booking_not_found")
    if order_status not in CAPTURED_ORDER_STATUSES:
        return BookingAction(False, f"payment_{order_status}")
    if booking_status in CONFIRMABLE_BOOKING_STATUSES:
        return BookingAction(True, "booking_confirmed")
    if booking_status == "confirmed":
        return BookingAction(False, "booking_already_confirmed")
    return BookingAction(False, f"captured_for_{booking_status}_booking")


def night_of(moment: datetime, timezone: str, cutoff: str = "00:00") -> date:
    """The property's night whose window contains ``moment``.

    The local date (a day earlier before the cutoff) is right except when the cutoff falls into a DST gap
    or fold; night windows tile time, so checking the candidate's window and stepping once settles it.
    """
    local = moment.astimezone(property_zone(timezone))
    candidate = local.date() - timedelta(days=1 if local.time() < parse_cutoff(cutoff) else 0)
    window = night_window(candidate, timezone, cutoff)
    if moment < window.start:
        return candidate - timedelta(days=1)
    if moment >= window.end:
        return candidate + timedelta(days=1)
    return candidate
