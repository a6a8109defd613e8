"""Authorization holds, provider-neutral: what a provider says of a payment that was authorized to be
captured later (lodging pre-authorizes at check-in and captures at checkout).

A hold is read by id, in its current state (``ProviderClient.authorization_holds``): the reconciliation of
a night asks about the holds it has reason to know of (the PMS's ``payment_orders`` in ``authorized``, and
the holds it reported before), whatever night they were made in, because a hold made days earlier is still
open tonight. What a hold means for a night is judged in ``reconcile/holds.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

HoldState = Literal["open", "captured", "lapsed", "released"]
OPEN: Final = "open"  # authorized, not captured yet: capturable until ``capture_before``
CAPTURED: Final = "captured"  # the money was taken (the capture is a payment like any other)
LAPSED: Final = "lapsed"  # the provider let the authorization expire uncaptured: revenue lost
RELEASED: Final = "released"  # cancelled on purpose (the booking's stay will not be charged)


@dataclass(frozen=True)
class AuthorizationHold:
    """One payment that is or was an authorization awaiting capture, as the provider shows it now.

    ``payment_id`` is the id the payment is looked up by (Stripe's PaymentIntent ``pi_``, else the charge;
    Razorpay's payment ``pay_``); ``capture_before`` is None when the provider does not say."""

    payment_id: str
    property_id: str | None  # the property the provider's metadata names, None when it names none
    booking_id: str | None
    amount_minor: int
    currency: str
    authorized_at: datetime
    capture_before: datetime | None
    state: HoldState
