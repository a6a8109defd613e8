"""The demo's PMS-style properties (simulation/demo/pms_ledgers.py): ledgers written as Apaleo, OPERA and Mews
record money, and what the pipeline makes of them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest
from sqlalchemy import select

from recon_pipeline.db.schema import adjustments, discrepancies, matches
from recon_pipeline.providers.cards import brand_of
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR
from recon_pipeline.reconcile.matching import TIERS
from recon_pipeline.simulation.demo.pms_ledgers import PMS_STYLES
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES, demo_properties
from recon_pipeline.simulation.demo.world import World, build_world
from recon_pipeline.simulation.host.cards import card_of
from recon_pipeline.simulation.registry import simulation_named
from recon_pipeline.tenders import CARD, tender_of
from recon_pipeline_tests.support.pipeline_fixtures import asset_metadata, seeded

STYLE_OF = simulation_named(DEFAULT_FLAVOUR).demo_world().pms_styles
PMS_PROPERTIES = tuple(p for p in demo_properties(DEFAULT_FLAVOUR) if p.property_id in STYLE_OF)
NIGHT = date(2026, 12, 3)
BOOKINGS = 60


@dataclass(frozen=True)
class Shapes:
    """Where each of a property-night's PMS shapes is, found in its world by what it is."""

    takings: frozenset[str]  # entries of money the provider never sees
    reversal: frozenset[str]  # the +X and -X legs beside the failed charge
    group_charge: str
    group_postings: frozenset[str]
    twins: tuple[str, str]  # the two identical charges, the earlier first
    twin_posting: str
    refund_lines: frozenset[str]  # refunds posted as negative payments


def shapes_of(world: World, property_id: str) -> Shapes:
    [prop] = [p for p in PMS_PROPERTIES if p.property_id == property_id]
    entries = [e for e in world.ledger_entries if e["property_id"] == property_id]
    charges = [ch for ch in world.store.charges if ch["account"] == prop.provider_account]
    booking_of = {ch["id"]: ch["metadata"]["booking_id"] for ch in charges}
    takings = {e["entry_id"] for e in entries if tender_of(e.get("tender")) not in (CARD, None)}
    [failed] = [ch for ch in charges if ch["status"] == "failed"]
    reversal = {e["entry_id"] for e in entries if e["booking_id"] == booking_of[failed["id"]]}
    group = {b["booking_id"] for b in world.bookings if b.get("group_id") and b["property_id"] == property_id}
    [group_charge] = [ch["id"] for ch in charges if booking_of[ch["id"]] in group]
    twins = sorted(
        (ch for ch in charges if "fingerprint" in (ch.get("payment_method_details") or {}).get("card", {})),
        key=lambda ch: ch["created"],
    )
    [twin_posting] = [e["entry_id"] for e in entries if e["booking_id"] == booking_of[twins[0]["id"]]]
    refund_lines = {
        e["entry_id"]
        for e in entries
        if e["kind"] == "payment" and e["amount_minor"] < 0 and e["entry_id"] not in reversal
    }
    return Shapes(
        frozenset(takings),
        frozenset(reversal),
        group_charge,
        frozenset(e["entry_id"] for e in entries if e["booking_id"] in group),
        (twins[0]["id"], twins[1]["id"]),
        twin_posting,
        frozenset(refund_lines),
    )


@pytest.mark.fast
def test_each_pms_writes_its_ledger_as_it_records_money() -> None:
    assert set(STYLE_OF.values()) == set(PMS_STYLES) == {"apaleo", "opera", "mews"}
    world = build_world({p.property_id: NIGHT for p in PMS_PROPERTIES}, BOOKINGS, properties=PMS_PROPERTIES)
    charges = {ch["id"]: ch for ch in world.store.charges}
    for prop in PMS_PROPERTIES:
        style = PMS_STYLES[STYLE_OF[prop.property_id]]
        entries = [e for e in world.ledger_entries if e["property_id"] == prop.property_id]
        shapes = shapes_of(world, prop.property_id)
        by_id = {e["entry_id"]: e for e in entries}
        # tenders and card types spelled as the PMS's adapter writes them, read in one vocabulary
        tenders = Counter(e.get("tender") for e in entries if e["kind"] == "payment")
        assert set(tenders) - {None} == {style.tenders[tender_of(t) or CARD] for t in tenders if t}
        assert sorted(tender_of(by_id[e]["tender"]) for e in shapes.takings) == sorted(
            t for t, _ in style.takings
        )
        brands = {e["card_brand"] for e in entries if e.get("card_brand")}
        assert brands <= set(style.brands.values()) and {brand_of(b) for b in brands} == set(style.brands)
        unrecorded = [e for e in entries if e["kind"] == "payment" and e.get("tender") is None]
        if style.card_tender_with_card_only:  # OPERA: a card tender beside a card, else none recorded
            assert unrecorded and not [e for e in unrecorded if e.get("card_brand")]
        else:
            assert not unrecorded
        # refunds as negative payments; a refund entry only where the integration keyed it
        assert shapes.refund_lines
        assert not [e for e in entries if e["kind"] == "refund" and e["provider_record_id"] is None]
        # declined at the terminal: +X and -X beside a failed charge of X
        legs = sorted(by_id[e]["amount_minor"] for e in shapes.reversal)
        [failed] = [
            ch
            for ch in charges.values()
            if ch["status"] == "failed" and ch["account"] == prop.provider_account
        ]
        assert legs == [-failed["amount"], failed["amount"]]
        # a group's charge posted across its three bookings, summing exactly
        group = [by_id[e] for e in shapes.group_postings]
        assert len({e["booking_id"] for e in group}) == 3
        assert sum(e["amount_minor"] for e in group) == charges[shapes.group_charge]["amount"]
        # two identical charges (one booking, card and amount), one posting
        first, second = (charges[twin] for twin in shapes.twins)
        assert first["metadata"] == second["metadata"] and first["amount"] == second["amount"]
        assert (card_of(first).brand, card_of(first).last4) == (card_of(second).brand, card_of(second).last4)
        assert by_id[shapes.twin_posting]["amount_minor"] == first["amount"]
    # the other demo properties' worlds are as they were
    everyone = demo_properties(DEFAULT_FLAVOUR)
    whole = build_world({p.property_id: NIGHT for p in everyone}, BOOKINGS, properties=everyone)
    others = tuple(p for p in everyone if p.property_id not in STYLE_OF)
    alone = build_world({p.property_id: NIGHT for p in others}, BOOKINGS, properties=others)
    assert [e for e in whole.ledger_entries if e["property_id"] not in STYLE_OF] == alone.ledger_entries
    assert len(DEMO_PROPERTIES) == 3  # the tests' keyed worlds are unchanged


