"""Fees booked per payout (``payouts/fees.py``): a payout's fees, traced to the properties whose movements
it carried, against the ledger's ``fee`` entries under the payout id. The pure rule, then the night of
payouts on SQLite and PostgreSQL: the finding and its proposal, cleared and withdrawn once the PMS books
the fee (by hand, or by posting the proposal), untouched by the night's reconciliation, and nothing at all
for a property booking fees per movement."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import insert, select, update

from recon_pipeline.categories import (
    PAYOUT_CATEGORIES,
    PAYOUT_FAILED,
    PAYOUT_FEE_MISMATCH,
    PAYOUT_FEE_MISSING,
    RECONCILIATION_CATEGORIES,
    empty_findings,
)
from recon_pipeline.db.schema import adjustments, discrepancies, ledger_entries
from recon_pipeline.payouts.fees import BookedFee, fee_findings, fee_findings_frame
from recon_pipeline.payouts.night import reconcile_payouts
from recon_pipeline.payouts.trace import TracedTransaction
from recon_pipeline.postings.sql_adapter import entry_id_for
from recon_pipeline.properties import FEE_NONE, FEE_PER_PAYOUT, PropertyRow
from recon_pipeline.providers.payouts import Payout, PayoutTransaction
from recon_pipeline.storage.adjustments import sync_adjustments
from recon_pipeline.storage.findings import save_findings
from recon_pipeline_tests.support.payout_fixtures import (
    ARRIVAL,
    PROPERTIES,
    PayoutWorld,
    payout_store,
    payout_world,
)
from recon_pipeline_tests.support.provider_fixtures import (  # noqa: F401 (fixtures)
    StartSimulator,
    simulator_fixture,
    simulator_server_fixture,
)

NIGHT = ARRIVAL.isoformat()
CREATED = datetime(2026, 11, 25, tzinfo=UTC)
# The world's fees: po_conn_paid took 3.20 + 3.20 + 0.60 EUR on Porto's movements; po_platform_paid 6.10
# on Lisbon's and 3.00 on Denver's (the shared platform); po_failed 1.50 on Porto's, but it failed.
PORTO_FEES, LISBON_FEES, DENVER_FEES = 700, 610, 300


# --- the rule ---------------------------------------------------------------------------------------


def a_payout(status: str = "paid", payout_id: str = "po_1") -> Payout:
    return Payout(payout_id, None, 50_000, "EUR", status, None, date(2026, 12, 4), True, None, CREATED)


def moved(property_id: str | None, fee: int, amount: int = 10_000) -> TracedTransaction:
    item = PayoutTransaction("txn", "po_1", "ch", "payment", amount, fee, amount - fee, "EUR", CREATED)
    return TracedTransaction(item, property_id, "2026-12-02" if property_id else None)


def booked(property_id: str, amount: int, entry_id: str = "le_f", **changes: Any) -> BookedFee:
    return replace(BookedFee(entry_id, property_id, "po_1", amount, "EUR"), **changes)


def judged(found: list[Any]) -> list[tuple[str, str, int, int | None, int]]:
    return [
        (f.category, f.property_id, f.provider_amount_minor, f.ledger_amount_minor, f.difference_minor)
        for f in found
    ]


def test_a_payouts_fees_against_the_fee_entries_under_its_id() -> None:
    traced = [moved("a", 320), moved("a", 380), moved("b", 100), moved(None, 999)]  # the untraced: nobody's
    assert judged(fee_findings(a_payout(), traced, ["a", "b"], [booked("a", -700), booked("b", -100)])) == []
    split = [booked("a", -500, "le_1"), booked("a", -200, "le_2"), booked("b", -100)]  # two entries for one
    assert fee_findings(a_payout(), traced, ["a", "b"], split) == []
    assert judged(fee_findings(a_payout(), traced, ["a", "b"], [booked("a", -690)])) == [
        (PAYOUT_FEE_MISMATCH, "a", -700, -690, -10),
        (PAYOUT_FEE_MISSING, "b", -100, None, -100),
    ]
    # only the properties booking per payout are judged, and only entries of this payout, its currency
    others = [booked("b", -100, payout_id="po_2"), booked("b", -100, currency="USD"), booked("c", -5)]
    assert judged(fee_findings(a_payout(), traced, ["b"], others)) == [
        (PAYOUT_FEE_MISSING, "b", -100, None, -100)
    ]
    # a property the payout took no fee from books none: equal; one booking a fee anyway is a mismatch
    assert fee_findings(a_payout(), traced, ["c"], []) == []
    assert judged(fee_findings(a_payout(), traced, ["c"], [booked("c", -5)])) == [
        (PAYOUT_FEE_MISMATCH, "c", 0, -5, 5)
    ]


def test_a_payout_not_judged_when_its_fees_are_unknown_or_it_carried_none() -> None:
    traced = [moved("a", 320)]
    assert fee_findings(a_payout(), None, ["a"], []) == []  # untraceable (a manual payout)
    assert fee_findings(a_payout("failed"), traced, ["a"], []) == []
    assert fee_findings(a_payout("canceled"), traced, ["a"], []) == []
    assert fee_findings(a_payout(), traced, [], []) == []
    assert len(fee_findings(a_payout("in_transit"), traced, ["a"], [])) == 1


def test_the_findings_frame_keys_a_finding_by_payout_and_names_both_sides() -> None:
    found = fee_findings(
        a_payout(), [moved("a", 320), moved("b", 100)], ["a", "b"], [booked("a", -300, "le_po")]
    )
    rows = fee_findings_frame(found).to_dict("records")
    assert [(r["category"], r["record_key"], r["kind"], r["provider_record_id"]) for r in rows] == [
        (PAYOUT_FEE_MISMATCH, "po_1:fee", "fee", "po_1"),
        (PAYOUT_FEE_MISSING, "po_1:fee", "fee", "po_1"),
    ]
    mismatch, missing = rows
    assert (mismatch["ledger_entry_id"], mismatch["ledger_amount_minor"], mismatch["ledger_currency"]) == (
        "le_po",
        -300,
        "EUR",
    )
    assert mismatch["detail"] == (
        "payout po_1 took 3.20 EUR in fees on a's movements; the ledger's fee entries under its id (le_po) "
        "book 3.00 EUR"
    )
    assert missing["detail"] == (
        "payout po_1 took 1.00 EUR in fees on b's movements and the ledger books no fee entry under its id"
    )
    assert pd.isna(missing["ledger_amount_minor"]) and pd.isna(missing["ledger_entry_id"])


# --- a night of payouts -------------------------------------------------------------------------------


@pytest.fixture(name="world")
def world_fixture(database_url: str, simulator: StartSimulator) -> Iterator[PayoutWorld]:
    with payout_world(database_url, simulator(payout_store())) as world:
        yield world


def booking(**modes: str) -> tuple[PropertyRow, ...]:
    """The world's properties, those named booking fees their way (as their rows would say)."""
    return tuple(replace(row, fee_booking=modes.get(row.property_id.replace("-", "_"))) for row in PROPERTIES)


