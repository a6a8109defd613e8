"""The matcher on whole nights: a PMS-style night yields only its planted findings, and a keyed night is
handed to the diff as it came (same findings as before, at the cost of one null check)."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks.datagen import generate_night
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.reconcile.matching import TIERS, MatchPolicy, match_night
from recon_pipeline.reconcile.matching import engine as matching_engine
from recon_pipeline_tests.support.match_frames import night, pms_night


def test_a_pms_style_night_yields_only_its_planted_findings() -> None:
    records, entries, planted = pms_night()
    assert len(diff_night(records, entries).findings) > 80  # without the matcher: nearly all false
    outcome = match_night(records, entries)
    assert night(outcome) == planted
    counts = outcome.counts_by_rule
    assert counts == counts | {"reference": 1, "split": 1, "card_window": 1, "exact_id": 0}
    assert (counts["booking_amount"], counts["strong_keys"]) == (39, 1)  # strong keys: the amount 5.00 off
    assert set(outcome.matches["status"]) == {"matched"}
    result = diff_night(outcome.provider_records, outcome.ledger)
    assert result.timing_difference_count == 1  # the posting after midnight


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pms_style_nights_of_other_seeds_too(seed: int) -> None:
    records, entries, planted = pms_night(seed)
    assert night(match_night(records, entries)) == planted


def test_each_tier_alone_leaves_the_rest_to_the_diff() -> None:
    records, entries, _ = pms_night()
    for tier in TIERS:
        outcome = match_night(records, entries, MatchPolicy(tiers=(tier,)))
        assert set(outcome.matches["rule"]) <= {tier}


def _keyed(n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    generated = generate_night(n, seed=7)
    ledger = generated.ledger_records
    unkeyed = ledger["provider_record_id"].isna() & (ledger["kind"] != "adjustment")
    return generated.provider_records, ledger[~unkeyed].reset_index(drop=True)


def test_a_keyed_night_is_handed_on_as_it_came_without_matching(monkeypatch: pytest.MonkeyPatch) -> None:
    records, ledger = _keyed(5_000)

    def refuse(*_: object) -> None:
        raise AssertionError("a keyed night must not look for candidates")

    monkeypatch.setattr(matching_engine, "candidate_sides", refuse)
    outcome = match_night(records, ledger)
    assert outcome.provider_records is records and outcome.ledger is ledger
    assert outcome.matches.empty and outcome.findings.empty
    assert outcome.counts_by_rule == {"exact_id": outcome.counts_by_rule["exact_id"]} | dict.fromkeys(
        ("person", *TIERS), 0
    )
    assert outcome.counts_by_rule["exact_id"] > 0.9 * len(records)


def test_a_keyed_world_reconciles_exactly_as_before() -> None:
    """generate_night's ledger is keyed but for a few manual entries, which no record fits: the diff of
    the matcher's output is the diff of its input."""
    generated = generate_night(5_000, seed=3)
    records, ledger = generated.provider_records, generated.ledger_records
    outcome = match_night(records, ledger)
    assert outcome.matches.empty and outcome.findings.empty
    before = diff_night(records, ledger, generated.provider_elsewhere)
    after = diff_night(outcome.provider_records, outcome.ledger, generated.provider_elsewhere)
    pd.testing.assert_frame_equal(before.findings, after.findings)
    assert before.matched_count == after.matched_count
