"""A card's keys as every provider's rows carry them: one brand vocabulary, the last four, the approval code.

A PMS that never saw the provider's id still records the card (brand and last four) and often the issuer's
approval code, so the matcher pairs on them (docs/providers.md, "Card keys"). That works across providers
only if a brand is spelled one way: Stripe writes ``visa``/``mastercard``/``amex``, Razorpay ``Visa``/
``MasterCard``/``American Express``, Adyen's reports ``visa``/``mc``/``amex``. ``card_brand`` maps each
provider's spelling onto Stripe's lower-case names (``CARD_BRANDS``), which is also how the ledger's
``card_brand`` is written; a brand nobody maps is kept lower case, spaces as ``_``, rather than dropped. A
provider's "unknown" brand is null: two unknowns are no evidence that two records are one payment.

A value of the wrong shape is a ``ProviderDataError`` like any other field's: a wrong last four would pair
two payments that are not one.
"""

from __future__ import annotations

from typing import Any

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.objects import Row

# Stripe's card brands (``payment_method_details.card.brand``) and the others the providers here name.
CARD_BRANDS = frozenset(
    {"amex", "diners", "discover", "eftpos_au", "jcb", "mastercard", "unionpay", "visa",
     "interac", "maestro", "rupay", "bajaj", "cartes_bancaires"}
)  # fmt: skip
_ALIASES = {
    "american express": "amex",
    "american_express": "amex",
    "americanexpress": "amex",
    "mc": "mastercard",
    "master card": "mastercard",
    "diners club": "diners",
    "diners_club": "diners",
    "dinersclub": "diners",
    "cup": "unionpay",
    "china union pay": "unionpay",
    "china_union_pay": "unionpay",
    "union pay": "unionpay",
    "bajaj finserv": "bajaj",
    "cartebancaire": "cartes_bancaires",
    "eftpos australia": "eftpos_au",
}
_UNKNOWN = frozenset({"", "unknown", "other", "none", "null"})
MAX_APPROVAL_CODE_CHARS = 64  # issuers' codes are six characters; anything past this is a corrupt field


def card_brand(raw: Any, what: str) -> str | None:
    """The brand in the shared vocabulary (``CARD_BRANDS``), None when the provider gives none or says
    it does not know; anything but a string is a data error naming ``what``."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.isprintable():
        raise ProviderDataError(f"{what}: card brand is {str(raw)[:40]!r}, not a brand name")
    word = " ".join(raw.strip().lower().split())
    if word in _UNKNOWN:
        return None
    return _ALIASES.get(word, word.replace(" ", "_"))


def card_last4(raw: Any, what: str) -> str | None:
    """The card's last four digits, None when absent; anything but four digits is a data error."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or len(raw) != 4 or not raw.isascii() or not raw.isdigit():
        raise ProviderDataError(f"{what}: card last4 is {str(raw)[:40]!r}, not four digits")
    return raw


def approval_code(raw: Any, what: str) -> str | None:
    """The issuer's authorization (approval) code as the provider gives it, None when absent."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or not raw.isprintable() or len(raw) > MAX_APPROVAL_CODE_CHARS:
        raise ProviderDataError(f"{what}: approval code is {str(raw)[:40]!r}, not a printable code")
    return raw.strip() or None


def card_keys(brand: Any, last4: Any, code: Any, what: str) -> Row:
    """The three card columns of a row (``records.CARD_KEY_COLUMNS``), each validated."""
    return {
        "card_brand": card_brand(brand, what),
        "card_last4": card_last4(last4, what),
        "approval_code": approval_code(code, what),
    }


NO_CARD_KEYS: Row = {"card_brand": None, "card_last4": None, "approval_code": None}
