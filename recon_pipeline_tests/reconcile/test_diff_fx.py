"""Currency conversion in the diff: a movement presented in one currency and settled in another matches a
ledger entry in either currency at that currency's figure; an entry in the settlement currency off the
settlement amount beyond the property's tolerance is an ``fx_difference`` in the settlement currency; a
conversion is never a ``currency_mismatch`` (docs/design.md, "Money movements")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recon_pipeline.categories import (
    AMOUNT_MISMATCH,
    CURRENCY_MISMATCH,
    FX_DIFFERENCE,
)
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.reconcile.diff import DiffResult, diff_night
from recon_pipeline.reconcile.report import build_night_report, finding_amounts
from recon_pipeline_tests.support.fuzzing import fuzz_settings
from recon_pipeline_tests.support.night_frames import entry, finding, findings, ledger, providers, record

# A guest's card charged 100.00 USD; the EUR account settled it as 92.00 EUR (1 USD = 0.92 EUR).
PRESENTED, SETTLED = 10_000, 9_200


def converted(row: dict[str, Any], settled: int, currency: str = "EUR") -> dict[str, Any]:
    """A provider record with the balance transaction's figure in the settlement currency."""
    return {**row, "settlement_amount_minor": settled, "settlement_currency": currency}


def usd_charge(record_id: str = "ch_1", **kwargs: Any) -> dict[str, Any]:
    return converted(record(record_id, amount=PRESENTED, currency="USD", **kwargs), SETTLED)


def categories(result: DiffResult) -> list[str]:
    return result.findings["category"].tolist()


def test_an_entry_in_the_presentment_currency_matches_at_the_presentment_amount() -> None:
    result = diff_night(
        providers(usd_charge()), ledger(entry("le_1", "ch_1", amount=PRESENTED, currency="USD"))
    )
    assert findings(result) == []
    assert result.matched_count == 1
    # The account holds the settlement figure: provider and matched totals count it, the ledger its own.
    assert result.provider_total_by_currency == result.matched_amount_by_currency == {"EUR": SETTLED}
    assert result.ledger_total_by_currency == {"USD": PRESENTED}


def test_an_entry_in_the_settlement_currency_matches_at_the_balance_transactions_amount() -> None:
    result = diff_night(
        providers(usd_charge()), ledger(entry("le_1", "ch_1", amount=SETTLED, currency="EUR"))
    )
    assert findings(result) == []
    assert result.matched_count == 1
    assert result.provider_total_by_currency == result.ledger_total_by_currency == {"EUR": SETTLED}
    assert result.matched_amount_by_currency == {"EUR": SETTLED}


def test_an_entry_off_the_settlement_amount_beyond_tolerance_is_an_fx_difference() -> None:
    result = diff_night(providers(usd_charge()), ledger(entry("le_1", "ch_1", amount=9_150)))
    assert findings(result) == [
        finding(
            FX_DIFFERENCE,
            "ch_1:payment",
            provider_record_id="ch_1",
            ledger_entry_id="le_1",
            provider_amount=SETTLED,
            ledger_amount=9_150,
            difference=50,
            currency="EUR",
        )
    ]
    assert result.findings.loc[0, "ledger_currency"] == "EUR"
    assert result.findings.loc[0, "detail"] == (
        "provider payment ch_1 of 100.00 USD (settled as 92.00 EUR at 1 USD = 0.92 EUR) but ledger entry "
        "le_1 posts 91.50 EUR, 0.50 EUR off, beyond the property's tolerance of 0 bp"
    )
    assert result.matched_count == 0


def test_an_fx_difference_proposes_its_correction_in_the_settlement_currency() -> None:
    result = diff_night(providers(usd_charge()), ledger(entry("le_1", "ch_1", amount=9_150)))
    [proposal] = plan_adjustments("prop_1", "2025-03-15", result.findings, "run-1", datetime.now(UTC))
    assert (proposal["kind"], proposal["amount_minor"], proposal["currency"]) == (
        "correct_fx_payment",
        50,
        "EUR",
    )
    assert (proposal["provider_record_id"], proposal["ledger_entry_id"]) == ("ch_1", "le_1")
    assert proposal["reason"].startswith("fx_difference: provider payment ch_1 of 100.00 USD")


