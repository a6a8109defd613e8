"""Every tier of the matcher and every rule the tiers obey, each on the smallest night that shows it."""

from __future__ import annotations

from datetime import timedelta

from recon_pipeline.categories import AMBIGUOUS_MATCH, FINDING_COLUMNS, SUGGESTED_MATCH
from recon_pipeline.money import format_minor
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.reconcile.matching import MATCH_COLUMNS, MatchPolicy, match_night
from recon_pipeline.reconcile.matching.sentences import money
from recon_pipeline_tests.support.match_frames import charge, folio, matched, night, posting, pull
from recon_pipeline_tests.support.night_frames import entry, ledger, providers, record

# --- reference ----------------------------------------------------------------------------------------


def test_a_reference_naming_the_charge_pairs_whatever_else_differs() -> None:
    outcome = match_night(
        pull(charge("ch_1", amount=10_000), charge("ch_2", amount=10_000)),
        folio(
            posting("le_1", amount=9_500, booking=None, reference="Stripe ch_2 / front desk"),
            posting("le_2", booking=None, reference="terminal ch_1-deposit"),
        ),
    )
    assert matched(outcome) == [
        ("ch_1=le_2", "reference", "matched"),
        ("ch_2=le_1", "reference", "matched"),
    ]
    assert night(outcome) == [("amount_mismatch", "ch_2:payment")]  # one finding, not two


def test_a_reference_names_an_id_only_as_a_whole_token() -> None:
    outcome = match_night(
        pull(charge("ch_1", booking="bk_1"), charge("ch_9", booking="bk_9", intent="pi_9")),
        folio(
            posting("le_1", booking=None, reference="ch_12"),  # not ch_1
            posting("le_2", booking=None, amount=700, reference="paid via pi_9."),  # the intent of ch_9
        ),
        MatchPolicy(tiers=("reference",)),
    )
    assert matched(outcome) == [("ch_9=le_2", "reference", "matched")]


def test_a_reference_naming_an_intent_pairs_the_charge_that_succeeded() -> None:
    outcome = match_night(
        pull(
            charge("ch_1", status="failed", intent="pi_1", minute=10),
            charge("ch_2", intent="pi_1", minute=12),
        ),
        folio(posting("le_1", booking=None, reference="pi_1")),
        MatchPolicy(tiers=("reference",)),
    )
    assert matched(outcome) == [("ch_2=le_1", "reference", "matched")]
    assert night(outcome) == []


# --- booking + amount ---------------------------------------------------------------------------------


def test_booking_amount_pairs_the_unique_candidate_of_the_same_booking_and_amount() -> None:
    outcome = match_night(
        pull(charge("ch_1", booking="bk_1"), charge("ch_2", booking="bk_2", amount=5_000)),
        folio(posting("le_1", booking="bk_1"), posting("le_2", booking="bk_2", amount=5_000)),
    )
    assert matched(outcome) == [
        ("ch_1=le_1", "booking_amount", "matched"),
        ("ch_2=le_2", "booking_amount", "matched"),
    ]
    assert night(outcome) == []
    assert outcome.counts_by_rule["booking_amount"] == 2
    assert list(outcome.matches.columns) == list(MATCH_COLUMNS)
    row = outcome.matches.iloc[0]
    assert row["detail"] == (
        "ledger entry le_1 of 100.00 EUR books provider payment ch_1 of 100.00 EUR by booking_amount "
        "(score 0.95): booking bk_1 and amount 100.00 EUR agree"
    )
    assert (row["keys_agree"], row["keys_differ"], row["score"]) == (
        "booking bk_1, amount 100.00 EUR",
        "",
        0.95,
    )
    assert (row["provider_record_ids"], row["ledger_entry_ids"], row["booking_id"]) == (
        "ch_1",
        "le_1",
        "bk_1",
    )
    assert (row["provider_amount_minor"], row["ledger_amount_minor"], row["currency"]) == (
        10_000,
        10_000,
        "EUR",
    )


