"""The matching benchmark scores what it should: a perfect reconciliation scores perfectly, the diff alone
on a PMS-kept ledger scores as badly as it does, a reconciliation that swallows the PMS shapes loses the
discrepancies planted inside them, and the matcher meets the targets on a small world."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from benchmarks import matching
from recon_pipeline.categories import finding_frame
from recon_pipeline.simulation.hotel_ledger import PMS_SHAPES, HotelNight, HotelWorld, build_hotel_world

# Plants inside the PMS shapes: what a matcher that pairs everything in them would lose.
_INSIDE_SHAPES = frozenset({"cash_beside_unposted", "group_short", "negative_unrefunded", "reversal_uneven"})


@pytest.fixture(scope="module")
def world() -> HotelWorld:
    return build_hotel_world(24, seed=3, nights_per_property=4)


def _night_with(label: str) -> HotelNight:
    """The first night (over seeds) with a plant of ``label``."""
    for seed in range(100):
        for night in build_hotel_world(12, seed=seed, nights_per_property=4).nights:
            if any(plant.label == label for plant in night.planted):
                return night
    raise AssertionError(f"no world of 12 nights plants {label}")


@pytest.fixture(scope="module")
def short_night() -> HotelNight:
    """A night with one of two identical charges unposted."""
    return _night_with("identical_short")


def _findings(night: HotelNight, plants: list[tuple[str, str, str | None]]) -> matching.Reconciled:
    """Findings (category, record_key, entry) as the diff writes them."""
    rows = []
    for category, key, entry in plants:
        record, kind = key.rsplit(":", 1)
        by_entry = key.startswith("entry:")
        rows.append(
            {
                "category": category,
                "record_key": key,
                "kind": "payment" if by_entry else kind,
                "provider_record_id": None if by_entry else record,
                "ledger_entry_id": entry,
                "provider_amount_minor": 0,
                "ledger_amount_minor": 100,
                "difference_minor": 0,
                "currency": night.currency,
                "detail": "planted",
            }
        )
    columns = {name: [row[name] for row in rows] for name in rows[0]} if rows else {}
    return matching.Reconciled(finding_frame(columns))


def _perfect(night: HotelNight, ledger: pd.DataFrame | None = None) -> matching.Reconciled:
    """Exactly the planted findings, each stated once (the ground truth read back)."""
    return _findings(night, [(p.category, p.key, p.entries[0] if p.entries else None) for p in night.planted])


def _swallowing(night: HotelNight, ledger: pd.DataFrame) -> matching.Reconciled:
    """A perfect reconciliation but for the discrepancies inside the PMS shapes, which it pairs away."""
    return _findings(
        night,
        [
            (p.category, p.key, p.entries[0] if p.entries else None)
            for p in night.planted
            if p.label not in _INSIDE_SHAPES
        ],
    )


def test_a_perfect_reconciliation_scores_perfectly(world: HotelWorld) -> None:
    scored = matching.score(world, matching.each(_perfect))
    assert scored.planted == sum(len(night.planted) for night in world.nights) > 0
    assert (scored.precision, scored.recall, scored.proposals_for_matched) == (1.0, 1.0, 0)
    assert scored.proposals_for_non_provider == 0
    assert scored.proposals > 0 and not scored.missed_by_label


def test_a_reconciliation_that_swallows_the_pms_shapes_loses_what_is_planted_inside(
    world: HotelWorld,
) -> None:
    scored = matching.score(world, matching.each(_swallowing))
    assert scored.precision == 1.0 and scored.recall < 0.9
    assert set(scored.missed_by_label) == _INSIDE_SHAPES
    assert _INSIDE_SHAPES <= PMS_SHAPES


def test_the_diff_alone_on_a_pms_ledger_finds_noise_and_proposes_matched_money(world: HotelWorld) -> None:
    scored = matching.score(world, matching.diff_alone)
    assert scored.precision < 0.2 < 0.8 < scored.recall
    assert scored.proposals_for_matched > 0.9 * scored.proposals
    assert scored.false_by_category.keys() >= {"missing_at_provider", "missing_in_ledger"}
    # all it misses: unkeyed postings off by an amount, which come out as two findings
    assert scored.missed_by_label.keys() <= {"amount_off"}
    # the takings are set aside before the diff, as the night's work does
    assert scored.proposals_for_non_provider == 0 and "takings" not in scored.false_by_shape


def test_a_proposal_for_a_non_provider_tender_is_counted_and_its_finding_is_false() -> None:
    night = next(n for n in build_hotel_world(6, seed=2, nights_per_property=3).nights if n.takings)
    taking = night.takings[0]
    reconciled = _findings(night, [("missing_at_provider", f"entry:{taking}", taking)])
    scored = matching.Score()
    scored.add_night(night, reconciled)
    assert (scored.proposals, scored.proposals_for_non_provider, scored.proposals_for_matched) == (1, 1, 0)
    assert scored.false_by_shape == {"takings": 1} and scored.real_findings == 0
    assert sum(scored.non_provider_money_by_currency.values()) == 100


def test_an_ambiguity_naming_a_planted_record_states_it_unless_its_money_is_certain(
    short_night: HotelNight,
) -> None:
    def ambiguity(kind: str, named: str) -> dict[str, object]:
        return {
            "category": "ambiguous_match",
            "record_key": "whatever",
            "provider_record_id": None,
            "ledger_entry_id": None,
            "kind": kind,
            "detail": f"two candidates: {named} and another",
        }

    night = _night_with("look_alike")
    plant = next(p for p in night.planted if p.label == "look_alike" and p.records)
    record, kind = plant.records[0].split(":")
    finding = ambiguity(kind, record)
    assert night.planted.index(plant) in matching._planted_stated(finding, night.planted)
    assert not matching._planted_stated(finding | {"detail": "nothing"}, night.planted)
    other_kind = "fee" if kind == "payment" else "payment"
    assert night.planted.index(plant) not in matching._planted_stated(
        finding | {"kind": other_kind}, night.planted
    )
    # one of two identical charges unposted: its money is certain, an ambiguity does not state it
    twins = next(p for p in short_night.planted if p.label == "identical_short")
    record, kind = twins.records[0].split(":")
    assert twins.certain and not matching._planted_stated(ambiguity(kind, record), short_night.planted)


def test_the_script_prints_its_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert matching.main(["--property-nights", "12", "--seed", "2", "--json", "--without-matcher"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["matcher"] is False and figures["property_nights"] == 12
    assert figures["findings"] == sum(figures["by_category"].values()) >= figures["real_findings"]
    assert figures["planted"] == sum(figures["planted_by_label"].values())
    assert figures["pms_shape_share"] >= 0.2 and figures["proposals_for_non_provider"] == 0
    assert matching.main(["--property-nights", "3", "--without-matcher", "--turns", "2"]) == 0
    printed = capsys.readouterr().out
    assert "precision" in printed and "median ratio" in printed


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


def test_the_matcher_meets_the_targets_on_a_small_world(world: HotelWorld) -> None:
    """The targets on 24 property-nights of the three PMSs: at least 99.5% of findings real and of planted
    found, no proposal for matched money, none for a tender the provider never sees."""
    scored = matching.score(world, matching.matcher_then_diff)
    figures = scored.figures()
    said = f"false {figures['false_by_shape']}, missed {figures['missed_by_label']}"
    assert scored.findings == sum(scored.by_category.values())
    assert scored.precision >= 0.995 and scored.recall >= 0.995, said
    assert scored.proposals_for_matched == 0 and scored.proposals_for_non_provider == 0, said


def _master_without_entry() -> HotelNight:
    """A night with a group's charge posted across its members' bookings, whose master booking (the
    charge's) has no entry at all in the ledger: only ``bookings.group_id`` says it is of the group."""
    for seed in range(100):
        for night in build_hotel_world(12, seed=seed, nights_per_property=4).nights:
            booked = set(night.ledger_records["booking_id"].dropna())
            records = night.provider_records
            for group in night.groups:
                if group.style == "group_folio" and group.records[0].endswith(":payment"):
                    charge = records[records["provider_record_id"] == group.records[0].split(":")[0]]
                    master = charge["booking_id"].iloc[0]
                    if master not in booked and master in night.booking_groups:
                        return night
    raise AssertionError("no world of 12 nights has a group's master booking without an entry")


def test_a_group_charge_whose_master_booking_has_no_entry_pairs_with_its_parts() -> None:
    night = _master_without_entry()
    scored = matching.Score()
    scored.add_night(night, matching.matcher_then_diff([(night, matching.read_ledger(night))])[0])
    assert "group_folio" not in scored.false_by_shape, scored.false_examples


def test_a_batch_and_its_rows_as_one_night_find_the_same_and_are_timed_against_each_other(
    world: HotelWorld,
) -> None:
    """``--against-one-night`` compares like with like: the batch's rows as one night find the batch's
    findings (the world's ids are unique across nights); then both arms are timed, prepared and not."""
    nights = matching.batches(world, len(world.nights))[0]
    apart = matching.matcher_then_diff(nights)
    (together,) = matching.matcher_then_diff(matching.as_one_night(nights))
    def keys(findings: pd.DataFrame) -> list[tuple[str, str]]:
        return list(zip(findings["category"], findings["record_key"], strict=True))

    found = sorted(key for night in apart for key in keys(night.findings))
    assert found and found == sorted(keys(together.findings))
    timed = matching.time_against_one_night(world, 2, len(world.nights))
    assert timed["property_nights"] == len(world.nights) and timed["rows"] > 0
    assert {name: len(seconds) for name, seconds in timed["turn_seconds"].items()} == {
        "batch": 2, "one_night": 2, "batch_prepared": 2, "one_night_prepared": 2
    }  # fmt: skip
    assert timed["ratio"] > 0 and timed["ratio_prepared"] > 0