@pytest.mark.parametrize(
    ("property_currency", "figure"),
    [
        ("EUR", (SETTLED, "EUR")),
        ("USD", (PRESENTED, "USD")),
        ("GBP", (PRESENTED, "USD")),
        (None, (PRESENTED, "USD")),
    ],
)
def test_a_missing_conversion_is_posted_at_its_settlement_figure_when_it_settled_in_the_propertys_currency(
    property_currency: str | None, figure: tuple[int, str]
) -> None:
    result = diff_night(providers(usd_charge()), ledger(), property_currency=property_currency)
    [row] = result.findings.to_dict("records")
    assert (row["category"], row["provider_amount_minor"], row["currency"]) == ("missing_in_ledger", *figure)
    assert row["detail"] == (
        "provider payment ch_1 of 100.00 USD (settled as 92.00 EUR at 1 USD = 0.92 EUR) settled but the "
        "ledger has no entry for it"
    )
    [proposal] = plan_adjustments("prop_1", "2025-03-15", result.findings, "run-1", datetime.now(UTC))
    assert (proposal["kind"], proposal["amount_minor"], proposal["currency"]) == (
        "post_missing_payment",
        *figure,
    )
    # Totals count the conversion at what the account received, whichever figure the finding names.
    assert result.provider_total_by_currency == {"EUR": SETTLED}


def test_a_missing_record_in_the_propertys_own_currency_keeps_its_figure() -> None:
    result = diff_night(
        providers(record("ch_1", amount=500, currency="EUR")), ledger(), property_currency="EUR"
    )
    [proposal] = plan_adjustments("prop_1", "2025-03-15", result.findings, "run-1", datetime.now(UTC))
    assert (proposal["amount_minor"], proposal["currency"]) == (500, "EUR")


def test_reports_show_an_fx_difference_in_the_settlement_currency() -> None:
    result = diff_night(providers(usd_charge()), ledger(entry("le_1", "ch_1", amount=9_150)))
    report = build_night_report(result, pd.DataFrame())
    [finding_row] = report.findings.to_dict("records")
    assert finding_amounts(finding_row) == ("92.00 EUR", "91.50 EUR", "0.50 EUR")
    assert report.as_metadata()[f"amount/{FX_DIFFERENCE}/EUR"] == "0.50 EUR"
    assert "| fx_difference | EUR | 1 | 0.50 EUR |" in report.summary_markdown()


@pytest.mark.parametrize(
    ("booked", "tolerance_bps", "found"),
    [
        # 50 bp of 92.00 EUR is 0.46 EUR: 0.46 off is within, 0.47 is beyond, on either side.
        (SETTLED - 46, 50, []),
        (SETTLED + 46, 50, []),
        (SETTLED - 47, 50, [FX_DIFFERENCE]),
        (SETTLED + 47, 50, [FX_DIFFERENCE]),
        (SETTLED - 1, 0, [FX_DIFFERENCE]),
        (0, 10_000, []),  # a tolerance of the whole amount takes anything up to it
    ],
)
def test_the_tolerance_is_basis_points_of_the_settlement_amount(
    booked: int, tolerance_bps: int, found: list[str]
) -> None:
    result = diff_night(
        providers(usd_charge()), ledger(entry("le_1", "ch_1", amount=booked)), fx_tolerance_bps=tolerance_bps
    )
    assert categories(result) == found
    assert result.matched_count == (0 if found else 1)
    if found:
        assert result.findings.loc[0, "difference_minor"] == SETTLED - booked
        assert result.findings.loc[0, "detail"].endswith(f"tolerance of {tolerance_bps} bp")


def test_the_tolerance_is_exact_where_bps_times_the_amount_passes_int64() -> None:
    """|diff| * 10^4 <= bps * |amount| with an amount of 4 * 10^18: the product is 4 * 10^22."""
    huge = 4 * 10**18
    charge = converted(record("ch_1", amount=huge, currency="USD"), huge)
    booked = ledger(entry("le_1", "ch_1", amount=0))
    assert categories(diff_night(providers(charge), booked, fx_tolerance_bps=10_000)) == []
    assert categories(diff_night(providers(charge), booked, fx_tolerance_bps=9_999)) == [FX_DIFFERENCE]


