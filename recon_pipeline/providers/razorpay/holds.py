"""A Razorpay payment as an authorization hold: pure.

A payment a merchant captures manually stays ``authorized`` (``captured: false``) until captured. Razorpay
gives no per-payment deadline: the account's capture timeout (3 days from creation by default, set on the
Dashboard's payment capture settings) decides, after which Razorpay auto-refunds the payment (status
``refunded`` with ``captured: false``: only uncaptured payments are auto-refunded). So ``capture_before``
is the payment's ``created_at`` plus the configured timeout, and a refunded payment that was never
captured is a hold that lapsed.
"""

from __future__ import annotations

from datetime import timedelta

from recon_pipeline.providers.holds import CAPTURED, LAPSED, OPEN, AuthorizationHold, HoldState
from recon_pipeline.providers.objects import (
    ProviderObject,
    amount_field,
    created_at_field,
    currency_field,
    field_value,
    optional_id_field,
    record_id,
)
from recon_pipeline.providers.razorpay.state import notes_field

DEFAULT_CAPTURE_TIMEOUT = timedelta(days=3)  # Razorpay's default manual-capture window


def hold_of_payment(payment: ProviderObject, capture_timeout: timedelta) -> AuthorizationHold | None:
    """The hold a payment is or was; None for one that never was authorized (``created``, ``failed``)."""
    what = "payment"
    status: str = field_value(payment, "status", str, what)
    captured: bool = field_value(payment, "captured", bool, what)
    state: HoldState
    if status == "authorized":
        state = OPEN
    elif captured:
        state = CAPTURED
    elif status == "refunded":
        state = LAPSED
    else:
        return None
    payment_id = record_id(payment, what)
    notes, about = notes_field(payment, what), f"notes of payment {payment_id!r}"
    authorized_at = created_at_field(payment, what, "created_at")
    return AuthorizationHold(
        payment_id=payment_id,
        property_id=optional_id_field(notes, "property_id", about),
        booking_id=optional_id_field(notes, "booking_id", about),
        amount_minor=amount_field(payment, "amount", what),
        currency=currency_field(payment, what),
        authorized_at=authorized_at,
        capture_before=authorized_at + capture_timeout,
        state=state,
    )
