"""Matches decided before the run: a person's, applied verbatim first; an earlier night's; a rejection."""

from __future__ import annotations

from recon_pipeline.reconcile.diff import diff_night, unmatched_ledger_record_ids
from recon_pipeline.reconcile.matching import KnownMatch, MatchPolicy, match_night
from recon_pipeline_tests.support.match_frames import charge, folio, matched, night, posting, pull


def test_a_person_s_match_is_applied_verbatim_before_any_tier() -> None:
    outcome = match_night(
        pull(charge("ch_1", booking="bk_1"), charge("ch_2", booking="bk_2", amount=7_000)),
        folio(posting("le_1", booking="bk_1"), posting("le_2", booking="bk_9", amount=7_500)),
        known=[KnownMatch(("ch_2",), ("le_2",), "payment", "person")],
    )
    assert matched(outcome) == [
        ("ch_1=le_1", "booking_amount", "matched"),
        ("ch_2=le_2", "person", "confirmed"),
    ]
    assert night(outcome) == [("amount_mismatch", "ch_2:payment")]  # a person paired them; the diff compares
    assert outcome.counts_by_rule["person"] == 1
    assert outcome.matches.set_index("rule").loc["person", "detail"] == (
        "ledger entry le_2 of 75.00 EUR books provider payment ch_2 of 70.00 EUR, as a person confirmed: "
        "booking bk_2 vs bk_9 and amount 70.00 EUR vs 75.00 EUR differ"
    )


def test_a_known_match_whose_record_is_not_in_the_pull_re_keys_the_entry() -> None:
    """Tonight's posting at 00:05 of yesterday's charge, matched yesterday: the diff looks the charge up
    by id and finds it in the other night (a timing difference), not a posting without an id."""
    outcome = match_night(
        pull(),
        folio(posting("le_1", minute=5)),
        known=[KnownMatch(("ch_0",), ("le_1",), "payment", "booking_amount")],
    )
    assert outcome.ledger["provider_record_id"].tolist() == ["ch_0"]
    assert unmatched_ledger_record_ids(outcome.provider_records, outcome.ledger) == ["ch_0"]
    elsewhere = pull(charge("ch_0", minute=-10))
    result = diff_night(outcome.provider_records, outcome.ledger, elsewhere)
    assert result.findings.empty and result.timing_difference_count == 1
    assert matched(outcome) == [("ch_0=le_1", "booking_amount", "matched")]
    assert "(not in this night's pull)" in outcome.matches.iloc[0]["detail"]


def test_a_rejected_pairing_is_never_proposed_again() -> None:
    records = pull(charge("ch_1"))
    entries = folio(posting("le_1"))
    assert matched(match_night(records, entries)) == [("ch_1=le_1", "booking_amount", "matched")]
    rejected = KnownMatch(("ch_1",), ("le_1",), "payment", "booking_amount", confirmed=False)
    outcome = match_night(records, entries, known=[rejected])
    assert matched(outcome) == []
    assert night(outcome) == [("missing_at_provider", "entry:le_1"), ("missing_in_ledger", "ch_1:payment")]


def test_a_rejected_split_is_never_proposed_again() -> None:
    records = pull(charge("ch_1", amount=3_000))
    entries = folio(posting("le_1", amount=1_000), posting("le_2", amount=2_000))
    rejected = KnownMatch(("ch_1",), ("le_2", "le_1"), "payment", "split", confirmed=False)
    assert matched(match_night(records, entries, known=[rejected])) == []


def test_a_person_s_match_with_its_entry_outside_the_window_holds_the_record_back() -> None:
    outcome = match_night(
        pull(charge("ch_1"), charge("ch_2", booking="bk_2")),
        folio(posting("le_2", booking="bk_2")),
        known=[KnownMatch(("ch_1",), ("le_77",), "payment", "person")],
    )
    assert outcome.provider_records["provider_record_id"].tolist() == ["ch_2"]
    assert night(outcome) == []
    assert matched(outcome) == [
        ("ch_1=le_77", "person", "confirmed"),
        ("ch_2=le_2", "booking_amount", "matched"),
    ]


def test_an_earlier_night_s_match_whose_entry_is_gone_is_not_applied() -> None:
    outcome = match_night(
        pull(charge("ch_1")),
        folio(posting("le_2")),
        known=[KnownMatch(("ch_1",), ("le_77",), "payment", "booking_amount")],
    )
    assert matched(outcome) == [("ch_1=le_2", "booking_amount", "matched")]


def test_a_person_pairs_two_records_with_one_entry_and_the_first_decision_stands() -> None:
    outcome = match_night(
        pull(charge("ch_1", amount=4_000, booking="bk_1"), charge("ch_2", amount=6_000, booking="bk_2")),
        folio(posting("le_1", amount=10_000, booking=None)),
        known=[
            KnownMatch(("ch_1", "ch_2"), ("le_1",), "payment", "person"),
            KnownMatch(("ch_1",), ("le_1",), "payment", "booking_amount"),  # overlaps: ignored
        ],
    )
    assert matched(outcome) == [("ch_1+ch_2=le_1", "person", "confirmed")]
    assert sorted(outcome.ledger["provider_record_id"]) == ["ch_1", "ch_2"]
    assert night(outcome) == []


def test_an_earlier_night_s_match_is_applied_as_it_was_made() -> None:
    """Yesterday paired tonight's charge with yesterday's posting by booking and amount; tonight the
    posting is an adjacent-night row, paired again verbatim (no tier needed)."""
    outcome = match_night(
        pull(charge("ch_1", minute=2)),
        folio(posting("le_1", minute=-3, in_night=False)),
        MatchPolicy(tiers=()),
        known=[KnownMatch(("ch_1",), ("le_1",), "payment", "booking_amount")],
    )
    assert matched(outcome) == [("ch_1=le_1", "booking_amount", "matched")]
    assert outcome.matches.iloc[0]["detail"] == (
        "ledger entry le_1 of 100.00 EUR books provider payment ch_1 of 100.00 EUR by booking_amount, as an "
        "earlier run matched them (score 0.95): booking bk_1 and amount 100.00 EUR agree"
    )
    assert diff_night(outcome.provider_records, outcome.ledger).timing_difference_count == 1