def _rows(pipeline: Any, table: Any, property_id: str) -> list[dict[str, Any]]:
    with pipeline.engine.connect() as connection:
        query = select(table).where(table.c.property_id == property_id)
        return [dict(row) for row in connection.execute(query).mappings()]


@pytest.mark.slow  # a Dagster run per property and database
def test_the_pms_nights_find_only_what_was_planted_and_propose_nothing_for_matched_or_other_money(
    database_url: str,
) -> None:
    """Through the night's job on SQLite and PostgreSQL: each PMS night's findings are the planted ones
    and each rule pairs what the world built; the money the provider never saw, the reversed declined
    payment, the group's split and the refund lines raise no finding and no proposal (money matched to
    the cent proposes nothing); of the identical charges the later is the payment nobody posted, with its
    money."""
    with seeded(database_url, properties=PMS_PROPERTIES) as pipeline:
        for prop in PMS_PROPERTIES:
            property_id = prop.property_id
            result = pipeline.materialize(property_id)
            assert result.success
            assert pipeline.found(property_id) == pipeline.planted(property_id)
            metadata = asset_metadata(result, "discrepancy_report")
            built = {
                r: n for (p, _night, r), n in pipeline.world.expected_matches.items() if p == property_id
            }
            assert {rule: metadata.get(f"matches/{rule}", 0) for rule in TIERS} == {
                r: built.get(r, 0) for r in TIERS
            }
            shapes = shapes_of(pipeline.world, property_id)
            found = _rows(pipeline, discrepancies, property_id)
            proposals = _rows(pipeline, adjustments, property_id)
            paired = [m for m in _rows(pipeline, matches, property_id) if m["status"] == "matched"]
            quiet = shapes.takings | shapes.reversal
            named = {row["ledger_entry_id"] for row in [*found, *proposals]}
            assert not quiet & named
            assert not quiet & {e for m in paired for e in m["ledger_entry_ids"].split()}
            [split] = [m for m in paired if m["provider_record_ids"] == shapes.group_charge]
            assert (split["rule"], set(split["ledger_entry_ids"].split())) == ("split", shapes.group_postings)
            for line in shapes.refund_lines:
                [refund] = [m for m in paired if line in m["ledger_entry_ids"].split()]
                assert refund["provider_record_ids"].startswith("re_")
            earlier, later = shapes.twins
            assert [m["ledger_entry_ids"] for m in paired if m["provider_record_ids"] == earlier] == [
                shapes.twin_posting
            ]
            [unposted] = [row for row in found if row["provider_record_id"] == later]
            assert (unposted["category"], unposted["difference_minor"]) == (
                "missing_in_ledger",
                unposted["provider_amount_minor"],
            )
            assert later in {row["provider_record_id"] for row in proposals}
            settled = [m for m in paired if m["provider_amount_minor"] == m["ledger_amount_minor"]]
            matched_ids = {
                i
                for m in settled
                for i in (*m["provider_record_ids"].split(), *m["ledger_entry_ids"].split())
            }
            matched_money = [
                row for row in proposals if {row["provider_record_id"], row["ledger_entry_id"]} & matched_ids
            ]
            assert matched_money == []


@pytest.mark.slow  # a Dagster run
def test_a_clean_pms_night_finds_nothing(sqlite_url: str) -> None:
    """Without plants, the PMS nights (their tenders, reversal, group and refund lines included) are
    reconciled without a single finding."""
    with seeded(sqlite_url, plant=False, properties=PMS_PROPERTIES) as pipeline:
        assert pipeline.materialize().success
        for prop in PMS_PROPERTIES:
            assert pipeline.found(prop.property_id) == {}
