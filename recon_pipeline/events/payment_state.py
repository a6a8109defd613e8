"""A payment's current provider state as a ``payment_orders`` row, and what it means for its booking: pure.

The processor never acts on an event's payload (it may be stale, duplicated or out of order); it reads the
PaymentIntent (or, for a payment without one, the charge) by id and derives everything here:

- status: ``requires_*`` / ``processing`` → ``created`` (``failed`` when the latest charge failed, i.e. the
  attempt was declined); ``requires_capture`` → ``authorized``; ``canceled`` → ``failed``; ``succeeded``
  → ``captured``, ``partially_refunded`` or ``refunded`` by the latest charge's ``amount_refunded``.
- ``amount_minor``: the money captured once captured (a partial capture takes less), else the amount
  intended; ``captured_at`` is the capturing charge's ``created``.
- the moment that dates the payment's night (``occurred_at``): the latest charge's ``created``, else the
  PaymentIntent's.
- attribution: ``metadata.property_id`` (the PaymentIntent's, else the charge's); the processor falls back
  to the property whose ``provider_account`` is the event's connected account.
- the booking (``metadata.booking_id``) is confirmed only when the money is captured (or partially
  refunded) and the booking is ``pending`` / ``confirming``. A ``cancelled`` booking is never touched
  (outcome ``captured_for_cancelled_booking``, which the orphan report surfaces); created, authorized,
  refunded and failed payments leave the booking as it is, and the outcome says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from recon_pipeline.ledger.queries import CAPTURED_ORDER_STATUSES
from recon_pipeline.nights import night_window, parse_cutoff, property_zone
from recon_pipeline.provider.errors import ProviderDataError
from recon_pipeline.provider.stripe import (
    StripeObject,
    amount_field,
    created_at_field,
    currency_field,
    field_value,
    latest_charge_id,
    metadata_field,
)

CONFIRMABLE_BOOKING_STATUSES = ("pending", "confirming")
_INTENT_STATUSES = {
    "requires_payment_method": "created",
    "requires_confirmation": "created",
    "requires_action": "created",
    "processing": "created",
    "requires_capture": "authorized",
    "canceled": "failed",
}
_CHARGE_STATUSES = {"pending": "created", "failed": "failed"}


@dataclass(frozen=True)
class PaymentState:
    """What the provider says about one payment now, in the contract's terms."""

    provider_payment_id: str
    status: str  # a payment_orders status
    amount_minor: int
    amount_refunded_minor: int
    currency: str  # ISO 4217 upper case
    captured_at: datetime | None
    occurred_at: datetime
    property_id: str | None  # from metadata; None when the payment must be attributed by account
    booking_id: str | None

    def order_row(self, property_id: str, as_of: datetime) -> dict[str, Any]:
        """The ``payment_orders`` row; ``updated_at`` is when the provider was read (newer reads win)."""
        return {
            "provider_payment_id": self.provider_payment_id,
            "property_id": property_id,
            "booking_id": self.booking_id,
            "amount_minor": self.amount_minor,
            "amount_refunded_minor": self.amount_refunded_minor,
            "currency": self.currency,
            "status": self.status,
            "captured_at": self.captured_at,
            "updated_at": as_of,
        }


@dataclass(frozen=True)
class BookingAction:
    """Whether to confirm the booking, and the outcome recorded on the processed event."""

    confirm: bool
    outcome: str


def state_of_payment_intent(payment_intent: StripeObject, charge: StripeObject | None) -> PaymentState:
    """The state of a PaymentIntent, given its latest charge (None when it has none yet)."""
    what = "payment_intent"
    intent_id: str = field_value(payment_intent, "id", str, what)
    status: str = field_value(payment_intent, "status", str, what)
    if charge is not None and charge.get("id") != latest_charge_id(payment_intent):
        raise ProviderDataError(f"{what} {intent_id!r}: given charge {charge.get('id')!r}, not its latest")
    if status == "succeeded":
        if charge is None:
            raise ProviderDataError(f"{what} {intent_id!r} succeeded without a charge")
        order_status = _captured_status(charge)
    elif status in _INTENT_STATUSES:
        order_status = _INTENT_STATUSES[status]
        if order_status == "created" and charge is not None and charge.get("status") == "failed":
            order_status = "failed"
    else:
        raise ProviderDataError(f"{what} {intent_id!r}: unknown status {status!r}")
    captured = order_status in CAPTURED_ORDER_STATUSES or order_status == "refunded"
    metadata = {
        **(metadata_field(charge, "charge") if charge else {}),
        **metadata_field(payment_intent, what),
    }
    return PaymentState(
        provider_payment_id=intent_id,
        status=order_status,
        amount_minor=amount_field(payment_intent, "amount_received" if captured else "amount", what),
        amount_refunded_minor=amount_field(charge, "amount_refunded", "charge") if charge else 0,
        currency=currency_field(payment_intent, what),
        captured_at=created_at_field(charge, "charge") if captured and charge else None,
        occurred_at=created_at_field(charge, "charge") if charge else created_at_field(payment_intent, what),
        property_id=metadata.get("property_id") or None,
        booking_id=metadata.get("booking_id") or None,
    )


def state_of_charge(charge: StripeObject) -> PaymentState:
    """The state of a payment that is a bare charge (no PaymentIntent: the order is keyed by the charge)."""
    what = "charge"
    status: str = field_value(charge, "status", str, what)
    if status == "succeeded":
        captured: bool = field_value(charge, "captured", bool, what)
        order_status = _captured_status(charge) if captured else "authorized"
    elif status in _CHARGE_STATUSES:
        order_status = _CHARGE_STATUSES[status]
    else:
        raise ProviderDataError(f"{what} {charge.get('id')!r}: unknown status {status!r}")
    is_captured = order_status in CAPTURED_ORDER_STATUSES or order_status == "refunded"
    metadata = metadata_field(charge, what)
    return PaymentState(
        provider_payment_id=field_value(charge, "id", str, what),
        status=order_status,
        amount_minor=amount_field(charge, "amount_captured" if is_captured else "amount", what),
        amount_refunded_minor=amount_field(charge, "amount_refunded", what),
        currency=currency_field(charge, what),
        captured_at=created_at_field(charge, what) if is_captured else None,
        occurred_at=created_at_field(charge, what),
        property_id=metadata.get("property_id") or None,
        booking_id=metadata.get("booking_id") or None,
    )


def _captured_status(charge: StripeObject) -> str:
    """captured / partially_refunded / refunded of a captured charge, by how much of it was refunded."""
    refunded = amount_field(charge, "amount_refunded", "charge")
    if charge.get("refunded") is True or refunded >= amount_field(charge, "amount_captured", "charge") > 0:
        return "refunded"
    return "partially_refunded" if refunded > 0 else "captured"


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