def test_an_entry_in_the_presentment_currency_off_its_amount_is_an_amount_mismatch() -> None:
    """Tolerance covers conversion only: the presentment amount is the charge itself."""
    result = diff_night(
        providers(usd_charge()),
        ledger(entry("le_1", "ch_1", amount=PRESENTED - 1, currency="USD")),
        fx_tolerance_bps=100,
    )
    assert findings(result) == [
        finding(
            AMOUNT_MISMATCH,
            "ch_1:payment",
            provider_record_id="ch_1",
            ledger_entry_id="le_1",
            provider_amount=PRESENTED,
            ledger_amount=PRESENTED - 1,
            difference=1,
            currency="USD",
        )
    ]
    assert result.findings.loc[0, "detail"] == (
        "provider payment ch_1 is 100.00 USD (settled as 92.00 EUR at 1 USD = 0.92 EUR) "
        "but ledger entry le_1 posts 99.99 USD"
    )


def test_a_third_currency_is_a_currency_mismatch_naming_both_figures() -> None:
    result = diff_night(providers(usd_charge()), ledger(entry("le_1", "ch_1", amount=7_900, currency="GBP")))
    assert categories(result) == [CURRENCY_MISMATCH]
    assert result.findings.loc[0, "difference_minor"] == 0
    assert result.findings.loc[0, "detail"] == (
        "provider payment ch_1 is in USD (100.00 USD) (settled as 92.00 EUR at 1 USD = 0.92 EUR) "
        "but ledger entry le_1 posts it in GBP (79.00 GBP)"
    )


def test_a_conversion_nobody_booked_is_missing_with_both_figures() -> None:
    result = diff_night(providers(usd_charge()), ledger())
    assert categories(result) == ["missing_in_ledger"]
    assert result.findings.loc[0, "detail"] == (
        "provider payment ch_1 of 100.00 USD (settled as 92.00 EUR at 1 USD = 0.92 EUR) settled "
        "but the ledger has no entry for it"
    )


def test_a_conversion_across_zero_decimal_currencies_states_the_rate_in_major_units() -> None:
    """A JPY account settling a 100.00 USD charge as 14,950 JPY: 1 USD = 149.5 JPY, not 1.495."""
    charge = converted(record("ch_1", amount=PRESENTED, currency="USD"), 14_950, "JPY")
    result = diff_night(providers(charge), ledger(entry("le_1", "ch_1", amount=14_900, currency="JPY")))
    assert categories(result) == [FX_DIFFERENCE]
    assert "settled as 14,950 JPY at 1 USD = 149.5 JPY" in result.findings.loc[0, "detail"]
    assert result.findings.loc[0, "difference_minor"] == 50
    assert result.findings.loc[0, "currency"] == "JPY"


def test_refunds_and_disputes_convert_like_charges() -> None:
    """Negative movements: the refund and the dispute settle in EUR; their fees are in EUR already."""
    result = diff_night(
        providers(
            converted(record("re_1", "refund", -2_000, "USD", charge="ch_0"), -1_840),
            converted(record("du_1", "dispute", -PRESENTED, "USD", charge="ch_0"), -SETTLED),
            record("du_1", "fee", -1_500, "EUR", charge="ch_0"),
            converted(record("du_2", "dispute_reversal", PRESENTED, "USD", charge="ch_9"), SETTLED),
        ),
        ledger(
            entry("le_1", "re_1", "refund", -1_800),
            entry("le_2", "du_1", "dispute", -PRESENTED, "USD"),
            entry("le_3", "du_1", "fee", -1_500),
            entry("le_4", "du_2", "dispute_reversal", SETTLED + 1),
        ),
    )
    assert findings(result) == [
        finding(
            FX_DIFFERENCE,
            "du_2:dispute_reversal",
            "dispute_reversal",
            provider_record_id="du_2",
            ledger_entry_id="le_4",
            provider_amount=SETTLED,
            ledger_amount=SETTLED + 1,
            difference=-1,
        ),
        finding(
            FX_DIFFERENCE,
            "re_1:refund",
            "refund",
            provider_record_id="re_1",
            ledger_entry_id="le_1",
            provider_amount=-1_840,
            ledger_amount=-1_800,
            difference=-40,
        ),
    ]
    assert result.matched_count == 2
    assert result.provider_total_by_currency == {"EUR": -1_840 - SETTLED - 1_500 + SETTLED}
    assert result.matched_amount_by_currency == {"EUR": -SETTLED - 1_500}


