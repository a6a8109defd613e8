"""The labelled hotel-ledger world is deterministic and its ground truth is consistent with its frames.

The benchmark's precision is only as true as this ground truth: every group balances, every record and
entry is accounted for exactly once, and every planted finding names rows that are there.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from recon_pipeline.categories import AMOUNT_MISMATCH, MISSING_AT_PROVIDER, MISSING_IN_LEDGER
from recon_pipeline.simulation.hotel_ledger import (
    FEE_BOOKINGS,
    HOTEL_LEDGER_COLUMNS,
    HOTEL_PROVIDER_COLUMNS,
    STYLES,
    HotelNight,
    HotelWorld,
    build_hotel_world,
)


@pytest.fixture(scope="module")
def world() -> HotelWorld:
    return build_hotel_world(60, seed=5, nights_per_property=3)


def test_the_same_arguments_give_the_same_world(world: HotelWorld) -> None:
    again = build_hotel_world(60, seed=5, nights_per_property=3)
    for ours, theirs in zip(world.nights, again.nights, strict=True):
        pd.testing.assert_frame_equal(ours.provider_records, theirs.provider_records)
        pd.testing.assert_frame_equal(ours.ledger_records, theirs.ledger_records)
        assert (ours.groups, ours.planted, ours.fee_booking) == (
            theirs.groups,
            theirs.planted,
            theirs.fee_booking,
        )
    other = build_hotel_world(60, seed=6, nights_per_property=3)
    assert [n.planted for n in other.nights] != [n.planted for n in world.nights]


def test_the_frames_follow_the_contracts_and_mix_every_shape(world: HotelWorld) -> None:
    styles: Counter[str] = Counter()
    for night in world.nights:
        assert night.provider_records.dtypes.astype(str).to_dict() == HOTEL_PROVIDER_COLUMNS
        assert night.ledger_records.dtypes.astype(str).to_dict() == HOTEL_LEDGER_COLUMNS
        assert not night.provider_records.duplicated(["provider_record_id", "kind"]).any()
        assert night.ledger_records["entry_id"].is_unique
        styles.update(group.style for group in night.groups)
    assert {night.fee_booking for night in world.nights} == set(FEE_BOOKINGS)
    assert set(STYLES) - {"failed"} <= set(styles)
    assert set(world.planted_by_label()) == {
        "amount_off",
        "identical_short",
        "look_alike",
        "phantom_posting",
        "unposted_payment",
    }
    ledger = pd.concat([night.ledger_records for night in world.nights])
    assert ledger["provider_record_id"].isna().mean() > 0.5  # most postings without the provider's id
    assert (~ledger["in_night"]).any() and ledger["reference"].notna().any()
    assert ledger["approval_code"].notna().any() and ledger["card_last4"].notna().any()


def _amounts(night: HotelNight) -> tuple[dict[str, int], dict[str, int]]:
    records = night.provider_records
    by_record = dict(
        zip(
            records["provider_record_id"] + ":" + records["kind"],
            records["amount_minor"].tolist(),
            strict=True,
        )
    )
    entries = night.ledger_records
    return by_record, dict(zip(entries["entry_id"], entries["amount_minor"].tolist(), strict=True))


def test_every_group_balances_and_every_row_is_accounted_for_once(world: HotelWorld) -> None:
    for night in world.nights:
        by_record, by_entry = _amounts(night)
        for group in night.groups:
            records = sum(by_record[key] for key in group.records)
            assert records == sum(by_entry[entry] for entry in group.entries) == group.amount_minor, group
        record_keys = [key for group in night.groups for key in group.records]
        record_keys += [key for plant in night.planted for key in plant.records]
        record_keys += [*night.fees_elsewhere, *night.unsettled]
        assert sorted(record_keys) == sorted(by_record)
        entries = [entry for group in night.groups for entry in group.entries]
        entries += [entry for plant in night.planted for entry in plant.entries] + list(night.adjacent)
        assert sorted(entries) == sorted(by_entry)
        fees = night.provider_records["kind"] == "fee"
        if night.fee_booking == "per_movement":
            assert not night.fees_elsewhere and (night.ledger_records["kind"] == "fee").any() == fees.any()
        else:
            assert (
                len(night.fees_elsewhere) == fees.sum() and not (night.ledger_records["kind"] == "fee").any()
            )
        adjacent = night.ledger_records["entry_id"].isin(night.adjacent)
        assert not night.ledger_records.loc[adjacent, "in_night"].any()


def test_every_planted_finding_names_rows_that_are_there(world: HotelWorld) -> None:
    for night in world.nights:
        by_record, by_entry = _amounts(night)
        ledger = night.ledger_records.set_index("entry_id")
        for plant in night.planted:
            assert (plant.category, plant.key) in plant.accepted
            if plant.category == MISSING_IN_LEDGER:
                assert plant.key in by_record and all(key in by_record for _, key in plant.accepted)
            elif plant.category == MISSING_AT_PROVIDER:
                (entry,) = plant.entries
                if plant.key.startswith("entry:"):
                    assert plant.key == f"entry:{entry}" and pd.isna(ledger.loc[entry, "provider_record_id"])
                else:
                    assert plant.key == f"{ledger.loc[entry, 'provider_record_id']}:payment"
                    assert plant.key not in by_record
            else:
                assert plant.category == AMOUNT_MISMATCH
                (entry,) = plant.entries
                assert by_record[plant.key] != by_entry[entry]
