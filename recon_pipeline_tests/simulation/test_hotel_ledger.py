"""The labelled hotel-ledger world is deterministic and its ground truth is consistent with its frames.

The benchmark's precision is only as true as this ground truth: every group balances, every record and
entry is accounted for exactly once, every planted finding names rows that are there, and the PMS shapes
are what they claim to be once the ledger is read as the pipeline reads it.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pandas as pd
import pytest

from benchmarks.matching import read_ledger
from recon_pipeline.categories import AMOUNT_MISMATCH, MISSING_AT_PROVIDER, MISSING_IN_LEDGER
from recon_pipeline.providers.cards import brand_of
from recon_pipeline.simulation.hotel_ledger import (
    FEE_BOOKINGS,
    HOTEL_LEDGER_COLUMNS,
    HOTEL_PROVIDER_COLUMNS,
    PLANTS,
    PMS_STYLES,
    STYLES,
    HotelNight,
    HotelWorld,
    build_hotel_world,
)
from recon_pipeline.tenders import CARD, is_provider_tender, tender_of


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
    assert {night.pms for night in world.nights} == set(PMS_STYLES)
    assert {"JPY", "KRW"} <= {night.currency for night in world.nights if night.pms == "mews"}
    assert set(STYLES) - {"failed", "takings"} <= set(styles)
    assert set(world.planted_by_label()) == set(PLANTS)
    ledger = pd.concat([night.ledger_records for night in world.nights])
    assert ledger["provider_record_id"].isna().mean() > 0.5  # most postings without the provider's id
    assert (~ledger["in_night"]).any() and ledger["reference"].notna().any()
    assert ledger["approval_code"].notna().any() and ledger["card_last4"].notna().any()
    # the PMS shapes are at least a fifth of the entries
    assert world.pms_shape_entries() >= 0.2 * world.rows()[1]


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
        entries += [entry for plant in night.planted for entry in plant.entries]
        entries += [*night.adjacent, *night.takings]
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
                assert (by_record[plant.key] > 0) == (by_entry[entry] > 0)  # off, not of the other sign


def test_each_pms_writes_its_own_spellings_and_the_pipeline_reads_them_back(world: HotelWorld) -> None:
    """Tenders, card brands and last fours as each PMS writes them; read as the pipeline reads the
    ledger, every tender is in the vocabulary, every card posting's brand is its charge's, and the
    window the pipeline computes puts each entry in the night the world says."""
    written: dict[str, set[str]] = {pms: set() for pms in PMS_STYLES}
    for night in world.nights:
        raw = night.ledger_records
        written[night.pms].update(raw["card_brand"].dropna())
        read = read_ledger(night)
        assert len(read) == len(raw)  # no entry the contract forbids
        assert (
            read.set_index("entry_id")["in_night"].to_dict()
            == raw.set_index("entry_id")["in_night"].to_dict()
        )
        tenders = dict(zip(read["entry_id"], read["tender"].tolist(), strict=True))
        assert tenders == {
            entry: tender_of(t) for entry, t in zip(raw["entry_id"], raw["tender"], strict=True)
        }
        cards = read[read["card_brand"].notna()]
        assert cards["card_brand"].isin(["visa", "mastercard", "amex", "jcb"]).all()
        takings = read["entry_id"].isin(night.takings)
        assert not read.loc[takings, "tender"].map(is_provider_tender).any()
        assert read.loc[~takings, "tender"].map(is_provider_tender).all()
        by_charge = night.provider_records.set_index("provider_record_id")
        for entry in raw[raw["approval_code"].notna()].to_dict("records"):
            charge = by_charge.loc[by_charge["approval_code"] == entry["approval_code"]].iloc[0]
            assert brand_of(entry["card_brand"]) == charge["card_brand"]
            assert str(entry["card_last4"]).endswith(charge["card_last4"])
    assert {"VA", "MC", "AX"} <= written["opera"] and not written["opera"] & {"Visa", "visa"}
    assert {"VisaCredit", "Amex"} & written["apaleo"] and {"Visa", "MasterCard"} <= written["mews"]
    assert None in set(pd.concat([n.ledger_records for n in world.nights if n.pms == "opera"])["tender"])


def test_the_pms_shapes_are_what_they_claim(world: HotelWorld) -> None:
    """A group's parts sum to its charge across bookings (with the group's id, the master's own part
    sometimes missing, or with the charge's card and approval code on every part); a reversal's legs net
    to zero on one booking and card, an uneven one's do not; a refund posted as a payment is negative; an
    unposted charge beside takings of its booking and amount; one of two or three twins unposted."""
    seen: Counter[str] = Counter()
    uneven: defaultdict[tuple[str, object], list[int]] = defaultdict(list)
    for night in world.nights:
        entries = night.ledger_records.set_index("entry_id")
        records = night.provider_records.set_index(
            night.provider_records["provider_record_id"] + ":" + night.provider_records["kind"]
        )
        for group in night.groups:
            rows = entries.loc[list(group.entries)]
            seen[group.style] += 1
            if group.style == "group_folio" and group.records[0].endswith(":payment"):
                assert rows["booking_id"].nunique() == len(rows) >= 2 and rows["group_id"].nunique() == 1
                assert rows["group_id"].notna().all()
                if records.loc[group.records[0], "booking_id"] not in set(rows["booking_id"]):
                    seen["group_folio without the master's part"] += 1
            elif group.style == "group_by_card" and group.records[0].endswith(":payment"):
                assert rows["booking_id"].nunique() == len(rows) >= 2 and rows["group_id"].isna().all()
                assert set(rows["approval_code"]) == {records.loc[group.records[0], "approval_code"]}
            elif group.style == "reversal" and not group.records:
                assert rows["amount_minor"].sum() == 0 and len(rows) == 2
                assert rows["booking_id"].nunique() == rows["card_last4"].str[-4:].nunique() == 1
            elif group.style == "negative_refund":
                assert (rows["kind"] == "payment").all() and (rows["amount_minor"] < 0).all()
        for plant in night.planted:
            if plant.label == "cash_beside_unposted" and plant.key.endswith(":payment"):
                charge = records.loc[plant.key]
                takings = entries.loc[list(night.takings)]
                beside = takings[takings["booking_id"] == charge["booking_id"]]
                assert (beside["amount_minor"] == charge["amount_minor"]).any()
            if plant.label == "identical_short":
                assert plant.certain and len(plant.accepted) == len(plant.records) == len(plant.entries) + 1
            uneven[night.property_id, night.night] += [
                int(entries.loc[e, "amount_minor"]) for e in plant.entries if plant.label == "reversal_uneven"
            ]
    for legs in uneven.values():  # each +X then -Y, in pairs, never netting to zero
        for plus, minus in zip(legs[::2], legs[1::2], strict=True):
            assert plus > 0 > minus and plus + minus != 0
    assert {"group_folio", "group_by_card", "reversal", "negative_refund", "dispute_withdrawal"} <= set(seen)
    assert seen["group_folio without the master's part"] > 0
    tenders = pd.concat([night.ledger_records for night in world.nights])["tender"].dropna()
    assert {tender_of(t) for t in tenders} > {CARD}
