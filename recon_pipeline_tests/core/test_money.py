"""The currency facts of money.py: the ISO 4217 table, the contract's amount bound, upper-casing on read."""

from __future__ import annotations

import pytest

from recon_pipeline.money import (
    ISO_4217_CURRENCIES,
    MAX_AMOUNT_MINOR,
    THREE_DECIMAL_CURRENCIES,
    ZERO_DECIMAL_CURRENCIES,
    is_contract_amount,
    is_iso_currency,
    upper_currency,
)

# Codes added to list one since 2018 (a table copied from an old source misses them), and codes that were
# withdrawn before 2023 (a table that never drops a code keeps them).
RECENT = {"MRU", "STN", "VES", "UYW", "VED", "SLE", "ZWG", "XCG"}
WITHDRAWN = {"MRO", "STD", "VEF", "HRK", "LTL", "LVL", "EEK", "BYR", "ZMK", "MTL", "CYP", "SKK"}


def test_the_iso_4217_table_is_list_one() -> None:
    assert len(ISO_4217_CURRENCIES) == 180
    assert all(len(code) == 3 and code.isascii() and code.isupper() for code in ISO_4217_CURRENCIES)
    assert RECENT <= ISO_4217_CURRENCIES
    assert not WITHDRAWN & ISO_4217_CURRENCIES
    assert ZERO_DECIMAL_CURRENCIES | THREE_DECIMAL_CURRENCIES <= ISO_4217_CURRENCIES
    assert {"EUR", "USD", "GBP", "JPY", "INR", "CHF", "XAF", "XOF", "XPF", "XAU"} <= ISO_4217_CURRENCIES


@pytest.mark.parametrize("code", ["XXX", "XTS", "XXX1", "usd", "US", "", None, 840, "ÉUR"])
def test_what_is_no_currency(code: object) -> None:
    assert not is_iso_currency(code)


def test_upper_currency_only_changes_case_of_ascii_codes() -> None:
    assert upper_currency("usd") == "USD" and upper_currency("Eur") == "EUR"
    assert upper_currency("ßp") == "ßp"  # "ßp".upper() is "SSP", a real code it never was
    assert upper_currency(None) is None


def test_the_amount_bound() -> None:
    assert is_contract_amount(MAX_AMOUNT_MINOR) and is_contract_amount(-MAX_AMOUNT_MINOR)
    assert is_contract_amount(0)
    for amount in (MAX_AMOUNT_MINOR + 1, -MAX_AMOUNT_MINOR - 1, 2**62, 12.5, 100.0, True, "100", None):
        assert not is_contract_amount(amount)
