"""Currency facts: amounts are integers in the currency's minor unit; this module knows the exponent.

Stripe's zero-decimal currencies (JPY, KRW, ...) carry the whole unit as their minor unit, so a JPY
amount of 1000 is ¥1000 and must never be divided by 100 for display.
"""

from __future__ import annotations

ZERO_DECIMAL_CURRENCIES = frozenset(
    {
        "BIF",
        "CLP",
        "DJF",
        "GNF",
        "JPY",
        "KMF",
        "KRW",
        "MGA",
        "PYG",
        "RWF",
        "UGX",
        "VND",
        "VUV",
        "XAF",
        "XOF",
        "XPF",
    }
)
THREE_DECIMAL_CURRENCIES = frozenset({"BHD", "JOD", "KWD", "OMR", "TND"})


def normalize_currency(code: str) -> str:
    """Return an ISO 4217 code upper case; providers send lower case, the contract stores upper.

    ISO 4217 codes are three ASCII letters, checked before upper-casing: ``str.isalpha`` alone takes
    "ÉÜÖ", and ``upper()`` would turn "ßa" into "SSA"."""
    cleaned = code.strip()
    if len(cleaned) != 3 or not (cleaned.isascii() and cleaned.isalpha()):
        raise ValueError(f"not an ISO 4217 currency code: {code!r}")
    return cleaned.upper()


def minor_unit_exponent(currency: str) -> int:
    """Digits after the decimal point of the currency's major unit."""
    code = currency.upper()
    if code in ZERO_DECIMAL_CURRENCIES:
        return 0
    if code in THREE_DECIMAL_CURRENCIES:
        return 3
    return 2


def format_minor(amount_minor: int, currency: str) -> str:
    """Human form of a minor-unit amount, e.g. ``-12.50 EUR`` or ``1,000 JPY``."""
    exponent = minor_unit_exponent(currency)
    major = abs(int(amount_minor)) / (10**exponent)
    sign = "-" if amount_minor < 0 else ""
    return f"{sign}{major:,.{exponent}f} {currency.upper()}"