def test_identical_candidates_pair_in_time_order_when_the_money_is_certain() -> None:
    outcome = match_night(
        pull(charge("ch_a", minute=30), charge("ch_b", minute=10), charge("ch_c", minute=20)),
        folio(posting("le_3", minute=70), posting("le_1", minute=50), posting("le_2", minute=60)),
    )
    assert matched(outcome) == [
        ("ch_a=le_3", "booking_amount", "matched"),
        ("ch_b=le_1", "booking_amount", "matched"),
        ("ch_c=le_2", "booking_amount", "matched"),
    ]
    assert night(outcome) == []


def test_the_remainder_of_equally_good_candidates_is_one_ambiguity_without_money() -> None:
    """Three charges of one booking and amount on three cards, one posting that names no card: which two
    are unposted is a question for a person."""
    outcome = match_night(
        pull(
            charge("ch_1", card="visa 4242", minute=10),
            charge("ch_2", card="visa 1111", minute=20),
            charge("ch_3", card="amex 0005", minute=30),
        ),
        folio(posting("le_1", minute=40)),
    )
    assert matched(outcome) == [("ch_1=le_1", "booking_amount", "matched")]
    assert night(outcome) == [(AMBIGUOUS_MATCH, "ambiguous:ch_1+ch_2+ch_3=le_1")]
    finding = outcome.findings.iloc[0]
    assert finding["difference_minor"] == 0
    assert finding["provider_amount_minor"] == 20_000  # ch_2 and ch_3, held back from the diff
    assert finding["detail"] == (
        "provider payments ch_1 (100.00 EUR), ch_2 (100.00 EUR) and ch_3 (100.00 EUR) and ledger entry le_1 "
        "(100.00 EUR) of booking bk_1 are equally good candidates by booking_amount: ch_2 and ch_3 stay "
        "unpaired, and nothing is proposed until a person pairs them by hand"
    )
    assert list(outcome.findings.columns) == list(FINDING_COLUMNS)
    assert sorted(outcome.provider_records["provider_record_id"]) == ["ch_1"]


def test_interchangeable_twins_pair_earliest_first_and_the_rest_is_the_certain_finding() -> None:
    """Three identical charges (one booking, card and amount) and one posting: it makes no difference
    which pairs, so the earliest does, and the two left are each missing in the ledger with their money."""
    twins = [charge(f"ch_{i}", card="visa 4242", approval=f"00000{i}", minute=10 * i) for i in (1, 2, 3)]
    outcome = match_night(pull(*twins), folio(posting("le_1", card="VA 4242", minute=40)))
    assert matched(outcome) == [("ch_1=le_1", "booking_amount", "matched")]
    assert night(outcome) == [("missing_in_ledger", "ch_2:payment"), ("missing_in_ledger", "ch_3:payment")]
    assert outcome.findings.empty
    diff = diff_night(outcome.provider_records, outcome.ledger).findings
    assert diff["difference_minor"].tolist() == [10_000, 10_000]
    # the same night run again pairs the same twin
    again = match_night(pull(*reversed(twins)), folio(posting("le_1", card="VA 4242", minute=40)))
    assert matched(again) == matched(outcome)


def test_a_card_tells_apart_candidates_a_booking_and_amount_cannot() -> None:
    outcome = match_night(
        pull(charge("ch_1", card="visa 4242", minute=10), charge("ch_2", card="mastercard 5555", minute=20)),
        folio(
            posting("le_1", card="mastercard 5555", minute=30), posting("le_2", card="visa 4242", minute=40)
        ),
    )
    assert matched(outcome) == [
        ("ch_1=le_2", "booking_amount", "matched"),
        ("ch_2=le_1", "booking_amount", "matched"),
    ]


