"""The matching benchmark scores what it should: a perfect reconciliation scores perfectly, today's diff
alone on a hotel-kept ledger scores as badly as issue 26 says, and the script runs end to end."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from benchmarks import matching
from recon_pipeline.categories import finding_frame
from recon_pipeline.simulation.hotel_ledger import HotelNight, HotelWorld, build_hotel_world


@pytest.fixture(scope="module")
def world() -> HotelWorld:
    return build_hotel_world(24, seed=3, nights_per_property=4)


@pytest.fixture(scope="module")
def short_night() -> HotelNight:
    """A night with one of two identical charges unposted (a rare plant: the first seed that has one)."""
    for seed in range(100):
        for night in build_hotel_world(12, seed=seed, nights_per_property=4).nights:
            if any(plant.label == "identical_short" for plant in night.planted):
                return night
    raise AssertionError("no world of 12 nights plants one of two identical charges unposted")


def _perfect(night: HotelNight) -> matching.Reconciled:
    """Exactly the planted findings, each stated once (the ground truth read back)."""
    rows = []
    for plant in night.planted:
        entry = plant.entries[0] if plant.entries else None
        record, kind = plant.key.rsplit(":", 1)
        by_entry = plant.key.startswith("entry:")
        rows.append(
            {
                "category": plant.category,
                "record_key": plant.key,
                "kind": "payment" if by_entry else kind,
                "provider_record_id": None if by_entry else record,
                "ledger_entry_id": entry,
                "provider_amount_minor": 0,
                "ledger_amount_minor": 0,
                "difference_minor": 0,
                "currency": night.currency,
                "detail": "planted",
            }
        )
    columns = {name: [row[name] for row in rows] for name in rows[0]} if rows else {}
    return matching.Reconciled(finding_frame(columns))


def test_a_perfect_reconciliation_scores_perfectly(world: HotelWorld) -> None:
    scored = matching.score(world, _perfect)
    assert scored.planted == sum(len(night.planted) for night in world.nights) > 0
    assert (scored.precision, scored.recall, scored.proposals_for_matched) == (1.0, 1.0, 0)
    assert scored.proposals > 0 and not scored.missed_by_label


def test_the_diff_alone_on_a_hotel_ledger_finds_noise_and_proposes_matched_money(world: HotelWorld) -> None:
    scored = matching.score(world, matching.diff_alone)
    assert scored.precision < 0.2 < 0.8 < scored.recall < 1.0
    assert scored.proposals_for_matched > 0.9 * scored.proposals
    assert scored.false_by_category.keys() >= {"missing_at_provider", "missing_in_ledger"}
    assert scored.missed_by_label.keys() == {"amount_off"}  # unkeyed postings off by an amount: two findings


def test_an_ambiguity_naming_a_planted_record_states_it(short_night: HotelNight) -> None:
    night = short_night
    plant = next(p for p in night.planted if p.label == "identical_short")
    record = plant.records[0].split(":")[0]
    finding = {
        "category": "ambiguous_match",
        "record_key": "whatever",
        "provider_record_id": None,
        "ledger_entry_id": None,
        "kind": plant.records[0].split(":")[1],
        "detail": f"two candidates: {record} and another",
    }
    assert night.planted.index(plant) in matching._planted_stated(finding, night.planted)
    assert not matching._planted_stated(finding | {"detail": "nothing"}, night.planted)
    other_kind = "fee" if finding["kind"] == "payment" else "payment"
    assert night.planted.index(plant) not in matching._planted_stated(
        finding | {"kind": other_kind}, night.planted
    )


def test_the_script_prints_its_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert matching.main(["--property-nights", "12", "--seed", "2", "--json", "--without-matcher"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["matcher"] is False and figures["property_nights"] == 12
    assert figures["findings"] == sum(figures["by_category"].values()) >= figures["real_findings"]
    assert figures["planted"] == sum(figures["planted_by_label"].values())
    assert matching.main(["--property-nights", "3", "--without-matcher"]) == 0
    assert "precision" in capsys.readouterr().out


def test_the_matcher_is_scored_when_it_is_there() -> None:
    pytest.importorskip("recon_pipeline.reconcile.matching")
    scored = matching.score(build_hotel_world(3, seed=3), matching.matcher_then_diff)
    assert scored.findings == sum(scored.by_category.values())
    assert isinstance(scored.matches_by_rule, dict) and pd.notna(scored.precision)


def test_a_discrepancy_stated_twice_is_one_real_finding(short_night: HotelNight) -> None:
    """Both of two identical charges reported missing when one is posted: one finding is real, one not."""
    night = short_night
    plant = next(p for p in night.planted if p.label == "identical_short")
    findings = _perfect(night).findings
    row = findings[findings["record_key"] == plant.key]
    other = sorted(key for _, key in plant.accepted if key != plant.key)[0]
    twice = pd.concat([findings, row.assign(record_key=other)], ignore_index=True)
    scored = matching.Score()
    scored.add_night(night, matching.Reconciled(twice))
    assert (scored.findings, scored.real_findings, scored.found) == (
        len(twice),
        len(twice) - 1,
        len(night.planted),
    )
    assert scored.false_by_category == {"missing_in_ledger": 1}
