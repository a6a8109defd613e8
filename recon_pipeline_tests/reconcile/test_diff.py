"""The night diff: every category, timing differences both ways, and the shapes real nights take."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from benchmarks.datagen import generate_night
from recon_pipeline.categories import FINDING_COLUMNS
from recon_pipeline.reconcile import grouping
from recon_pipeline.reconcile.diff import diff_night, unmatched_ledger_record_ids
from recon_pipeline.reconcile.identity import canonical_ledger, name_booked_ids, payment_aliases
from recon_pipeline_tests.support.night_frames import entry, finding, findings, ledger, providers, record


def test_a_clean_night_matches_payments_fees_and_refunds() -> None:
    result = diff_night(
        providers(
            record("ch_1"),
            record("ch_1", "fee", -320),
            record("re_1", "refund", -2_500, charge="ch_1"),
        ),
        ledger(
            entry("le_1", "ch_1"),
            entry("le_2", "ch_1", "fee", -320),
            entry("le_3", "re_1", "refund", -2_500),
        ),
    )
    assert findings(result) == []
    assert result.matched_count == 3
    assert result.matched_amount_by_currency == {"EUR": 10_000 - 320 - 2_500}
    assert result.provider_total_by_currency == result.ledger_total_by_currency == {"EUR": 7_180}
    assert result.timing_difference_count == 0
    assert list(result.findings.columns) == list(FINDING_COLUMNS)


def test_missing_in_ledger() -> None:
    result = diff_night(
        providers(record("ch_1"), record("ch_2", amount=4_200)), ledger(entry("le_1", "ch_1"))
    )
    assert findings(result) == [
        finding(
            "missing_in_ledger",
            "ch_2:payment",
            provider_record_id="ch_2",
            provider_amount=4_200,
            difference=4_200,
        )
    ]
    assert result.findings.loc[0, "detail"] == (
        "provider payment ch_2 of 42.00 EUR settled but the ledger has no entry for it"
    )
    assert result.matched_count == 1


def test_missing_at_provider_with_and_without_a_provider_id() -> None:
    result = diff_night(
        providers(),
        ledger(entry("le_1", "ch_9", amount=1_500), entry("le_2", None, "refund", -700, booking=None)),
    )
    assert findings(result) == [
        finding(
            "missing_at_provider",
            "ch_9:payment",
            provider_record_id="ch_9",
            ledger_entry_id="le_1",
            ledger_amount=1_500,
            difference=-1_500,
        ),
        finding(
            "missing_at_provider",
            "entry:le_2",
            kind="refund",
            ledger_entry_id="le_2",
            ledger_amount=-700,
            difference=700,
            booking=None,
        ),
    ]
    assert result.findings.loc[1, "detail"] == (
        "ledger entry le_2 posts a refund of -7.00 EUR without a provider record id"
    )
    assert result.ledger_total_by_currency == {"EUR": 800}


def test_amount_mismatch_is_provider_minus_ledger() -> None:
    result = diff_night(providers(record("ch_1", amount=10_000)), ledger(entry("le_1", "ch_1", amount=9_000)))
    assert findings(result) == [
        finding(
            "amount_mismatch",
            "ch_1:payment",
            provider_record_id="ch_1",
            ledger_entry_id="le_1",
            provider_amount=10_000,
            ledger_amount=9_000,
            difference=1_000,
        )
    ]
    assert result.findings.loc[0, "detail"] == (
        "provider payment ch_1 is 100.00 EUR but ledger entry le_1 posts 90.00 EUR"
    )
    assert result.matched_count == 0


def test_currency_mismatch_has_no_difference_and_names_both_currencies() -> None:
    result = diff_night(
        providers(record("ch_1", amount=5_000, currency="EUR")),
        ledger(entry("le_1", "ch_1", amount=5_000, currency="USD")),
    )
    assert findings(result) == [
        finding(
            "currency_mismatch",
            "ch_1:payment",
            provider_record_id="ch_1",
            ledger_entry_id="le_1",
            provider_amount=5_000,
            ledger_amount=5_000,
            difference=0,
            currency="EUR",
        )
    ]
    detail = result.findings.loc[0, "detail"]
    assert "EUR" in detail and "USD" in detail
    assert result.ledger_total_by_currency == {"USD": 5_000}


def test_duplicate_entries_match_the_earliest_and_report_each_extra() -> None:
    result = diff_night(
        providers(record("ch_1")),
        ledger(
            entry("le_3", "ch_1", minute=90),
            entry("le_2", "ch_1", minute=70),
            entry("le_1", "ch_1", minute=90),
        ),
    )
    assert findings(result) == [
        finding(
            "duplicate_in_ledger",
            f"ch_1:payment:dup:{extra}",
            provider_record_id="ch_1",
            ledger_entry_id=extra,
            ledger_amount=10_000,
            difference=-10_000,
        )
        for extra in ("le_1", "le_3")
    ]
    assert result.matched_count == 1
    assert "entry le_2 already posts it" in result.findings.loc[0, "detail"]


def test_posting_time_ties_pick_the_smallest_entry_id() -> None:
    result = diff_night(providers(record("ch_1")), ledger(entry("le_b", "ch_1"), entry("le_a", "ch_1")))
    assert result.findings["record_key"].tolist() == ["ch_1:payment:dup:le_b"]


def test_duplicates_across_the_night_boundary_belong_to_the_extra_entrys_night() -> None:
    # The earliest entry was posted the night before: the in-night one is the extra, reported here.
    earlier = entry("le_0", "ch_1", in_night=False, minute=-24 * 60 - 30)
    result = diff_night(providers(), ledger(earlier, entry("le_1", "ch_1")))
    assert result.findings["record_key"].tolist() == ["ch_1:payment:dup:le_1"]
    # The extra lies in the next night: that night reports it, this one matches the first entry.
    result = diff_night(
        providers(record("ch_1")), ledger(entry("le_1", "ch_1"), entry("le_2", "ch_1", in_night=False))
    )
    assert findings(result) == []
    assert result.matched_count == 1


def test_status_mismatch_when_an_unsettled_record_is_booked() -> None:
    result = diff_night(
        providers(record("ch_1", status="failed"), record("ch_2", status="pending")),
        ledger(entry("le_1", "ch_1")),
    )
    assert findings(result) == [
        finding(
            "status_mismatch",
            "ch_1:payment",
            provider_record_id="ch_1",
            ledger_entry_id="le_1",
            provider_amount=10_000,
            ledger_amount=10_000,
            difference=-10_000,
        )
    ]
    assert result.findings.loc[0, "detail"] == "provider status failed but ledger posted payment"
    assert result.provider_total_by_currency == {}


def test_ledger_entry_in_the_adjacent_night_is_a_timing_difference() -> None:
    result = diff_night(providers(record("ch_1")), ledger(entry("le_1", "ch_1", in_night=False)))
    assert findings(result) == []
    assert result.timing_difference_count == 1
    assert result.matched_count == 0
    assert result.ledger_total_by_currency == {}


def test_an_adjacent_entrys_wrong_amount_is_left_to_the_entrys_night() -> None:
    result = diff_night(providers(record("ch_1")), ledger(entry("le_1", "ch_1", amount=1, in_night=False)))
    assert findings(result) == []
    assert result.timing_difference_count == 1


def test_provider_record_of_another_night_is_a_timing_difference() -> None:
    elsewhere = providers(record("ch_0", minute=-30))
    ledger_records = ledger(entry("le_1", "ch_0"))
    assert unmatched_ledger_record_ids(providers(), ledger_records) == ["ch_0"]
    result = diff_night(providers(), ledger_records, elsewhere)
    assert findings(result) == []
    assert result.timing_difference_count == 1
    # Without the lookup, the same entry reads as missing at the provider.
    assert diff_night(providers(), ledger_records).findings["category"].tolist() == [
        "missing_at_provider"
    ]


def test_mismatches_against_another_nights_record_are_reported_in_the_entrys_night() -> None:
    elsewhere = providers(
        record("ch_0", amount=10_000, minute=-30),
        record("ch_8", currency="GBP", minute=-40),
        record("ch_9", status="failed", minute=-50),
    )
    result = diff_night(
        providers(),
        ledger(entry("le_1", "ch_0", amount=9_999), entry("le_2", "ch_8"), entry("le_3", "ch_9")),
        elsewhere,
    )
    assert findings(result) == [
        finding(
            "amount_mismatch",
            "ch_0:payment",
            provider_record_id="ch_0",
            ledger_entry_id="le_1",
            provider_amount=10_000,
            ledger_amount=9_999,
            difference=1,
        ),
        finding(
            "currency_mismatch",
            "ch_8:payment",
            provider_record_id="ch_8",
            ledger_entry_id="le_2",
            provider_amount=10_000,
            ledger_amount=10_000,
            difference=0,
            currency="GBP",
        ),
        finding(
            "status_mismatch",
            "ch_9:payment",
            provider_record_id="ch_9",
            ledger_entry_id="le_3",
            provider_amount=10_000,
            ledger_amount=10_000,
            difference=-10_000,
        ),
    ]
    assert "(created in another night)" in result.findings.loc[0, "detail"]
    assert result.timing_difference_count == 2


def test_partial_and_multiple_refunds_of_one_charge_match_separately() -> None:
    result = diff_night(
        providers(
            record("ch_1", amount=20_000),
            record("re_1", "refund", -5_000, charge="ch_1"),
            record("re_2", "refund", -3_000, charge="ch_1"),
            record("re_3", "refund", -1_000, charge="ch_1"),
        ),
        ledger(
            entry("le_1", "ch_1", amount=20_000),
            entry("le_2", "re_1", "refund", -5_000),
            entry("le_3", "re_2", "refund", -3_500),
        ),
    )
    assert findings(result) == [
        finding(
            "amount_mismatch",
            "re_2:refund",
            kind="refund",
            provider_record_id="re_2",
            ledger_entry_id="le_3",
            provider_amount=-3_000,
            ledger_amount=-3_500,
            difference=500,
        ),
        finding(
            "missing_in_ledger",
            "re_3:refund",
            kind="refund",
            provider_record_id="re_3",
            provider_amount=-1_000,
            difference=-1_000,
        ),
    ]
    assert result.matched_count == 2


def test_a_fee_is_matched_on_its_own_kind_under_the_charge_id() -> None:
    result = diff_night(
        providers(record("ch_1"), record("ch_1", "fee", -320), record("ch_2"), record("ch_2", "fee", -150)),
        ledger(
            entry("le_1", "ch_1"),
            entry("le_2", "ch_1", "fee", -320),
            entry("le_3", "ch_2"),
            entry("le_4", "ch_2", "fee", -300),
        ),
    )
    assert findings(result) == [
        finding(
            "amount_mismatch",
            "ch_2:fee",
            kind="fee",
            provider_record_id="ch_2",
            ledger_entry_id="le_4",
            provider_amount=-150,
            ledger_amount=-300,
            difference=150,
        )
    ]
    assert result.matched_count == 3


def test_zero_decimal_and_two_decimal_currencies_side_by_side() -> None:
    result = diff_night(
        providers(
            record("ch_j", amount=12_000, currency="JPY"),
            record("ch_e", amount=12_000),
            record("ch_x", amount=500, currency="JPY"),
        ),
        ledger(entry("le_1", "ch_j", amount=11_000, currency="JPY"), entry("le_2", "ch_e", amount=12_000)),
    )
    rows = result.findings.set_index("record_key")
    assert rows.loc["ch_j:payment", "detail"] == (
        "provider payment ch_j is 12,000 JPY but ledger entry le_1 posts 11,000 JPY"
    )
    assert rows.loc["ch_j:payment", "difference_minor"] == 1_000
    assert rows.loc["ch_x:payment", "detail"] == (
        "provider payment ch_x of 500 JPY settled but the ledger has no entry for it"
    )
    assert result.provider_total_by_currency == {"EUR": 12_000, "JPY": 12_500}
    assert result.ledger_total_by_currency == {"EUR": 12_000, "JPY": 11_000}
    assert result.matched_amount_by_currency == {"EUR": 12_000}


def test_adjustment_entries_are_ignored() -> None:
    result = diff_night(
        providers(record("ch_1")),
        ledger(
            entry("le_1", "ch_1"),
            entry("le_2", "ch_1", "adjustment", -10_000),
            entry("le_3", None, "adjustment", 250),
            entry("le_4", "ch_7", "adjustment", 100),
        ),
    )
    assert findings(result) == []
    assert result.matched_count == 1
    assert result.ledger_total_by_currency == {"EUR": 10_000}


@pytest.mark.parametrize(
    ("provider_rows", "ledger_rows", "categories"),
    [
        ((), (), []),
        ((record("ch_1"),), (), ["missing_in_ledger"]),
        ((), (entry("le_1", "ch_1"),), ["missing_at_provider"]),
    ],
)
def test_empty_frames_on_either_side(
    provider_rows: tuple[dict[str, Any], ...], ledger_rows: tuple[dict[str, Any], ...], categories: list[str]
) -> None:
    result = diff_night(providers(*provider_rows), ledger(*ledger_rows), providers())
    assert result.findings["category"].tolist() == categories
    assert list(result.findings.columns) == list(FINDING_COLUMNS)
    assert str(result.findings["ledger_amount_minor"].dtype) == "Int64"
    assert str(result.findings["provider_amount_minor"].dtype) == "Int64"


def test_unmatched_ledger_record_ids_are_the_in_night_entries_without_a_record() -> None:
    ids = unmatched_ledger_record_ids(
        providers(record("ch_1"), record("ch_1", "fee", -300)),
        ledger(
            entry("le_1", "ch_1"),
            entry("le_2", "ch_1", "refund", -100),  # same id, other kind: not in the pull
            entry("le_3", "ch_5"),
            entry("le_4", "ch_5", "fee", -10),
            entry("le_5", "ch_6", in_night=False),
            entry("le_6", None),
            entry("le_7", "ch_7", "adjustment", 5),
        ),
    )
    assert ids == ["ch_1", "ch_5"]


def test_ids_are_compared_exactly_whatever_their_length_or_script() -> None:
    ids = ["ch_1", "ch_10", "ch_1\x00", "ch_é", "pay_Abc123", "rfnd_Abc123xyz", ""]
    result = diff_night(
        providers(*(record(rid) for rid in ids)),
        ledger(*(entry(f"le_{n}", rid) for n, rid in enumerate(ids))),
    )
    assert findings(result) == []
    assert result.matched_count == len(ids)
    result = diff_night(providers(record("ch_é")), ledger(entry("le_1", "ch_e")))
    assert sorted(result.findings["record_key"]) == ["ch_e:payment", "ch_é:payment"]


def test_text_columns_of_pandas_default_string_dtype_work_too() -> None:
    provider_records = providers(record("ch_1"), record("ch_2")).astype(
        {"provider_record_id": "str", "kind": "str"}
    )
    ledger_records = ledger(entry("le_1", "ch_1"), entry("le_2", None)).astype({"provider_record_id": "str"})
    result = diff_night(provider_records, ledger_records)
    assert sorted(result.findings["record_key"]) == ["ch_2:payment", "entry:le_2"]


def test_duplicate_provider_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="more than one record"):
        diff_night(providers(record("ch_1"), record("ch_1")), ledger())


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown record kinds"):
        diff_night(providers(record("ch_1", "chargeback")), ledger())


def test_hash_collisions_do_not_merge_different_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    night = generate_night(3_000, seed=4)
    expected = diff_night(night.provider_records, night.ledger_records, night.provider_elsewhere)
    monkeypatch.setattr(grouping, "_key_hash", lambda words: np.zeros(len(words), dtype=np.uint64))
    collided = diff_night(night.provider_records, night.ledger_records, night.provider_elsewhere)
    pd.testing.assert_frame_equal(collided.findings, expected.findings)
    assert collided.matched_count == expected.matched_count
    assert collided.timing_difference_count == expected.timing_difference_count


@pytest.mark.parametrize(("n", "seed"), [(2_000, 0), (20_000, 1)])
def test_every_injected_discrepancy_of_the_generator_is_found(n: int, seed: int) -> None:
    night = generate_night(n, seed=seed)
    result = diff_night(night.provider_records, night.ledger_records, night.provider_elsewhere)
    found = result.findings["category"].value_counts().to_dict()
    assert found == {category: count for category, count in night.injected.items() if count}
    assert result.matched_count == night.matched
    assert result.timing_difference_count == night.timing_differences
    assert not result.findings["record_key"].duplicated().any()


def test_a_ledger_naming_payment_intents_diffs_as_one_naming_charges() -> None:
    """One payment is one finding whichever id the ledger holds: mapped to the charge, the same findings
    (same record keys) and matches; the detail names the ledger's own id."""
    intents = {"ch_1": "pi_1", "ch_2": "pi_2"}
    pulled = providers(
        *(
            row | {"payment_intent_id": intents[row["provider_record_id"]]}
            for row in (record("ch_1"), record("ch_1", "fee", -300), record("ch_2", amount=5_000))
        )
    )
    rows = [
        ("le_1", "ch_1", "payment", 10_000),
        ("le_2", "ch_1", "fee", -300),
        ("le_3", "ch_2", "payment", 4_000),
    ]
    by_charge = ledger(*(entry(e, rid, kind, amount) for e, rid, kind, amount in rows))
    by_intent = ledger(*(entry(e, intents[rid], kind, amount) for e, rid, kind, amount in rows))
    canonical = canonical_ledger(by_intent, payment_aliases(pulled))
    assert unmatched_ledger_record_ids(pulled, canonical) == []
    expected, result = diff_night(pulled, by_charge), diff_night(pulled, canonical)
    assert findings(result) == findings(expected) and len(findings(result)) == 1
    assert result.matched_count == expected.matched_count == 2
    named = name_booked_ids(result.findings, by_intent)
    assert named["detail"].tolist() == [
        "provider payment ch_2 is 50.00 EUR but ledger entry le_3 posts 40.00 EUR"
        " (ledger entry le_3 names it pi_2)"
    ]
    unchanged = name_booked_ids(expected.findings, by_charge)["detail"]
    assert unchanged.equals(expected.findings["detail"])
