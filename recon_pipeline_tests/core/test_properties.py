"""A ``properties`` row's fee booking: the default the PMS's rows get, and the one line an unknown one
fails its property with."""

from __future__ import annotations

import pytest

from recon_pipeline.properties import (
    FEE_BOOKINGS,
    FEE_NONE,
    FEE_PER_MOVEMENT,
    FEE_PER_PAYOUT,
    InvalidPropertyError,
    PropertyRow,
    split_valid_properties,
)


def row(**changes: object) -> PropertyRow:
    base = PropertyRow("rome-trastevere", "Rome Trastevere", "Europe/Rome", "eur", "03:00", "acct_1Rome")
    return PropertyRow(**{**base.row(), **changes})  # type: ignore[arg-type]


def test_a_row_naming_no_fee_booking_books_fees_per_movement() -> None:
    assert FEE_BOOKINGS == ("per_movement", "per_payout", "none")
    plain = PropertyRow("p1", "P1", "UTC", "EUR", "00:00", None)  # the PMS's columns only
    assert (plain.fee_booking, plain.match_policy, plain.fee_booking_mode) == (None, None, FEE_PER_MOVEMENT)
    assert list(plain.row())[-3:] == ["fx_tolerance_bps", "fee_booking", "match_policy"]  # added at the end
    for mode in FEE_BOOKINGS:
        checked = row(fee_booking=mode).validated()
        assert checked.fee_booking_mode == mode and checked.currency == "EUR"
    assert row(fee_booking=FEE_PER_PAYOUT).validated().fee_booking == FEE_PER_PAYOUT
    assert (
        row(fee_booking=FEE_NONE, match_policy='{"threshold": 0.9}').validated().fee_booking_mode == FEE_NONE
    )


def test_an_unknown_fee_booking_fails_its_property_in_one_line() -> None:
    with pytest.raises(InvalidPropertyError) as failure:
        row(fee_booking="per_charge", fx_tolerance_bps=-1).validated()
    message = str(failure.value)
    assert "\n" not in message and message.startswith("property 'rome-trastevere' is invalid: ")
    assert "fee_booking must be one of per_movement, per_payout, none, not 'per_charge'" in message
    assert "fx_tolerance_bps" in message  # every problem of the row, in its one line
    valid, invalid = split_valid_properties([row(property_id="ok"), row(fee_booking="PER_PAYOUT")])
    assert [r.property_id for r in valid] == ["ok"] and [e.property_id for e in invalid] == [
        "rome-trastevere"
    ]
