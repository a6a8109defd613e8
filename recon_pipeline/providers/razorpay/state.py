"""A Razorpay payment's current state as a ``PaymentState``: pure, the Razorpay half of ``payment_state.py``.

Razorpay has no PaymentIntent/charge split: the payment (``pay_...``) is what ``payment_orders`` is keyed
by, and its status maps directly: ``created`` → created, ``authorized`` → authorized, ``captured`` →
captured (``partially_refunded`` once ``amount_refunded`` > 0), ``refunded`` → refunded, ``failed`` →
failed. A Razorpay payment carries no capture time, so a captured payment's ``captured_at`` is its
``created_at`` (capture follows authorisation within seconds for auto-captured payments), which also
dates its night. Attribution and booking come from ``notes.property_id`` / ``notes.booking_id``.
"""

from __future__ import annotations

from typing import Any

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.events import PaymentState
from recon_pipeline.providers.objects import (
    ProviderObject,
    amount_field,
    created_at_field,
    currency_field,
    field_value,
    metadata_field,
    record_id,
)

_STATUSES = {"created": "created", "authorized": "authorized", "refunded": "refunded", "failed": "failed"}


def notes_field(obj: ProviderObject, what: str) -> dict[str, Any]:
    """``notes`` as a dict: Razorpay sends ``[]`` for no notes."""
    return {} if obj.get("notes") == [] else metadata_field(obj, what, "notes")


def state_of_razorpay_payment(payment: ProviderObject) -> PaymentState:
    """The state of a Razorpay payment entity (``GET /v1/payments/{id}``)."""
    what = "payment"
    payment_id = record_id(payment, what)
    status: str = field_value(payment, "status", str, what)
    refunded = amount_field(payment, "amount_refunded", what)
    if status == "captured":
        order_status = "partially_refunded" if refunded > 0 else "captured"
    elif status in _STATUSES:
        order_status = _STATUSES[status]
    else:
        raise ProviderDataError(f"{what} {payment_id!r}: unknown status {status!r}")
    created_at = created_at_field(payment, what, "created_at")
    notes = notes_field(payment, what)
    return PaymentState(
        provider_payment_id=payment_id,
        status=order_status,
        amount_minor=amount_field(payment, "amount", what),
        amount_refunded_minor=refunded,
        currency=currency_field(payment, what),
        captured_at=created_at if order_status in ("captured", "partially_refunded", "refunded") else None,
        occurred_at=created_at,
        property_id=notes.get("property_id") or None,
        booking_id=notes.get("booking_id") or None,
    )