def test_a_differing_card_makes_a_booking_and_amount_pair_a_suggestion() -> None:
    outcome = match_night(pull(charge("ch_1", card="visa 4242")), folio(posting("le_1", card="amex 0005")))
    assert matched(outcome) == [("ch_1=le_1", "booking_amount", "suggested")]
    assert night(outcome) == [(SUGGESTED_MATCH, "match:ch_1=le_1")]
    row = outcome.matches.iloc[0]
    assert (row["score"], row["keys_differ"]) == (0.6, "card visa 4242 vs amex 0005")
    assert outcome.provider_records.empty and outcome.ledger.empty  # held back: no money either way


# --- the booking rule and look-alikes -----------------------------------------------------------------


def test_look_alikes_of_different_bookings_are_never_paired() -> None:
    """Two charges of the same amount on the same card, for two bookings: each pairs only with its own
    booking's posting; a posting of a third booking pairs with neither."""
    outcome = match_night(
        pull(
            charge("ch_1", booking="bk_1", card="visa 4242", minute=10),
            charge("ch_2", booking="bk_2", card="visa 4242", minute=11),
        ),
        folio(
            posting("le_1", booking="bk_1", card="visa 4242"),
            posting("le_3", booking="bk_3", card="visa 4242"),
        ),
    )
    assert matched(outcome) == [("ch_1=le_1", "booking_amount", "matched")]
    assert night(outcome) == [("missing_at_provider", "entry:le_3"), ("missing_in_ledger", "ch_2:payment")]


def test_different_bookings_pair_when_the_approval_code_agrees() -> None:
    outcome = match_night(
        pull(charge("ch_1", booking="bk_1", approval="A1B2C3")),
        folio(posting("le_1", booking="bk_7", approval=" a1b2c3 ")),
    )
    assert matched(outcome) == [("ch_1=le_1", "strong_keys", "matched")]
    assert outcome.matches.iloc[0]["keys_differ"] == "booking bk_1 vs bk_7"


# --- strong keys --------------------------------------------------------------------------------------


def test_strong_keys_pair_despite_the_amount_and_the_diff_reports_one_amount_mismatch() -> None:
    outcome = match_night(
        pull(charge("ch_1", amount=12_000, card="visa 4242", approval="123456")),
        folio(posting("le_1", amount=11_500, card="VISA **** 4242", approval="123456")),
    )
    assert matched(outcome) == [("ch_1=le_1", "strong_keys", "matched")]
    row = outcome.matches.iloc[0]
    assert row["keys_agree"] == "booking bk_1, card visa 4242, approval code 123456"
    assert row["keys_differ"] == "amount 120.00 EUR vs 115.00 EUR"
    assert night(outcome) == [("amount_mismatch", "ch_1:payment")]


def test_card_and_booking_pair_when_no_approval_code_is_known() -> None:
    outcome = match_night(
        pull(charge("ch_1", amount=12_000, card="mastercard 5555")),
        folio(posting("le_1", amount=12_500, card="MC 5555")),
    )
    assert matched(outcome) == [("ch_1=le_1", "strong_keys", "matched")]
    assert outcome.matches.iloc[0]["score"] == 0.9
    assert night(outcome) == [("amount_mismatch", "ch_1:payment")]


def test_strong_keys_prefer_the_candidate_whose_amount_agrees() -> None:
    outcome = match_night(
        pull(charge("ch_1", amount=10_000, approval="777777")),
        folio(
            posting("le_1", amount=10_000, approval="777777"),
            posting("le_2", amount=9_000, approval="777777"),
        ),
        MatchPolicy(tiers=("strong_keys",)),
    )
    assert matched(outcome) == [("ch_1=le_1", "strong_keys", "matched")]
    assert night(outcome) == [("missing_at_provider", "entry:le_2")]


# --- split --------------------------------------------------------------------------------------------


