"""Currency facts: amounts are integers in the currency's minor unit; this module knows the exponent, the
ISO 4217 codes, and the bound on amounts the data contract allows.

Zero-decimal currencies (JPY, KRW, ...) carry the whole unit as their minor unit, so a JPY
amount of 1000 is ¥1000 and must never be divided by 100 for display.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TypeVar

CurrencyText = TypeVar("CurrencyText", str, None)  # a text column as read: a code, or null

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

# ISO 4217 list one (active codes, 2025), with codes withdrawn since 2023 that still circulate during their
# changeover (ANG, SLL, ZWL). XTS (testing) and XXX (no currency) are ISO codes but name no money, so a
# ledger entry in them is as invalid as one in "XXX1". No dependency of ours ships the list; the table is
# checked by recon_pipeline_tests/core/test_money.py.
ISO_4217_CURRENCIES = frozenset(
    {
        "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN",
        "BHD", "BIF", "BMD", "BND", "BOB", "BOV", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF",
        "CHE", "CHF", "CHW", "CLF", "CLP", "CNY", "COP", "COU", "CRC", "CUC", "CUP", "CVE", "CZK", "DJF",
        "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD",
        "GNF", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD",
        "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK", "LBP", "LKR",
        "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK",
        "MXN", "MXV", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN", "PGK",
        "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR", "SDG", "SEK",
        "SGD", "SHP", "SLE", "SLL", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT",
        "TND", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "USN", "UYI", "UYU", "UYW", "UZS",
        "VED", "VES", "VND", "VUV", "WST", "XAF", "XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XCD", "XCG",
        "XDR", "XOF", "XPD", "XPF", "XPT", "XSU", "XUA", "YER", "ZAR", "ZMW", "ZWG", "ZWL",
    }
)

# The contract's bound on any amount in minor units (±10^11: a billion in a two-decimal currency). Far
# above any real payment (card processors take 8 digits), far below int64: within it, sums of fewer than
# 9 * 10^7 rows, differences and negations stay exact in int64, and float64 display stays exact.
MAX_AMOUNT_MINOR = 10**11

# Basis points in one: tolerances on a conversion (``properties.fx_tolerance_bps``) are whole basis points
# of the settlement amount, at most all of it.
BASIS_POINTS = 10_000


def is_iso_currency(code: object) -> bool:
    """Whether ``code`` is an ISO 4217 currency code as the contract stores it (upper case)."""
    return isinstance(code, str) and code in ISO_4217_CURRENCIES


def is_contract_amount(amount: object) -> bool:
    """Whether ``amount`` is an integer amount in minor units within ±MAX_AMOUNT_MINOR (a bool is not)."""
    return isinstance(amount, int) and not isinstance(amount, bool) and abs(amount) <= MAX_AMOUNT_MINOR


def upper_currency(code: CurrencyText) -> CurrencyText:
    """An ASCII currency code in upper case, anything else as it is (for validation to name).

    The PMS may store ``usd``; case is no error. Only ASCII is upper-cased: ``"ßp".upper()`` is ``"SSP"``, a
    real code that the stored value never was."""
    return code.upper() if isinstance(code, str) and code.isascii() else code


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


def major_units(amount_minor: int, currency: str) -> Decimal:
    """The amount in the currency's major unit, exactly: ``-1500`` EUR is ``Decimal("-15.00")``, ``1000`` JPY
    stays ``1000`` (what a PMS's API, a spreadsheet or a report shows)."""
    return Decimal(int(amount_minor)).scaleb(-minor_unit_exponent(currency))


def format_minor(amount_minor: int, currency: str) -> str:
    """Human form of a minor-unit amount, e.g. ``-12.50 EUR`` or ``1,000 JPY``."""
    exponent = minor_unit_exponent(currency)
    major = abs(int(amount_minor)) / (10**exponent)
    sign = "-" if amount_minor < 0 else ""
    return f"{sign}{major:,.{exponent}f} {currency.upper()}"
