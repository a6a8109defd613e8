"""A card's keys as every provider's rows carry them: one brand vocabulary, the last four, the approval code.

A PMS that never saw the provider's id still records the card (brand and last four) and often the issuer's
approval code, so the matcher pairs on them (docs/providers.md, "Card keys"). That works across providers
only if a brand is spelled one way: Stripe writes ``visa``/``mastercard``/``amex``, Razorpay ``Visa``/
``MasterCard``/``American Express``, Adyen's reports ``visa``/``mc``/``amex``, and a PMS its own names or
two-letter card-type codes (OPERA's ``VA``, ``AX``). ``brand_of`` maps every spelling onto Stripe's
lower-case names (``CARD_BRANDS``), for the provider's rows and the ledger's alike; a spelling nobody knows,
like a provider's "unknown", is null: it is no evidence that two records are one payment, nor that they
are two.

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
# Every other spelling a provider or a PMS writes for one of them: the providers' names (Razorpay's
# "MasterCard", Adyen's "mc"), the PMSs' (Apaleo's "Amex", Mews' "MasterCard"), and the two-letter card-type
# codes hotel systems key cards by (OPERA's VA, MC, AX, DS, JC, DC; the IATA/GDS codes VI, CA, AM, DI, UP).
# Compared after lower-casing and dropping blanks, hyphens and underscores ("Master-Card" is "mastercard").
_ALIASES = {
    "visa": ("va", "vi", "visacard", "visa credit", "visa debit", "visaelectron", "electron", "ve"),
    "mastercard": ("mc", "ca", "master", "mastercard credit", "mastercard debit", "eurocard", "ec"),
    "amex": ("ax", "am", "americanexpress", "amexco"),
    "discover": ("ds", "di", "discovercard", "novus"),
    "jcb": ("jc", "japancreditbureau"),
    "diners": ("dc", "dinersclub", "dinersclubinternational", "diner"),
    "unionpay": ("cu", "up", "cup", "chinaunionpay"),
    "maestro": ("ma", "mi", "mae"),
    "cartes_bancaires": ("cb", "cartebancaire", "cartesbancaires"),
    "eftpos_au": ("eftposaustralia", "eftpos"),
    "bajaj": ("bajajfinserv",),
}
_UNKNOWN = frozenset({"", "unknown", "other", "none", "null", "card", "creditcard", "n/a", "na", "xx"})
# What reading a spelling drops besides its case: blanks, hyphens, underscores and dots ("Master-Card").
IGNORED_CHARACTERS = " \t\n\r-_."


def _folded(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch not in IGNORED_CHARACTERS)


_SPELLINGS: dict[str, str] = {_folded(brand): brand for brand in CARD_BRANDS} | {
    _folded(spelling): brand for brand, spellings in _ALIASES.items() for spelling in spellings
}


def brand_of(text: str | None) -> str | None:
    """The brand a provider or a PMS means by ``text`` (``VA``, ``Visa``, ``MasterCard``, ``AX``…) in the
    shared vocabulary (``CARD_BRANDS``); None when it says none, says it does not know, or is a spelling
    nobody knows: an unknown spelling is no evidence of a different card."""
    if text is None:
        return None
    word = " ".join(text.strip().lower().split())
    if word in _UNKNOWN:
        return None
    return _SPELLINGS.get(_folded(word))


def spellings_of(brand: str | None = None) -> frozenset[str]:
    """Every spelling :func:`brand_of` reads as ``brand`` (with None: as any brand), folded: lower case,
    without ``IGNORED_CHARACTERS``. A query that folds a stored spelling the same way finds the rows of a
    brand (the review desk's brand filter over the PMS's raw ``card_brand``)."""
    return frozenset(spelling for spelling, known in _SPELLINGS.items() if brand is None or known == brand)


def card_brand(raw: Any, what: str) -> str | None:
    """A provider's brand in the shared vocabulary (:func:`brand_of`); anything but a string is a data
    error naming ``what``."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.isprintable():
        raise ProviderDataError(f"{what}: card brand is {str(raw)[:40]!r}, not a brand name")
    return brand_of(raw)


MAX_APPROVAL_CODE_CHARS = 64  # issuers' codes are six characters; anything past this is a corrupt field


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