def run_night(world: PayoutWorld, rows: tuple[PropertyRow, ...], run: str = "run-1") -> Any:
    return reconcile_payouts(world.engine, world.client, ARRIVAL, rows, 3, frozenset(), run)


def outstanding(world: PayoutWorld) -> list[tuple[str, str, str, int | None, int]]:
    with world.engine.connect() as connection:
        rows = connection.execute(
            select(discrepancies)
            .where(discrepancies.c.cleared_at.is_(None))
            .order_by(discrepancies.c.record_key)
        ).mappings()
        return sorted(
            (
                r["property_id"],
                r["category"],
                r["record_key"],
                r["ledger_amount_minor"],
                r["difference_minor"],
            )
            for r in rows
        )


def proposals(world: PayoutWorld) -> list[tuple[str, str, str, int, str]]:
    with world.engine.connect() as connection:
        rows = connection.execute(select(adjustments).order_by(adjustments.c.created_at)).mappings()
        return sorted(
            (r["property_id"], r["kind"], r["provider_record_id"], r["amount_minor"], r["status"])
            for r in rows
        )


def book_fee(
    world: PayoutWorld, entry_id: str, property_id: str, payout_id: str, amount: int, kind: str = "fee"
) -> None:
    with world.engine.begin() as connection:
        connection.execute(
            insert(ledger_entries),
            [
                {
                    "entry_id": entry_id,
                    "property_id": property_id,
                    "booking_id": None,
                    "provider_record_id": payout_id,
                    "kind": kind,
                    "amount_minor": amount,
                    "currency": "EUR",
                    "posted_at": datetime(2026, 11, 28, 9, 0, tzinfo=UTC),
                }
            ],
        )