def test_a_split_folio_of_two_postings_books_one_charge_as_one_row() -> None:
    outcome = match_night(
        pull(charge("ch_1", amount=30_000)),
        folio(posting("le_2", amount=10_000, minute=90), posting("le_1", amount=20_000, minute=80)),
    )
    assert matched(outcome) == [("ch_1=le_1+le_2", "split", "matched")]
    assert outcome.ledger[["entry_id", "provider_record_id", "amount_minor"]].values.tolist() == [
        ["le_1", "ch_1", 30_000]  # the first posted entry stands for both, their amounts summed
    ]
    assert night(outcome) == []
    assert outcome.matches.iloc[0]["detail"] == (
        "ledger entries le_1 and le_2 (200.00 EUR + 100.00 EUR) together book provider payment ch_1 of "
        "300.00 EUR by split (score 0.90): booking bk_1 and amount 300.00 EUR agree"
    )


def test_one_posting_for_two_charges_becomes_a_row_per_charge() -> None:
    outcome = match_night(
        pull(charge("ch_1", amount=4_000), charge("ch_2", amount=6_000), charge("ch_3", amount=99_900)),
        folio(posting("le_1", amount=10_000)),
    )
    assert matched(outcome) == [("ch_1+ch_2=le_1", "split", "matched")]
    rows = outcome.ledger[["entry_id", "provider_record_id", "amount_minor"]].values.tolist()
    assert sorted(rows) == [["le_1", "ch_1", 4_000], ["le_1", "ch_2", 6_000]]
    assert night(outcome) == [("missing_in_ledger", "ch_3:payment")]


def test_the_split_search_is_bounded_per_booking() -> None:
    postings = [posting(f"le_{i}", amount=100 << i, minute=60 + i) for i in range(9)]  # unique sums
    records = pull(charge("ch_1", amount=100 + 200 + 400))
    assert matched(match_night(records, folio(*postings), MatchPolicy(max_split=9))) == [
        ("ch_1=le_0+le_1+le_2", "split", "matched")
    ]
    outcome = match_night(records, folio(*postings), MatchPolicy(max_split=8))  # 9 postings: not searched
    assert matched(outcome) == []
    assert len(night(outcome)) == 10


def test_two_subsets_summing_to_one_charge_are_an_ambiguity() -> None:
    outcome = match_night(
        pull(charge("ch_1", amount=5_000)),
        folio(posting("le_1", amount=2_000), posting("le_2", amount=3_000), posting("le_3", amount=3_000)),
    )
    assert matched(outcome) == []
    assert night(outcome) == [(AMBIGUOUS_MATCH, "ambiguous:ch_1=le_1+le_2+le_3")]


# --- card + window ------------------------------------------------------------------------------------


def test_card_window_pairs_a_posting_without_booking_by_amount_card_and_time() -> None:
    outcome = match_night(
        pull(charge("ch_1", card="visa 4242", minute=60), charge("ch_2", card="visa 1111", minute=62)),
        folio(posting("le_1", booking=None, card="visa 4242", minute=100)),
    )
    assert matched(outcome) == [("ch_1=le_1", "card_window", "matched")]
    assert outcome.matches.iloc[0]["keys_agree"] == "amount 100.00 EUR, card visa 4242, time (40 min apart)"
    assert night(outcome) == [("missing_in_ledger", "ch_2:payment")]


def test_card_window_needs_the_time_window() -> None:
    records = pull(charge("ch_1", card="visa 4242", minute=60))
    entries = folio(posting("le_1", booking=None, card="visa 4242", minute=60 + 181))
    assert matched(match_night(records, entries)) == []
    assert matched(match_night(records, entries, MatchPolicy(window=timedelta(hours=4)))) == [
        ("ch_1=le_1", "card_window", "matched")
    ]


def test_amount_and_time_without_a_card_are_only_a_suggestion() -> None:
    outcome = match_night(pull(charge("ch_1", minute=60)), folio(posting("le_1", booking=None, minute=70)))
    assert matched(outcome) == [("ch_1=le_1", "card_window", "suggested")]
    assert night(outcome) == [(SUGGESTED_MATCH, "match:ch_1=le_1")]
    assert outcome.findings.iloc[0]["detail"] == (
        "ledger entry le_1 of 100.00 EUR may book provider payment ch_1 of 100.00 EUR by card_window "
        "(score 0.50, below the threshold 0.80, so nothing is proposed until a person confirms it): "
        "amount 100.00 EUR and time (10 min apart) agree, the card is unknown on a side"
    )
    assert outcome.counts_by_rule["card_window"] == 0  # a suggestion is no match
    lowered = match_night(
        pull(charge("ch_1", minute=60)), folio(posting("le_1", booking=None)), MatchPolicy(threshold=0.5)
    )
    assert matched(lowered) == [("ch_1=le_1", "card_window", "matched")]


