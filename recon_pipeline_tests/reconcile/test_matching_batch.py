"""The matcher over a batch's nights at once (``match_nights``) gives each night what ``match_night`` gives
it alone, row for row: on the labelled world of PMS-kept ledgers, and where the same ids sit in two nights
of one batch (a rejection, a decided match, a policy and a split belong to their own night only)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from benchmarks import matching
from recon_pipeline.reconcile.diff import (
    NightToDiff,
    diff_night,
    diff_nights,
    unmatched_ids_of_nights,
    unmatched_ledger_record_ids,
)
from recon_pipeline.reconcile.matching import (
    KnownMatch,
    MatchOutcome,
    MatchPolicy,
    NightToMatch,
    match_night,
    match_nights,
    with_groups,
)
from recon_pipeline.simulation.hotel_ledger import build_hotel_world
from recon_pipeline_tests.support.match_frames import charge, folio, matched, posting, pull

pytestmark = pytest.mark.fast


def _alone(nights: list[NightToMatch]) -> list[MatchOutcome]:
    return [match_night(n.provider_records, n.ledger, n.policy, n.known) for n in nights]


def _assert_same(alone: list[MatchOutcome], together: list[MatchOutcome]) -> None:
    """Every frame equal (values, dtypes, columns in order), and the counts and reversed pairs."""
    assert len(alone) == len(together)
    for at, (one, other) in enumerate(zip(alone, together, strict=True)):
        for name in ("provider_records", "ledger", "matches", "findings"):
            pd.testing.assert_frame_equal(
                getattr(one, name).reset_index(drop=True), getattr(other, name), obj=f"night {at} {name}"
            )
        assert one.counts_by_rule == other.counts_by_rule, f"night {at}"
        assert one.reversed_entries == other.reversed_entries, f"night {at}"


def test_a_batch_of_the_labelled_world_matches_each_night_as_it_would_alone() -> None:
    """96 property-nights in the three PMS styles (groups, negative refunds, reversals, twins, tenders)."""
    world = build_hotel_world(24, seed=3, nights_per_property=4)
    nights = []
    for night, ledger in matching.batches(world, len(world.nights))[0]:
        provider, compared = matching.fees_compared(night, ledger)
        nights.append(NightToMatch(with_groups(provider, night.booking_groups), compared))
    nights.insert(len(nights) // 2, NightToMatch(*_held_night()))
    alone = _alone(nights)
    assert sum(len(outcome.matches) for outcome in alone) > 500  # the world is matched, not keyed
    assert any(outcome.reversed_entries for outcome in alone)
    assert sorted(alone[len(nights) // 2].findings["category"]) == ["ambiguous_match", "suggested_match"]
    _assert_same(alone, match_nights(nights))


def test_the_diff_over_the_matcher_s_stack_gives_each_labelled_night_its_own_diff() -> None:
    """The batch's diff takes the matcher's stack again (``MatchOutcome.cuts``) rather than stacking its
    pieces: each night's findings, counts and totals, and the ids it looks up, are still what the diff of
    that night's own frames gives alone."""
    world = build_hotel_world(12, seed=4, nights_per_property=4)
    batch = matching.batches(world, len(world.nights))[0]
    ready = matching.prepared(batch)
    outcomes = match_nights([to_match for _, to_match in ready])
    cut_from = {id(cut.stack) for o in outcomes for cut in o.cuts or ()}
    assert all(o.cuts for o in outcomes) and len(cut_from) == 2  # the matcher's two stacks
    nights = [
        NightToDiff(o.provider_records, o.ledger, night.provider_elsewhere, 0, night.currency, o.cuts)
        for (night, _), o in zip(ready, outcomes, strict=True)
    ]
    together = diff_nights(nights)
    assert sum(len(result.findings) for result in together) > 20
    for at, (night, result) in enumerate(zip(nights, together, strict=True)):
        alone = diff_night(
            night.provider_records, night.ledger_records, night.provider_elsewhere, 0, night.property_currency
        )
        pd.testing.assert_frame_equal(result.findings, alone.findings, obj=f"night {at}")
        assert dataclasses.replace(result, findings=None) == dataclasses.replace(alone, findings=None)
    assert unmatched_ids_of_nights(nights) == [
        unmatched_ledger_record_ids(night.provider_records, night.ledger_records) for night in nights
    ]


