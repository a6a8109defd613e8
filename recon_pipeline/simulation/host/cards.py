"""The card behind each simulated payment: one per charge, the same in every flavour, from the seeded data.

Every flavour renders the store's charges (``store.py``), so the card is decided once here: the stored
charge's own ``payment_method_details`` when the world seeded one (Stripe's shape: its ``card`` brand,
last four and ``authorization_code``), else one derived from the charge's id (a hash, so the same world
gives the same cards on every run and in every process). A declined charge has no authorization code.

The demo's PMS (and any test that writes a folio) reads the same function, so a ledger posting can record
the card as the guest's folio would: ``card_of(charge).brand`` and ``.last4``, and ``.approval_code``.
Each flavour spells the brand its own way (``razorpay_network``, ``adyen_payment_method``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

# Weighted as a European hotel's card mix roughly is: most visa, then mastercard, some amex.
_BRANDS = ("visa",) * 10 + ("mastercard",) * 7 + ("amex",) * 3
_RAZORPAY_NETWORKS = {
    "visa": "Visa",
    "mastercard": "MasterCard",
    "amex": "American Express",
    "diners": "Diners Club",
    "rupay": "RuPay",
    "maestro": "Maestro",
    "jcb": "JCB",
}
_ADYEN_METHODS = {"mastercard": "mc", "unionpay": "cup", "eftpos_au": "eftpos_australia"}


@dataclass(frozen=True)
class SimulatedCard:
    """A payment's card: Stripe's lower-case brand, its last four digits, the issuer's approval code
    (None for a declined payment), and a fingerprint that tells cards apart."""

    brand: str
    last4: str
    approval_code: str | None
    fingerprint: str


def card_of(charge: dict[str, Any]) -> SimulatedCard:
    """The card of a store charge (see the module's docstring): each of the stored card's ``brand``,
    ``last4``, ``authorization_code`` and ``fingerprint`` that the world seeded, the others derived."""
    declined = charge.get("status") == "failed"
    details = charge.get("payment_method_details")
    stored = details.get("card") if isinstance(details, dict) else None
    stored = stored if isinstance(stored, dict) else {}
    digest = hashlib.sha256(str(charge.get("id")).encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    code = stored.get("authorization_code", f"{(number // 1_000_003) % 1_000_000:06d}")
    return SimulatedCard(
        brand=str(stored.get("brand") or _BRANDS[number % len(_BRANDS)]),
        last4=str(stored.get("last4") or f"{(number // 97) % 10_000:04d}"),
        approval_code=None if declined or code is None else str(code),
        fingerprint=str(stored.get("fingerprint") or digest[8:16].hex()),
    )


def razorpay_network(brand: str) -> str:
    """The brand as Razorpay names a card's ``network`` (``MasterCard``, ``American Express``…)."""
    return _RAZORPAY_NETWORKS.get(brand, brand.title())


def adyen_payment_method(brand: str) -> str:
    """The brand as Adyen names the payment method type (``mc``, ``amex``, ``visa``…)."""
    return _ADYEN_METHODS.get(brand, brand)
