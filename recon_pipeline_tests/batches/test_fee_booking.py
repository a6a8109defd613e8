"""Fees booked the hotel's way, through the batch path: the demo world's night with one property whose PMS
books gross (``fee_booking`` none or per_payout, its fee entries gone or one per payout) finds what the same
night finds with fees booked per movement (no charge's fee missing), looks no payout id up at the provider,
and reports the fees the provider took; the properties booking per movement reconcile exactly as before."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import select

from recon_pipeline.db.schema import adjustments, discrepancies
from recon_pipeline.properties import FEE_NONE, FEE_PER_PAYOUT
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.world import World
from recon_pipeline_tests.support.pipeline_fixtures import SeededPipeline, asset_metadata, seeded

GROSS = "lisbon-riverside"  # a property of the shared platform: attribution stays in the path


def night_of(pipeline: SeededPipeline) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, Any]]:
    result = pipeline.materialize()
    assert result.success
    with pipeline.engine.connect() as connection:
        found = sorted(
            connection.execute(
                select(
                    discrepancies.c.property_id,
                    discrepancies.c.category,
                    discrepancies.c.record_key,
                    discrepancies.c.difference_minor,
                )
            ).tuples()
        )
        proposed = sorted(
            connection.execute(
                select(adjustments.c.property_id, adjustments.c.kind, adjustments.c.amount_minor)
            ).tuples()
        )
    return found, proposed, asset_metadata(result, "discrepancy_report")


def gross(mode: str) -> Callable[[World], None]:
    """The property's ledger without a fee per movement; per payout, one fee entry per (would-be) payout."""

    def edit(world: World) -> None:
        fees = [e for e in world.ledger_entries if e["property_id"] == GROSS and e["kind"] == "fee"]
        world.ledger_entries[:] = [e for e in world.ledger_entries if e not in fees]
        if mode == FEE_PER_PAYOUT and fees:
            world.ledger_entries.append(
                {
                    **fees[0],
                    "entry_id": "le_po_fee",
                    "provider_record_id": "po_lisbon_1",
                    "amount_minor": -999,
                }
            )

    return edit


@pytest.mark.parametrize("mode", [FEE_NONE, FEE_PER_PAYOUT])
def test_a_gross_ledger_finds_what_a_per_movement_one_does_less_the_fees(sqlite_url: str, mode: str) -> None:
    rows = DEMO_PROPERTIES  # the Stripe demo's keyed properties
    with seeded(sqlite_url, properties=rows) as today:
        before, proposed_before, report_before = night_of(today)
    booking = tuple(replace(row, fee_booking=mode) if row.property_id == GROSS else row for row in rows)
    with seeded(
        sqlite_url.replace(".sqlite", "_gross.sqlite"), properties=booking, edit=gross(mode)
    ) as hotel:
        stats_before = hotel.stats()
        after, proposed_after, report_after = night_of(hotel)
        requests = hotel.stats()
    # what the night finds with the fees booked per movement, less fee findings (the demo plants none
    # there): no charge of the gross ledger is a fee missing in the ledger
    assert after == [f for f in before if not (f[0] == GROSS and f[2].endswith(":fee"))]
    assert [p for p in proposed_after if p[0] != GROSS] == [p for p in proposed_before if p[0] != GROSS]
    assert not any(kind.endswith("_fee") for prop, kind, _ in proposed_after if prop == GROSS)
    assert report_after["fees_taken"] > 0 and "fees_taken" not in report_before
    assert str(report_after["fees_taken/EUR"]).endswith(" EUR")
    assert "Fees the provider took (not booked per movement)" in str(report_after["totals"])
    assert report_after["looked_up_by_id"] <= report_before["looked_up_by_id"]  # no payout id looked up
    assert "po_lisbon_1" not in str(requests) and stats_before is not None
