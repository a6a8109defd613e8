"""A Stripe payment as an authorization hold: pure mapping of a PaymentIntent and its latest charge.

Lodging confirms a PaymentIntent with ``capture_method=manual``: it waits in ``requires_capture`` with an
uncaptured charge (``captured: false``) whose card says until when it can be captured
(``payment_method_details.card.capture_before``, unix seconds; 7 days by default, up to 30 days with
extended authorization). Capturing it makes the intent ``succeeded`` and the charge ``captured``. When
``capture_before`` passes uncaptured, Stripe cancels the intent itself (``cancellation_reason``
``automatic``, Stripe's own reason; the ones a merchant gives are ``duplicate``, ``fraudulent``,
``requested_by_customer`` and ``abandoned``): the hold lapsed. A bare charge without an intent cannot tell
an expiry from a release (both leave it uncaptured and refunded), so it reads as released.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.holds import CAPTURED, LAPSED, OPEN, RELEASED, AuthorizationHold, HoldState
from recon_pipeline.providers.objects import (
    ProviderObject,
    amount_field,
    created_at_field,
    currency_field,
    field_value,
    metadata_field,
    optional_id_field,
    record_id,
)
from recon_pipeline.providers.stripe.state import latest_charge_id

STANDARD_AUTHORIZATION = timedelta(days=7)  # a card authorization without extended authorization
STRIPE_EXPIRY_REASON = "automatic"  # cancellation_reason of an intent Stripe cancelled itself


def capture_before(charge: ProviderObject) -> datetime | None:
    """``payment_method_details.card.capture_before`` of a card charge, None when absent (not a card, or
    already captured on an API version that drops it)."""
    details = charge.get("payment_method_details")
    card = details.get("card") if isinstance(details, dict) else None
    if not isinstance(card, dict) or card.get("capture_before") is None:
        return None
    return created_at_field(card, f"card of charge {charge.get('id')!r}", "capture_before")


def hold_of_payment_intent(intent: ProviderObject, charge: ProviderObject | None) -> AuthorizationHold | None:
    """The hold a PaymentIntent is or was, given its latest charge; None when it never was one (no charge
    yet, a declined attempt, or a charge captured at once)."""
    intent_id = record_id(intent, "payment_intent")
    if charge is None or charge.get("status") == "failed":
        return None
    if charge.get("id") != latest_charge_id(intent):
        raise ProviderDataError(
            f"payment_intent {intent_id!r}: given charge {charge.get('id')!r}, not its latest"
        )
    status: str = field_value(intent, "status", str, "payment_intent")
    state: HoldState
    if status == "requires_capture":
        state = OPEN
    elif status == "canceled":
        state = LAPSED if intent.get("cancellation_reason") == STRIPE_EXPIRY_REASON else RELEASED
    else:
        state = CAPTURED
    metadata = {**metadata_field(charge, "charge"), **metadata_field(intent, "payment_intent")}
    return _hold(intent_id, state, charge, metadata)


def hold_of_charge(charge: ProviderObject) -> AuthorizationHold | None:
    """The hold a bare charge (no PaymentIntent) is or was; None for a failed or pending charge."""
    if charge.get("status") != "succeeded":
        return None
    if field_value(charge, "captured", bool, "charge"):
        state: HoldState = CAPTURED
    else:
        state = RELEASED if charge.get("refunded") is True else OPEN
    return _hold(record_id(charge, "charge"), state, charge, metadata_field(charge, "charge"))


def _hold(
    payment_id: str, state: HoldState, charge: ProviderObject, metadata: ProviderObject
) -> AuthorizationHold | None:
    before = capture_before(charge)
    if state == CAPTURED and before is None:
        return None  # captured at once (automatic capture): never a hold
    return AuthorizationHold(
        payment_id=payment_id,
        property_id=optional_id_field(metadata, "property_id", f"metadata of {payment_id!r}"),
        booking_id=optional_id_field(metadata, "booking_id", f"metadata of {payment_id!r}"),
        amount_minor=amount_field(charge, "amount", "charge"),
        currency=currency_field(charge, "charge"),
        authorized_at=created_at_field(charge, "charge"),
        capture_before=before,
        state=state,
    )