def test_a_payout_whose_fees_the_ledger_does_not_book_is_a_finding_proposing_the_fee_entry(
    world: PayoutWorld,
) -> None:
    rows = booking(porto_ribeira=FEE_PER_PAYOUT, lisbon_riverside=FEE_PER_PAYOUT, denver_lodge=FEE_NONE)
    result = run_night(world, rows)
    assert (result.fees_missing, result.fee_mismatches, result.proposed) == (2, 0, 2)
    assert outstanding(world) == [
        ("lisbon-riverside", PAYOUT_FEE_MISSING, "po_platform_paid:fee", None, -LISBON_FEES),
        ("porto-ribeira", PAYOUT_FAILED, "po_failed:payout", None, 5_000),  # its fees are not judged
        ("porto-ribeira", PAYOUT_FEE_MISSING, "po_conn_paid:fee", None, -PORTO_FEES),
    ]
    assert proposals(world) == [
        ("lisbon-riverside", "post_missing_fee", "po_platform_paid", -LISBON_FEES, "proposed"),
        ("porto-ribeira", "post_missing_fee", "po_conn_paid", -PORTO_FEES, "proposed"),
    ]
    again = run_night(world, rows, "run-2")  # nothing changed: nothing new, nothing moved
    assert (again.fees_missing, again.proposed) == (2, 2)
    assert len(outstanding(world)) == 3 and len(proposals(world)) == 2

    # Lisbon books the fee by hand, 0.10 off; Porto's proposal is posted back to the PMS (its sql entry).
    book_fee(world, "le_lisbon_po", "lisbon-riverside", "po_platform_paid", -600)
    with world.engine.begin() as connection:
        key = connection.execute(
            select(adjustments.c.idempotency_key).where(adjustments.c.property_id == "porto-ribeira")
        ).scalar_one()
        connection.execute(
            update(adjustments).where(adjustments.c.idempotency_key == key).values(status="posted")
        )
    # the sql adapter's entry of the posting: kind adjustment, under the payout id
    book_fee(world, entry_id_for(key), "porto-ribeira", "po_conn_paid", -PORTO_FEES, "adjustment")
    later = run_night(world, rows, "run-3")
    assert (later.fees_missing, later.fee_mismatches, later.proposed) == (0, 1, 1)
    assert outstanding(world) == [
        ("lisbon-riverside", PAYOUT_FEE_MISMATCH, "po_platform_paid:fee", -600, -10),
        ("porto-ribeira", PAYOUT_FAILED, "po_failed:payout", None, 5_000),
    ]
    assert proposals(world) == [
        ("lisbon-riverside", "correct_amount_fee", "po_platform_paid", -10, "proposed"),
        ("lisbon-riverside", "post_missing_fee", "po_platform_paid", -LISBON_FEES, "withdrawn"),
        ("porto-ribeira", "post_missing_fee", "po_conn_paid", -PORTO_FEES, "posted"),
    ]


def test_the_nights_reconciliation_leaves_the_payouts_fee_findings_and_proposals_alone(
    world: PayoutWorld,
) -> None:
    run_night(world, booking(porto_ribeira=FEE_PER_PAYOUT))
    before = (outstanding(world), proposals(world))
    assert [p[1] for p in before[1]] == ["post_missing_fee"]
    with world.engine.begin() as connection:  # the nightly writers of the same property-night, scoped
        now = datetime.now(UTC)
        sync_adjustments(connection, "porto-ribeira", NIGHT, [], now, RECONCILIATION_CATEGORIES)
        save_findings(
            connection, "porto-ribeira", NIGHT, empty_findings(), "rec", now, RECONCILIATION_CATEGORIES
        )
    assert (outstanding(world), proposals(world)) == before
    with world.engine.begin() as connection, pytest.raises(ValueError, match="payout_fee_missing"):
        proposal = {"category": PAYOUT_FEE_MISSING, "idempotency_key": "k"}
        sync_adjustments(connection, "porto-ribeira", NIGHT, [proposal], now, RECONCILIATION_CATEGORIES)
    assert set(PAYOUT_CATEGORIES) >= {PAYOUT_FEE_MISSING, PAYOUT_FEE_MISMATCH}
    assert not set(PAYOUT_CATEGORIES) & set(RECONCILIATION_CATEGORIES)


def test_a_property_that_stops_booking_per_payout_has_its_fee_findings_cleared(world: PayoutWorld) -> None:
    run_night(world, booking(porto_ribeira=FEE_PER_PAYOUT))
    assert [f[1] for f in outstanding(world)] == [PAYOUT_FAILED, PAYOUT_FEE_MISSING]
    today = run_night(world, PROPERTIES, "run-2")  # per movement again (NULL): the night's diff's business
    assert (today.fees_missing, today.fee_mismatches, today.proposed) == (0, 0, 0)
    assert [f[1] for f in outstanding(world)] == [PAYOUT_FAILED]
    assert [p[-1] for p in proposals(world)] == ["withdrawn"]


def test_properties_booking_fees_per_movement_get_no_fee_finding(world: PayoutWorld) -> None:
    """The world of the payout tests as it always was: the payouts night finds what it found before."""
    result = run_night(world, PROPERTIES)
    assert (result.fees_missing, result.fee_mismatches, result.proposed) == (0, 0, 0)
    assert outstanding(world) == [("porto-ribeira", PAYOUT_FAILED, "po_failed:payout", None, 5_000)]
    assert proposals(world) == []