def test_a_card_that_differs_rules_out_card_window() -> None:
    outcome = match_night(
        pull(charge("ch_1", card="visa 4242")), folio(posting("le_1", booking=None, card="visa 9999"))
    )
    assert matched(outcome) == []


# --- nights, kinds and currencies ---------------------------------------------------------------------


def test_an_unkeyed_posting_of_the_next_night_is_a_timing_difference() -> None:
    outcome = match_night(
        pull(charge("ch_1", minute=23 * 60 + 58)),
        folio(
            posting("le_1", minute=5, in_night=False),
            posting("le_9", booking="bk_9", amount=1, in_night=False),
        ),
    )
    assert matched(outcome) == [("ch_1=le_1", "booking_amount", "matched")]
    result = diff_night(outcome.provider_records, outcome.ledger)
    assert result.findings.empty and result.timing_difference_count == 1


def test_in_night_postings_are_preferred_to_adjacent_ones_and_the_rest_is_no_finding() -> None:
    outcome = match_night(
        pull(charge("ch_1", minute=600)),
        folio(posting("le_0", minute=590 - 24 * 60, in_night=False), posting("le_1", minute=610)),
    )
    assert matched(outcome) == [("ch_1=le_1", "booking_amount", "matched")]
    assert night(outcome) == []


def test_refunds_disputes_and_fees_go_through_the_same_matcher_and_adjustments_never_match() -> None:
    outcome = match_night(
        pull(
            charge("ch_1"),
            charge("ch_1", "fee", -320),
            charge("re_1", "refund", -2_500, charge_id="ch_1"),
            charge("du_1", "dispute", -4_000),
        ),
        folio(
            posting("le_1"),
            posting("le_2", "fee", -320),
            posting("le_3", "refund", -2_500),
            posting("le_4", "dispute", -4_000),
            posting("le_5", "adjustment", -4_000),
        ),
    )
    assert matched(outcome) == [
        ("ch_1=le_1", "booking_amount", "matched"),
        ("ch_1=le_2", "booking_amount", "matched"),
        ("du_1=le_4", "booking_amount", "matched"),
        ("re_1=le_3", "booking_amount", "matched"),
    ]
    assert night(outcome) == []


def test_a_posting_in_the_settlement_currency_pairs_at_the_settlement_figure() -> None:
    outcome = match_night(
        pull(charge("ch_1", amount=10_000, currency="USD", settled_as=(9_200, "EUR"))),
        folio(posting("le_1", amount=9_200, currency="EUR"), posting("le_2", amount=10_000, currency="GBP")),
    )
    assert matched(outcome) == [("ch_1=le_1", "booking_amount", "matched")]
    assert night(outcome) == [("missing_at_provider", "entry:le_2")]


def test_a_failed_attempt_never_takes_the_posting_of_the_charge_that_succeeded() -> None:
    records = pull(charge("ch_1", status="failed", minute=10), charge("ch_2", minute=12))
    outcome = match_night(records, folio(posting("le_1")))
    assert matched(outcome) == [("ch_2=le_1", "booking_amount", "matched")]
    assert night(outcome) == []


def test_a_posting_only_a_failed_attempt_fits_is_a_status_mismatch_as_when_keyed() -> None:
    outcome = match_night(
        pull(charge("ch_1", status="failed", minute=10), charge("ch_2", status="failed", minute=12)),
        folio(posting("le_1")),
    )
    assert matched(outcome) == [("ch_1=le_1", "booking_amount", "matched")]
    assert night(outcome) == [("status_mismatch", "ch_1:payment")]  # the other attempt: no finding


