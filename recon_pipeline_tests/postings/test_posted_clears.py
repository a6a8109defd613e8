"""Issue 15, "after posting, the next reconciliation of that night clears the finding": through Dagster's
own ``materialize`` of the night on SQLite and PostgreSQL, approved adjustments are posted to the PMS by
the real outbox drain and ``sql`` adapter (entries of kind ``adjustment`` booked days after the night),
and the next run of the night clears their findings, proposes nothing new, and a run after it modifies
no row."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from recon_pipeline.db.schema import adjustments, discrepancies, ledger_entries
from recon_pipeline.nights import night_window
from recon_pipeline.postings.drain import drain
from recon_pipeline.postings.outbox import PostingPolicy
from recon_pipeline.postings.sql_adapter import ADJUSTMENT_KIND, SqlPostingAdapter, entry_id_for
from recon_pipeline.review.adjustments import APPROVE, review_adjustment
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, asset_metadata

LISBON = "lisbon-riverside"
CORRECTED = ("missing_in_ledger", "amount_mismatch", "duplicate_in_ledger")


def run(pipeline: SeededPipeline) -> dict[str, Any]:
    """Materialize Lisbon's night; the adjustments asset's metadata."""
    result = pipeline.materialize(LISBON)
    assert result.success
    return asset_metadata(result, "adjustments")


def proposal_of(pipeline: SeededPipeline, category: str) -> dict[str, Any]:
    """Lisbon's first proposed adjustment for a payment finding of ``category``."""
    with pipeline.engine.connect() as connection:
        query = (
            select(adjustments)
            .where(
                adjustments.c.property_id == LISBON,
                adjustments.c.category == category,
                adjustments.c.kind.like("%_payment"),
                adjustments.c.status == "proposed",
            )
            .order_by(adjustments.c.record_key)
        )
        row = connection.execute(query).mappings().first()
    assert row is not None, f"the seeded night has no {category} finding on a payment"
    return dict(row)


def finding_of(pipeline: SeededPipeline, adjustment: dict[str, Any]) -> dict[str, Any]:
    with pipeline.engine.connect() as connection:
        query = select(discrepancies).where(
            discrepancies.c.property_id == LISBON,
            discrepancies.c.category == adjustment["category"],
            discrepancies.c.record_key == adjustment["record_key"],
        )
        return dict(connection.execute(query).mappings().one())


def test_posted_adjustments_clear_their_findings_on_the_next_run(
    seeded_pipeline: SeededPipeline,
) -> None:
    pipeline = seeded_pipeline
    lisbon = next(p for p in pipeline.properties if p.property_id == LISBON)
    window = night_window(NIGHT, lisbon.timezone, lisbon.night_cutoff)
    first = run(pipeline)
    assert first["new"] > 0
    chosen = {category: proposal_of(pipeline, category) for category in CORRECTED}
    assert all(finding_of(pipeline, row)["cleared_at"] is None for row in chosen.values())

    approved_at = datetime.now(UTC)
    for row in chosen.values():
        with pipeline.engine.begin() as connection:
            review_adjustment(
                connection, row["adjustment_id"], APPROVE, "ana", "checked", row["amount_minor"], approved_at
            )
    # The PMS books the corrections four days after the night: outside the night's window and margin.
    posted_at = window.end + timedelta(days=4)
    adapter = SqlPostingAdapter(pipeline.engine, clock=lambda: posted_at)
    counts = drain(
        pipeline.engine,
        adapter,
        "poster-1",
        policy=PostingPolicy(max_attempts=3, lease=timedelta(minutes=5)),
        rng=random.Random(7),
    )
    assert counts.by_state == {"posted": len(CORRECTED)}
    with pipeline.engine.connect() as connection:
        booked = connection.execute(
            select(ledger_entries.c.entry_id, ledger_entries.c.kind, ledger_entries.c.amount_minor).where(
                ledger_entries.c.kind == ADJUSTMENT_KIND
            )
        ).all()
    assert sorted(booked) == sorted(
        (entry_id_for(row["idempotency_key"]), ADJUSTMENT_KIND, row["amount_minor"])
        for row in chosen.values()
    )

    second = run(pipeline)
    assert (second["new"], second["superseded"], second["remainder"]) == (0, 0, 0)
    for category, row in chosen.items():
        cleared = finding_of(pipeline, row)
        assert cleared["cleared_at"] is not None, category
        with pipeline.engine.connect() as connection:
            rows = connection.execute(
                select(adjustments.c.adjustment_id, adjustments.c.status).where(
                    adjustments.c.category == category, adjustments.c.record_key == row["record_key"]
                )
            ).all()
        assert rows == [(row["adjustment_id"], "posted")], category  # posted, and nothing new proposed

    before = (pipeline.table(adjustments), pipeline.table(discrepancies))
    quiet = run(pipeline)
    assert (quiet["new"], quiet["withdrawn"], quiet["superseded"], quiet["remainder"]) == (0, 0, 0, 0)
    assert (pipeline.table(adjustments), pipeline.table(discrepancies)) == before