def test_an_entry_booking_another_nights_conversion_is_compared_at_either_figure() -> None:
    """The late path: entries of the night whose records were created the night before."""
    elsewhere = providers(
        usd_charge("ch_7", minute=-30),
        usd_charge("ch_8", minute=-40),
        usd_charge("ch_9", minute=-50),
    )
    result = diff_night(
        providers(),
        ledger(
            entry("le_1", "ch_7", amount=PRESENTED, currency="USD"),
            entry("le_2", "ch_8", amount=SETTLED - 10),
            entry("le_3", "ch_9", amount=SETTLED - 9),
        ),
        elsewhere,
        fx_tolerance_bps=10,  # 10 bp of 92.00 EUR is 0.092 EUR: 9 cents off is within, 10 beyond
    )
    assert findings(result) == [
        finding(
            FX_DIFFERENCE,
            "ch_8:payment",
            provider_record_id="ch_8",
            ledger_entry_id="le_2",
            provider_amount=SETTLED,
            ledger_amount=SETTLED - 10,
            difference=10,
        )
    ]
    assert result.findings.loc[0, "detail"].startswith(
        "provider payment ch_8 (created in another night) of 100.00 USD (settled as 92.00 EUR"
    )
    assert result.timing_difference_count == 3


def test_an_entry_in_a_third_currency_against_another_nights_conversion_is_a_currency_mismatch() -> None:
    result = diff_night(
        providers(),
        ledger(entry("le_1", "ch_7", amount=SETTLED, currency="GBP")),
        providers(usd_charge("ch_7", minute=-30)),
    )
    assert categories(result) == [CURRENCY_MISMATCH]


def test_a_tolerance_outside_basis_points_is_refused() -> None:
    for bad in (-1, 10_001):
        with pytest.raises(ValueError, match=f"fx_tolerance_bps must be from 0 to 10000, not {bad}"):
            diff_night(providers(), ledger(), fx_tolerance_bps=bad)


def test_a_settlement_amount_without_its_currency_names_the_record() -> None:
    half = {**usd_charge(), "settlement_currency": None}
    with pytest.raises(
        ValueError, match="provider record 'ch_1' carries only one of settlement_amount_minor"
    ):
        diff_night(providers(half), ledger())


currencies = st.sampled_from(["EUR", "USD", "GBP", "JPY", "INR"])
amounts = st.integers(min_value=-(10**11), max_value=10**11)


@fuzz_settings(max_examples=150)
@given(
    pair=st.lists(currencies, min_size=2, max_size=2, unique=True),
    presented=amounts,
    settled=amounts,
    booked_in_settlement=st.booleans(),
    booked=st.one_of(st.just(None), amounts),
    tolerance_bps=st.integers(min_value=0, max_value=10_000),
    late=st.booleans(),
)
def test_a_conversion_booked_in_either_currency_is_never_a_currency_mismatch(
    pair: list[str],
    presented: int,
    settled: int,
    booked_in_settlement: bool,
    booked: int | None,
    tolerance_bps: int,
    late: bool,
) -> None:
    """Whatever the figures and the tolerance, tonight or the night before: an entry in either currency
    is matched, an amount mismatch (presentment) or an FX difference (settlement); at its currency's
    figure it is matched."""
    presentment, settlement = pair
    at_figure = settled if booked_in_settlement else presented
    amount = at_figure if booked is None else booked
    charge = converted(
        record("ch_1", amount=presented, currency=presentment, minute=-30 if late else 60),
        settled,
        settlement,
    )
    entries = ledger(
        entry("le_1", "ch_1", amount=amount, currency=settlement if booked_in_settlement else presentment)
    )
    tonight, elsewhere = (providers(), providers(charge)) if late else (providers(charge), providers())
    result = diff_night(tonight, entries, elsewhere, fx_tolerance_bps=tolerance_bps)
    found = categories(result)
    assert CURRENCY_MISMATCH not in found
    assert found in ([], [FX_DIFFERENCE if booked_in_settlement else AMOUNT_MISMATCH])
    if amount == at_figure:
        assert found == []
    if found:
        [difference] = result.findings["difference_minor"].tolist()
        assert difference == at_figure - amount
        assert result.findings.loc[0, "currency"] == (
            settlement if booked_in_settlement else presentment
        )
        if booked_in_settlement:
            assert abs(difference) * 10_000 > tolerance_bps * abs(settled)
    elif booked_in_settlement:
        assert abs(settled - amount) * 10_000 <= tolerance_bps * abs(settled)
