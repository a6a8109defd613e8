"""Upgrades of older databases and the idempotent writers, on a real SQLite file and a real PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import MetaData, Table, inspect, select

from recon_pipeline.categories import RECONCILIATION_CATEGORIES
from recon_pipeline.db import migrations
from recon_pipeline.db.bulk import BULK_MIN_ROWS, supports_copy
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments, discrepancies, ledger_entries, metadata
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.storage.adjustments import sync_adjustments, write_adjustments
from recon_pipeline.storage.findings import save_findings
from recon_pipeline_tests.support.finding_rows import FINDINGS, NOW, finding


def test_init_upgrades_an_older_database_in_place(database_url: str) -> None:
    """A database made by an earlier release (discrepancies without the review columns and the review
    index) gets them added, and its rows survive with the new columns empty or defaulted."""
    engine = make_engine(database_url)
    added = {"reviewed_by", "reviewed_at", "review_note", "reviewed_difference_minor", "review_status"}
    older = MetaData()
    old_columns = [column.copy() for column in discrepancies.columns if column.name not in added]
    old_table = Table("discrepancies", older, *old_columns)
    older.create_all(engine)
    row = finding("missing_in_ledger", "ch_1:payment", 1000, provider_record_id="ch_1")
    with engine.begin() as connection:
        connection.execute(
            old_table.insert(),
            {**row, "property_id": "p1", "night": "2026-12-01", "detected_at": NOW},
        )
    assert migrations.upgrade(engine) == migrations.Upgrade(None, migrations.head())
    inspector = inspect(engine)
    assert set(metadata.tables) <= set(inspector.get_table_names())
    assert added <= {c["name"] for c in inspector.get_columns("discrepancies")}
    indexes = {index["name"] for index in inspector.get_indexes("discrepancies")}
    assert {index.name for index in discrepancies.indexes} <= indexes
    with engine.connect() as connection:
        upgraded = connection.execute(select(discrepancies)).mappings().one()
    assert upgraded["record_key"] == "ch_1:payment" and upgraded["review_status"] == "open"
    assert upgraded["reviewed_by"] is None and upgraded["reviewed_difference_minor"] is None
    assert not migrations.upgrade(engine).changed
    engine.dispose()


def test_init_upgrades_adjustments_of_an_older_release_and_the_lifecycle_continues_them(
    database_url: str,
) -> None:
    """Adjustments written before the lifecycle (no revision, finding link or cleared_at) get the new
    columns, revision 1; a re-run with no change leaves such a row as it is, a changed amount supersedes
    it with revision 2."""
    engine = make_engine(database_url)
    added = {"category", "record_key", "revision", "updated_at", "superseded_by"}
    older = MetaData()
    Table("adjustments", older, *(c.copy() for c in adjustments.columns if c.name not in added))
    Table("discrepancies", older, *(c.copy() for c in discrepancies.columns if c.name != "cleared_at"))
    older.create_all(engine)
    [old] = plan_adjustments("p1", "2026-11-30", FINDINGS.iloc[:1], "run-old", NOW)
    with engine.begin() as connection:
        connection.execute(older.tables["adjustments"].insert(), {k: old[k] for k in old if k not in added})
    migrations.upgrade(engine)
    assert "cleared_at" in {c["name"] for c in inspect(engine).get_columns("discrepancies")}
    with engine.connect() as connection:
        [upgraded] = connection.execute(select(adjustments)).mappings().all()
    assert (upgraded["revision"], upgraded["category"], upgraded["status"]) == (1, None, "proposed")

    again = plan_adjustments("p1", "2026-11-30", FINDINGS.iloc[:1], "run-new", NOW + timedelta(hours=1))
    with engine.begin() as connection:
        assert sync_adjustments(connection, "p1", "2026-11-30", again, NOW).unchanged == 1
        assert dict(connection.execute(select(adjustments)).mappings().one()) == dict(upgraded)
    changed = [{**again[0], "amount_minor": 1200}]
    with engine.begin() as connection:
        plan = sync_adjustments(connection, "p1", "2026-11-30", changed, NOW + timedelta(hours=2))
        rows = connection.execute(select(adjustments).order_by(adjustments.c.revision)).mappings().all()
    assert (plan.new, plan.count("superseded")) == (1, 1)
    assert [(r["idempotency_key"], r["status"], r["amount_minor"]) for r in rows] == [
        (old["idempotency_key"], "superseded", 1000),
        (old["idempotency_key"] + "#2", "proposed", 1200),
    ]
    engine.dispose()


def test_timestamps_round_trip_as_aware_utc(database_url: str) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    posted = datetime(2026, 3, 29, 1, 30, tzinfo=timezone(timedelta(hours=1)))
    with engine.begin() as connection:
        connection.execute(
            ledger_entries.insert(),
            [
                {
                    "entry_id": "le_1",
                    "property_id": "p1",
                    "kind": "payment",
                    "amount_minor": 5,
                    "currency": "EUR",
                    "posted_at": posted,
                }
            ],
        )
        stored = connection.execute(select(ledger_entries.c.posted_at)).scalar_one()
    assert stored == posted and stored.utcoffset() == timedelta(0)


def test_naive_timestamps_are_refused(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    with pytest.raises(Exception, match="timezone-aware"), engine.begin() as connection:
        connection.execute(
            ledger_entries.insert(),
            [
                {
                    "entry_id": "le_1",
                    "property_id": "p1",
                    "kind": "payment",
                    "amount_minor": 5,
                    "currency": "EUR",
                    "posted_at": datetime(2026, 1, 1),
                }
            ],
        )


def test_adjustments_are_written_once_per_business_key(database_url: str) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    first = plan_adjustments("p1", "2026-11-30", FINDINGS, "run-a", NOW)
    replay = plan_adjustments("p1", "2026-11-30", FINDINGS, "run-b", NOW + timedelta(hours=1))
    assert [r["kind"] for r in first] == [
        "post_missing_payment",
        "reverse_unmatched_payment",
        "correct_amount_payment",
    ]
    assert [r["amount_minor"] for r in first] == [1000, -700, 50]
    with engine.begin() as connection:
        assert write_adjustments(connection, first).new == 3
    with engine.begin() as connection:
        counts = write_adjustments(connection, replay)
    assert (counts.new, counts.already_present) == (0, 3)
    with engine.connect() as connection:
        rows = connection.execute(select(adjustments.c.run_id, adjustments.c.idempotency_key)).all()
    assert {run for run, _ in rows} == {"run-a"}
    assert sorted(key for _, key in rows) == sorted(r["idempotency_key"] for r in first)


def test_a_large_batch_is_written_once_with_every_value_intact(database_url: str) -> None:
    """Batches of BULK_MIN_ROWS and more go through COPY on PostgreSQL (db/bulk.py): the same rows as the
    plain INSERT path, awkward text kept byte for byte, a replay inserting nothing, naive times refused."""
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    awkward = ["", 'say "hi", ok', "line\nbreak\ttab", "back\\slash", "¥ € ₹ 日本", "NULL", "\\N"]
    rows = [
        {
            "adjustment_id": f"adj_{i}",
            "idempotency_key": f"p1/2026-11-30/post_missing_payment/ch_{i}",
            "property_id": "p1",
            "night": "2026-11-30",
            "kind": "post_missing_payment",
            "provider_record_id": f"ch_{i}",
            "ledger_entry_id": None,
            "amount_minor": i - 300,
            "currency": "JPY",
            "reason": awkward[i % len(awkward)],
            "status": "proposed",
            "created_at": NOW + timedelta(microseconds=i),
            "run_id": "run-a",
            **{"category": None, "record_key": None, "revision": 1},
            **{"updated_at": None, "superseded_by": None},
        }
        for i in range(BULK_MIN_ROWS + 100)
    ]
    with engine.begin() as connection:
        assert supports_copy(connection) == (engine.dialect.name == "postgresql")  # psycopg 3's COPY
        assert write_adjustments(connection, rows + rows[:10]).new == len(rows)  # in-batch repeats too
    with engine.begin() as connection:
        assert write_adjustments(connection, rows).already_present == len(rows)
    with engine.connect() as connection:
        stored = {r["adjustment_id"]: dict(r) for r in connection.execute(select(adjustments)).mappings()}
    assert stored == {row["adjustment_id"]: row for row in rows}
    naive = [
        {**row, "idempotency_key": f"{row['idempotency_key']}/x", "adjustment_id": f"{row['adjustment_id']}x"}
        for row in rows
    ]
    naive[-1]["created_at"] = datetime(2026, 1, 1)
    with pytest.raises(Exception, match="timezone-aware"), engine.begin() as connection:
        write_adjustments(connection, naive)
    engine.dispose()


def test_findings_upsert_leaves_a_rerun_identical(database_url: str) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        counts = save_findings(connection, "p1", "2026-11-30", FINDINGS, "run-a", NOW)
    assert (counts.new, counts.already_present, counts.cleared) == (4, 0, 0)
    snapshot = _finding_rows(engine)
    with engine.begin() as connection:
        counts = save_findings(
            connection, "p1", "2026-11-30", FINDINGS, "run-b", NOW + timedelta(hours=2)
        )
    assert (counts.new, counts.already_present, counts.cleared) == (0, 4, 0)
    assert _finding_rows(engine) == snapshot


@pytest.mark.parametrize("scope", [None, RECONCILIATION_CATEGORIES], ids=["every-category", "scoped"])
def test_findings_no_longer_seen_are_cleared_not_deleted_and_outstanding_again_when_seen_again(
    database_url: str, scope: tuple[str, ...] | None
) -> None:
    """The same whether the writer owns every category or, as the nightly reconciliation, only its own
    (the payouts asset owns the rest): several stale findings are cleared in one statement either way."""
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    later, latest = NOW + timedelta(hours=1), NOW + timedelta(hours=2)

    def cleared_at() -> dict[str, datetime | None]:
        with engine.connect() as connection:
            rows = connection.execute(
                select(discrepancies.c.record_key, discrepancies.c.cleared_at).where(
                    discrepancies.c.night == "2026-11-30"
                )
            )
            return dict(rows.tuples().all())

    with engine.begin() as connection:
        save_findings(connection, "p1", "2026-11-30", FINDINGS, "run-a", NOW, scope)
        connection.execute(
            discrepancies.update()
            .where(discrepancies.c.record_key == "ch_9:payment")
            .values(review_status="acknowledged")
        )
    with engine.begin() as connection:
        counts = save_findings(connection, "p1", "2026-11-30", FINDINGS.iloc[:1], "run-b", later, scope)
    stale = ["ch_2:payment", "ch_3:payment", "ch_9:payment"]  # reviewed or not, each stays, cleared
    assert counts.cleared == 3
    assert cleared_at() == {"ch_1:payment": None, **dict.fromkeys(stale, later)}
    with engine.begin() as connection:  # no change: nothing cleared again, the first clearing time kept
        again = save_findings(connection, "p1", "2026-11-30", FINDINGS.iloc[:1], "run-c", latest, scope)
    assert again.cleared == 0
    assert cleared_at() == {"ch_1:payment": None, **dict.fromkeys(stale, later)}
    with engine.begin() as connection:  # seen again: outstanding again, its review kept
        save_findings(connection, "p1", "2026-11-30", FINDINGS, "run-d", latest, scope)
        status = connection.execute(
            select(discrepancies.c.review_status).where(discrepancies.c.record_key == "ch_9:payment")
        ).scalar_one()
    assert cleared_at() == dict.fromkeys(["ch_1:payment", *stale])
    assert status == "acknowledged"


def _finding_rows(engine) -> list[tuple]:  # type: ignore[no-untyped-def]
    with engine.connect() as connection:
        return [
            tuple(row)
            for row in connection.execute(select(discrepancies).order_by(discrepancies.c.record_key))
        ]