# --- holds across tiers, sentences --------------------------------------------------------------------


def test_the_remainder_of_an_ambiguity_may_still_pair_in_a_later_tier() -> None:
    """A booking's two identical charges, one posting on the booking and one from the terminal without
    it: the booking pairs the first in time order, card_window the second; nothing is left ambiguous."""
    outcome = match_night(
        pull(charge("ch_1", card="visa 4242", minute=10), charge("ch_2", card="visa 4242", minute=20)),
        folio(posting("le_1", minute=15), posting("le_2", booking=None, card="VISA 4242", minute=25)),
    )
    assert matched(outcome) == [
        ("ch_1=le_1", "booking_amount", "matched"),
        ("ch_2=le_2", "card_window", "matched"),
    ]
    assert night(outcome) == []


def test_a_suggestion_one_of_whose_rows_a_later_tier_pairs_is_void() -> None:
    outcome = match_night(
        pull(charge("ch_1", card="visa 4242", approval="111111")),
        folio(
            posting("le_1", card="amex 0005"),  # same booking and amount, another card: a suggestion
            posting("le_2", amount=9_000, booking="bk_7", approval="111111"),  # the approval code: sure
        ),
    )
    assert matched(outcome) == [("ch_1=le_2", "strong_keys", "matched")]
    assert night(outcome) == [("amount_mismatch", "ch_1:payment"), ("missing_at_provider", "entry:le_1")]


def test_rows_held_by_two_tiers_are_one_ambiguity() -> None:
    outcome = match_night(
        pull(charge("ch_1", card="visa 4242", minute=60)),
        folio(
            posting("le_1", card="amex 0005", minute=70),  # booking_amount, card differs: 0.60
            posting("le_2", booking=None, minute=80),  # card_window without a card: 0.50
        ),
    )
    assert matched(outcome) == []
    assert night(outcome) == [(AMBIGUOUS_MATCH, "ambiguous:ch_1=le_1+le_2")]
    assert outcome.ledger.empty and outcome.provider_records.empty


def test_amounts_are_said_as_format_minor_says_them() -> None:
    for amount, currency in ((123_456_789, "EUR"), (-5, "USD"), (1_000, "JPY"), (12_345, "KWD"), (0, "eur")):
        assert money(amount, currency) == format_minor(amount, currency)


def test_one_posting_in_the_settlement_currency_for_two_converted_charges() -> None:
    outcome = match_night(
        pull(
            charge("ch_1", amount=5_000, currency="USD", settled_as=(4_600, "EUR")),
            charge("ch_2", amount=3_000, currency="USD", settled_as=(2_760, "EUR")),
        ),
        folio(posting("le_1", amount=7_360, currency="EUR")),
    )
    assert matched(outcome) == [("ch_1+ch_2=le_1", "split", "matched")]
    assert sorted(outcome.ledger["amount_minor"]) == [2_760, 4_600]
    assert night(outcome) == []


def test_frames_without_the_optional_columns_are_matched_on_what_they_have() -> None:
    """A provider without cards and a ledger without cards or references (the columns absent)."""
    outcome = match_night(
        providers(record("ch_1"), record("ch_2", amount=5_000, booking="bk_2")),
        ledger(entry("le_1", None), entry("le_2", None, amount=5_000, booking="bk_2"), entry("le_3", "ch_9")),
    )
    assert matched(outcome) == [
        ("ch_1=le_1", "booking_amount", "matched"),
        ("ch_2=le_2", "booking_amount", "matched"),
    ]
    assert night(outcome) == [("missing_at_provider", "ch_9:payment")]


def test_a_reference_to_a_charge_of_another_booking_is_not_enough() -> None:
    outcome = match_night(
        pull(charge("ch_1", booking="bk_1")), folio(posting("le_1", booking="bk_2", reference="ch_1"))
    )
    assert matched(outcome) == []
