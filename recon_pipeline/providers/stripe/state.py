"""A Stripe payment's current state as a ``PaymentState``: pure.

The processor never acts on an event's payload (it may be stale, duplicated or out of order); it reads the
PaymentIntent (or, for a payment without one, the charge) by id and reads it here:

- status: ``requires_*`` / ``processing`` → ``created`` (``failed`` when the latest charge failed, i.e. the
  attempt was declined); ``requires_capture`` → ``authorized``; ``canceled`` → ``failed``; ``succeeded``
  → ``captured``, ``partially_refunded`` or ``refunded`` by the latest charge's ``amount_refunded``.
- ``amount_minor``: the money captured once captured (a partial capture takes less), else the amount
  intended; ``captured_at`` is when the charge's balance transaction was created (``captures.moved_at``:
  Stripe's charge has no capture time, and a hold captured at checkout was created at check-in), so the
  charge is read with ``balance_transaction`` expanded.
- the moment that dates the payment's night (``occurred_at``): when the latest charge's money moved (its
  capture, or its ``created`` before one), else the PaymentIntent's ``created``: a hold captured tonight
  is tonight's, as it is in the night's pull.
- attribution and booking: ``metadata.property_id`` / ``metadata.booking_id`` (the PaymentIntent's, else the
  charge's); what follows for the booking is provider-neutral (``events.payment_state``).
"""

from __future__ import annotations

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.events import CAPTURED_ORDER_STATUSES, PaymentState
from recon_pipeline.providers.objects import (
    ProviderObject,
    amount_field,
    created_at_field,
    currency_field,
    field_value,
    metadata_field,
)
from recon_pipeline.providers.stripe.captures import moved_at

StripeObject = ProviderObject

_INTENT_STATUSES = {
    "requires_payment_method": "created",
    "requires_confirmation": "created",
    "requires_action": "created",
    "processing": "created",
    "requires_capture": "authorized",
    "canceled": "failed",
}
_CHARGE_STATUSES = {"pending": "created", "failed": "failed"}


def latest_charge_id(payment_intent: StripeObject) -> str | None:
    """The id of the PaymentIntent's latest charge (an id, or an expanded object), None before any attempt."""
    latest = payment_intent.get("latest_charge")
    if isinstance(latest, dict):
        latest = latest.get("id")
    if latest is None:
        return None
    if not isinstance(latest, str) or not latest:
        raise ProviderDataError(f"payment_intent {payment_intent.get('id')!r}: latest_charge is {latest!r}")
    return latest


def expanded_latest_charge(payment_intent: StripeObject) -> StripeObject | None:
    """The PaymentIntent's latest charge when it came expanded (``expand[]=latest_charge``), else None."""
    latest = payment_intent.get("latest_charge")
    return latest if isinstance(latest, dict) else None


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
        captured_at=moved_at(charge) if captured and charge else None,
        occurred_at=moved_at(charge) if charge else created_at_field(payment_intent, what),
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
        captured_at=moved_at(charge) if is_captured else None,
        occurred_at=moved_at(charge),
        property_id=metadata.get("property_id") or None,
        booking_id=metadata.get("booking_id") or None,
    )


def _captured_status(charge: StripeObject) -> str:
    """captured / partially_refunded / refunded of a captured charge, by how much of it was refunded."""
    refunded = amount_field(charge, "amount_refunded", "charge")
    if charge.get("refunded") is True or refunded >= amount_field(charge, "amount_captured", "charge") > 0:
        return "refunded"
    return "partially_refunded" if refunded > 0 else "captured"
