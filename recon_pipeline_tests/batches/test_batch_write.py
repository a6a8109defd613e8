"""The batch's write (``batches/write.py::write``): every table's rows of the batch's property-nights in
set-based statements in one transaction. It stores exactly what the same property-nights written one by one
store, through a night's lifecycle (findings cleared and re-opened, proposals withdrawn, superseded and
topped up after an approval); a re-run with no change modifies no row; and a property-night whose rows the
database refuses fails alone, the rest of the batch committed. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, Table, delete, select, text, update

from recon_pipeline.batches.work import DEFAULT_CHUNK_SIZE, BatchRequest, BatchResult, reconcile_batch
from recon_pipeline.db.schema import (
    adjustments,
    discrepancies,
    discrepancy_reviews,
    ledger_entries,
    matches,
    night_takings,
    provider_records,
)
from recon_pipeline.db.types import UtcDateTime
from recon_pipeline.simulation.demo.fleet import FLEET_ZONES, fleet_properties
from recon_pipeline.simulation.demo.properties import demo_properties
from recon_pipeline.storage.night_outcomes import FAILED, SUCCEEDED
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, seeded
from recon_pipeline_tests.support.postgres import postgres_database

# The keyed properties and the hotel-style ones, whose ledger the matcher pairs (matches are stored).
PROPERTIES = demo_properties("stripe")
WRITTEN = (discrepancies, discrepancy_reviews, adjustments, matches, provider_records, night_takings)
# What differs between two databases written by different runs at other moments: the surrogate ids the
# database numbers, the runs, and the times.
VOLATILE = {"discrepancy_id", "review_id", "match_id", "run_id", "cleared_run_id"}


@pytest.fixture
def twin_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    """A second database of ``database_url``'s dialect."""
    if database_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'twin.sqlite'}"
        return
    with postgres_database() as url:
        yield url