def _held_night() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two charges of one booking and amount on different cards and one posting naming neither card (an
    ambiguity), and a posting of a charge's amount with no card or booking (a suggestion)."""
    records = pull(
        charge("ch_a", booking="bk_7", card="visa 4242", minute=60),
        charge("ch_b", booking="bk_7", card="visa 1111", minute=65),
        charge("ch_c", booking=None, amount=2_500, minute=90),
    )
    entries = folio(
        posting("le_a", booking="bk_7", minute=70),
        posting("le_c", booking=None, amount=2_500, minute=95),
    )
    return records, entries


def _night() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two charges of one booking posted as two postings, a split folio, and a card-only posting."""
    records = pull(
        charge("ch_1", booking="bk_1", card="visa 4242", minute=60),
        charge("ch_2", booking="bk_2", amount=30_000, minute=70),
        charge("ch_3", booking=None, card="mastercard 5454", amount=4_500, minute=80),
    )
    entries = folio(
        posting("le_1", booking="bk_1", card="visa 4242", minute=61),
        posting("le_2a", booking="bk_2", amount=10_000, minute=71),
        posting("le_2b", booking="bk_2", amount=20_000, minute=72),
        posting("le_3", booking=None, card="mastercard 5454", amount=4_500, minute=85),
    )
    return records, entries


def test_the_same_ids_in_two_nights_pair_within_their_own_night_only() -> None:
    """Three copies of one night (the same ids): matched alone, each pairs its own rows. Unscoped, every
    pairing would have two equal candidates and read as an ambiguity."""
    records, entries = _night()
    nights = [NightToMatch(records, entries) for _ in range(3)]
    together = match_nights(nights)
    _assert_same(_alone(nights), together)
    for outcome in together:
        assert matched(outcome) == [
            ("ch_1=le_1", "booking_amount", "matched"),
            ("ch_2=le_2a+le_2b", "split", "matched"),
            ("ch_3=le_3", "card_window", "matched"),
        ]
        assert outcome.findings.empty


def test_a_rejection_a_decided_match_and_a_policy_belong_to_their_own_night() -> None:
    """Night 0 has ch_1=le_1 rejected by a person, night 1 a person's pairing of ch_3 with le_1, night 2 a
    policy without the split tier; night 3 is the plain night. Each is matched as it would be alone."""
    records, entries = _night()
    rejected = KnownMatch(("ch_1",), ("le_1",), "payment", "booking_amount", confirmed=False)
    paired = KnownMatch(("ch_3",), ("le_1",), "payment", "person")
    no_split = MatchPolicy(tiers=("reference", "booking_amount", "strong_keys", "card_window"))
    nights = [
        NightToMatch(records, entries, known=[rejected]),
        NightToMatch(records, entries, known=[paired]),
        NightToMatch(records, entries, policy=no_split),
        NightToMatch(records, entries),
    ]
    together = match_nights(nights)
    _assert_same(_alone(nights), together)
    rules = [{rule for _key, rule, _status in matched(outcome)} for outcome in together]
    assert "booking_amount" not in rules[0] and "person" in rules[1] and "split" not in rules[2]
    assert rules[3] == {"booking_amount", "card_window", "split"}


def test_an_empty_night_in_a_batch_is_an_empty_outcome() -> None:
    records, entries = _night()
    nights = [NightToMatch(records, entries), NightToMatch(pull(), folio()), NightToMatch(records, entries)]
    _assert_same(_alone(nights), match_nights(nights))