def contents(engine: Engine, *, stable: bool = False, seen: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables the write step writes, sorted; ``stable``: without the ids, runs and times
    that two separate runs cannot share (``VOLATILE`` and every timestamp); ``seen=False``: without when
    and by which run the provider's records were last seen, which every run stamps
    (``storage/provider_records.py``)."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as connection:
        for table in WRITTEN:
            columns = [
                c
                for c in table.columns
                if not (stable and _volatile(c.name, table))
                and not (not seen and table is provider_records and c.name in ("seen_at", "run_id"))
            ]
            rows = connection.execute(select(*columns)).all()
            found[table.name] = sorted((tuple(row) for row in rows), key=repr)
    return found


def _volatile(name: str, table: Table) -> bool:
    return name in VOLATILE or isinstance(table.c[name].type, UtcDateTime)


def run(
    pipeline: SeededPipeline,
    batches: list[tuple[str, ...]],
    run_id: str,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> list[BatchResult]:
    client = pipeline.resources["provider"].adapter()
    return [
        reconcile_batch(
            pipeline.engine, client, BatchRequest(NIGHT.isoformat(), batch, chunk_size=chunk_size), run_id
        )
        for batch in batches
    ]


def succeeded(results: list[BatchResult]) -> None:
    outcomes = [o for result in results for o in result.outcomes]
    assert outcomes and {o.status for o in outcomes} == {SUCCEEDED}, [o.error for o in outcomes]


def the_pms_moves_on(engine: Engine) -> None:
    """The same changes in either database, chosen by key: per property, one payment's amount changed and
    another's entry deleted (new findings), a wrong amount corrected (its finding clears, its proposal is
    withdrawn), a proposal approved (the next need proposes the
    remainder) and a finding acknowledged at a difference it will no longer have (it re-opens)."""
    with engine.begin() as connection:
        for property_id in connection.execute(select(ledger_entries.c.property_id).distinct()).scalars():
            entries = (
                connection.execute(
                    select(ledger_entries.c.entry_id)
                    .where(ledger_entries.c.property_id == property_id, ledger_entries.c.kind == "payment")
                    .order_by(ledger_entries.c.entry_id)
                    .limit(2)
                )
                .scalars()
                .all()
            )
            connection.execute(
                update(ledger_entries)
                .where(ledger_entries.c.entry_id == entries[0])
                .values(amount_minor=ledger_entries.c.amount_minor + 700)
            )
            connection.execute(delete(ledger_entries).where(ledger_entries.c.entry_id == entries[1]))
            wrong = connection.execute(
                select(discrepancies.c.ledger_entry_id, discrepancies.c.provider_amount_minor)
                .where(
                    discrepancies.c.property_id == property_id,
                    discrepancies.c.category == "amount_mismatch",
                    discrepancies.c.cleared_at.is_(None),
                    discrepancies.c.ledger_entry_id.not_in(entries),
                )
                .order_by(discrepancies.c.record_key)
                .limit(1)
            ).first()
            if wrong is not None:
                connection.execute(
                    update(ledger_entries)
                    .where(ledger_entries.c.entry_id == wrong.ledger_entry_id)
                    .values(amount_minor=wrong.provider_amount_minor)
                )
            proposal = connection.execute(
                select(adjustments.c.adjustment_id, adjustments.c.amount_minor)
                .where(adjustments.c.property_id == property_id, adjustments.c.status == "proposed")
                .order_by(adjustments.c.idempotency_key.desc())
                .limit(1)
            ).first()
            if proposal is not None:
                connection.execute(
                    update(adjustments)
                    .where(adjustments.c.adjustment_id == proposal.adjustment_id)
                    .values(status="approved", amount_minor=proposal.amount_minor // 2)
                )
            connection.execute(
                update(discrepancies)
                .where(
                    discrepancies.c.property_id == property_id,
                    discrepancies.c.discrepancy_id
                    == select(discrepancies.c.discrepancy_id)
                    .where(discrepancies.c.property_id == property_id, discrepancies.c.cleared_at.is_(None))
                    .order_by(discrepancies.c.category, discrepancies.c.record_key)
                    .limit(1)
                    .scalar_subquery(),
                )
                .values(review_status="acknowledged", reviewed_difference_minor=1)
            )


def written_alike(
    at_once: SeededPipeline,
    other: SeededPipeline,
    everyone: tuple[str, ...],
    chunk_size: int | None = None,
) -> None:
    """Two runs, the PMS moving on between: every property in one batch in ``at_once``; in ``other`` one
    property per batch, or with ``chunk_size`` one batch computed in chunks of that size; after each run,
    both databases hold the same rows."""
    for attempt in ("first", "after the PMS moved on"):
        succeeded(run(at_once, [everyone], f"at-once-{attempt}"))
        if chunk_size is None:
            succeeded(run(other, [(p,) for p in everyone], f"one-by-one-{attempt}"))
        else:
            succeeded(run(other, [everyone], f"in-chunks-{attempt}", chunk_size))
        assert contents(at_once.engine, stable=True) == contents(other.engine, stable=True), attempt
        the_pms_moves_on(at_once.engine)
        the_pms_moves_on(other.engine)


def test_a_batch_written_at_once_stores_what_its_property_nights_written_one_by_one_store(
    database_url: str, twin_url: str
) -> None:
    with (
        seeded(database_url, properties=PROPERTIES) as at_once,
        seeded(twin_url, properties=PROPERTIES) as one_by_one,
    ):
        everyone = tuple(p.property_id for p in at_once.properties)
        assert len(everyone) > 1
        written_alike(at_once, one_by_one, everyone)
        written = contents(at_once.engine)
        # The lifecycle was exercised: cleared and re-opened findings, withdrawn or superseded proposals,
        # an approval's remainder.
        assert any(row[discrepancies.c.keys().index("cleared_at")] for row in written["discrepancies"])
        assert written["discrepancy_reviews"]
        statuses = {row[adjustments.c.keys().index("status")] for row in written["adjustments"]}
        assert {"approved", "proposed"} <= statuses and statuses & {"withdrawn", "superseded"}
        assert written["matches"] and written["provider_records"] and written["night_takings"]


def test_a_fleet_batch_written_at_once_stores_what_its_property_nights_written_one_by_one_store(
    database_url: str, twin_url: str
) -> None:
    """The fleet's shape (eight timezones, so eight night windows; a quarter of the properties on the
    platform account, attributed by metadata; every category planted): one batch at once against one
    property per batch, twice, the PMS moving on between."""
    fleet = fleet_properties(16)
    assert {p.timezone for p in fleet} == {zone for zone, _ in FLEET_ZONES}
    assert any(p.provider_account is None for p in fleet) and any(p.provider_account for p in fleet)
    with seeded(database_url, properties=fleet) as at_once, seeded(twin_url, properties=fleet) as one_by_one:
        everyone = tuple(p.property_id for p in fleet)
        written_alike(at_once, one_by_one, everyone)
        written = contents(at_once.engine)
        assert {row[discrepancies.c.keys().index("property_id")] for row in written["discrepancies"]} == set(
            everyone
        )


def test_a_fleet_batch_computed_in_chunks_while_the_next_is_pulled_stores_what_it_stores_at_once(
    database_url: str, twin_url: str
) -> None:
    """The fleet's batch in chunks of 3 property-nights (each pulled while the one before is computed, a
    shared account's pull never cut: the platform's properties of one window are one chunk however many)
    stores exactly what the batch computed at once stores, twice, the PMS moving on between."""
    fleet = fleet_properties(16)
    everyone = tuple(p.property_id for p in fleet)
    with seeded(database_url, properties=fleet) as at_once, seeded(twin_url, properties=fleet) as chunked:
        written_alike(at_once, chunked, everyone, chunk_size=3)


def test_a_rerun_of_the_batch_with_no_change_modifies_no_row(database_url: str) -> None:
    with seeded(database_url, properties=PROPERTIES) as pipeline:
        everyone = tuple(p.property_id for p in pipeline.properties)
        succeeded(run(pipeline, [everyone], "first"))
        the_pms_moves_on(pipeline.engine)
        succeeded(run(pipeline, [everyone], "second"))
        before = contents(pipeline.engine, seen=False)
        [again] = run(pipeline, [everyone], "third")
        succeeded([again])
        assert contents(pipeline.engine, seen=False) == before
        for result in again.results:
            assert result.findings["new"] == result.findings["cleared"] == result.findings["reopened"] == 0
            assert result.adjustments["new"] == result.adjustments["withdrawn"] == 0
            assert result.matches_saved["new"] == result.matches_saved["updated"] == 0


REFUSE = {
    "sqlite": [
        "CREATE TRIGGER refuse_finding BEFORE INSERT ON discrepancies WHEN NEW.property_id = :refused "
        "BEGIN SELECT RAISE(ABORT, 'finding refused'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse_finding() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'finding refused'; END $$",
        "CREATE TRIGGER refuse_finding BEFORE INSERT ON discrepancies FOR EACH ROW "
        "WHEN (NEW.property_id = :refused) EXECUTE FUNCTION refuse_finding()",
    ],
}


def test_a_property_night_whose_rows_the_database_refuses_fails_alone_and_the_rest_commit(
    database_url: str,
) -> None:
    with seeded(database_url, properties=PROPERTIES) as pipeline:
        everyone = tuple(p.property_id for p in pipeline.properties)
        refused = everyone[1]
        with pipeline.engine.begin() as connection:
            for statement in REFUSE[connection.dialect.name]:
                # a trigger's body takes no parameters: the property is written into it
                connection.execute(text(statement.replace(":refused", f"'{refused}'")))
        [batch] = run(pipeline, [everyone], "refusing")
        status = {o.property_id: o for o in batch.outcomes}
        assert {p: o.status for p, o in status.items()} == {
            p: FAILED if p == refused else SUCCEEDED for p in everyone
        }
        error = status[refused].error or ""
        assert "finding refused" in error and refused in error and "\n" not in error
        assert sorted(r.property_row.property_id for r in batch.results) == sorted(set(everyone) - {refused})
        with pipeline.engine.connect() as connection:
            for table in WRITTEN:
                owners = set(connection.execute(select(table.c.property_id).distinct()).scalars())
                assert refused not in owners, table.name
        for property_id in set(everyone) - {refused}:
            assert pipeline.found(property_id) == pipeline.planted(property_id)
