"""Acceptance of issue 11, bullet 1: findings and adjustments follow the ledger, run after run, through
Dagster's own `materialize` of the assets on SQLite and PostgreSQL, and reviewed with `recon adjustments`.

The sequence: run; book a missing payment in the PMS → finding cleared, proposal withdrawn; change a
ledger amount → proposal superseded by a new one; approve it; change the amount again → the approved row
untouched, the remainder proposed; un-book the payment → the finding outstanding again; a re-run with no
change → no row of either table modified, timestamps and run ids included.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import delete, select, update

from recon_pipeline import cli
from recon_pipeline.db.schema import adjustment_reviews, adjustments, discrepancies, ledger_entries
from recon_pipeline.money import format_minor
from recon_pipeline.nights import night_window
from recon_pipeline.reports.queries import unresolved_findings
from recon_pipeline.review.adjustments import adjustment_states
from recon_pipeline.review.render import money
from recon_pipeline.storage.findings import unexplained_amounts
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, asset_metadata

LISBON = "lisbon-riverside"  # EUR


def finding(pipeline: SeededPipeline, category: str, record_key: str) -> dict[str, Any]:
    with pipeline.engine.connect() as connection:
        query = select(discrepancies).where(
            discrepancies.c.property_id == LISBON,
            discrepancies.c.category == category,
            discrepancies.c.record_key == record_key,
        )
        return dict(connection.execute(query).mappings().one())


def proposals_of(pipeline: SeededPipeline, category: str, record_key: str) -> list[dict[str, Any]]:
    """The finding's adjustment rows, oldest revision first."""
    with pipeline.engine.connect() as connection:
        query = (
            select(adjustments)
            .where(adjustments.c.category == category, adjustments.c.record_key == record_key)
            .order_by(adjustments.c.revision)
        )
        return [dict(row) for row in connection.execute(query).mappings()]


def statuses(rows: list[dict[str, Any]]) -> list[tuple[int, str, int]]:
    return [(row["revision"], row["status"], row["amount_minor"]) for row in rows]


def run(pipeline: SeededPipeline) -> dict[str, Any]:
    """Materialize Lisbon's night; the adjustments asset's metadata."""
    result = pipeline.materialize(LISBON)
    assert result.success
    metadata = asset_metadata(result, "adjustments")
    assert metadata["properties"] == 1  # a batch of Lisbon alone
    return metadata


def first_of(pipeline: SeededPipeline, category: str) -> dict[str, Any]:
    with pipeline.engine.connect() as connection:
        query = (
            select(discrepancies)
            .where(
                discrepancies.c.property_id == LISBON,
                discrepancies.c.category == category,
                discrepancies.c.record_key.like("%:payment"),
            )
            .order_by(discrepancies.c.record_key)
        )
        return dict(connection.execute(query).mappings().first() or {})


def test_adjustments_follow_the_ledger_through_reruns_and_reviews(
    seeded_pipeline: SeededPipeline,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pipeline = seeded_pipeline
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    lisbon = next(p for p in pipeline.properties if p.property_id == LISBON)
    in_night = night_window(NIGHT, lisbon.timezone, lisbon.night_cutoff).start + timedelta(hours=3)

    first = run(pipeline)
    assert first["new"] == first["proposed"] > 0 and first["unchanged"] == 0
    missing = first_of(pipeline, "missing_in_ledger")
    mismatch = first_of(pipeline, "amount_mismatch")
    missing_key, mismatch_key = missing["record_key"], mismatch["record_key"]
    assert statuses(proposals_of(pipeline, "missing_in_ledger", missing_key)) == [
        (1, "proposed", missing["provider_amount_minor"])
    ]
    needed = mismatch["difference_minor"]
    with pipeline.engine.connect() as connection:
        unexplained_before = unexplained_amounts(connection, LISBON, NIGHT.isoformat())
    assert statuses(proposals_of(pipeline, "amount_mismatch", mismatch_key)) == [(1, "proposed", needed)]

    # The PMS books the missing payment: the finding is cleared (the row stays), its proposal withdrawn.
    booked = {
        "entry_id": "le_booked_late",
        "property_id": LISBON,
        "booking_id": missing["booking_id"],
        "provider_record_id": missing["provider_record_id"],
        "kind": "payment",
        "amount_minor": missing["provider_amount_minor"],
        "currency": missing["currency"],
        "posted_at": in_night,
    }
    with pipeline.engine.begin() as connection:
        connection.execute(ledger_entries.insert().values(**booked))
    booked_run = run(pipeline)
    assert (booked_run["withdrawn"], booked_run["new"], booked_run["superseded"]) == (1, 0, 0)
    cleared = finding(pipeline, "missing_in_ledger", missing_key)
    assert cleared["cleared_at"] is not None
    # the run that cleared it is kept (the finding's run_id stays the one that last detected it)
    assert cleared["cleared_run_id"] is not None and cleared["cleared_run_id"] != cleared["run_id"]
    [withdrawn] = proposals_of(pipeline, "missing_in_ledger", missing_key)
    assert (withdrawn["status"], withdrawn["updated_at"] is not None) == ("withdrawn", True)
    # A cleared finding is not outstanding: the blocking check's sum and the overview leave it out.
    with pipeline.engine.connect() as connection:
        unexplained = unexplained_amounts(connection, LISBON, NIGHT.isoformat())
        overview = unresolved_findings(connection)
    currency = missing["currency"]
    assert unexplained[currency] == unexplained_before[currency] - abs(missing["difference_minor"])
    assert len(overview) == len(pipeline.table(discrepancies)) - 1
    assert cli.main(["findings", "list", "--category", "missing_in_ledger", "--limit", "500"]) == 0
    assert f"{missing_key}" in (listed := capsys.readouterr().out) and "open, cleared" in listed

    # The ledger amount of the mismatch changes: the proposal is superseded by one for the new need.
    def set_ledger_amount(amount: int) -> None:
        with pipeline.engine.begin() as connection:
            connection.execute(
                update(ledger_entries)
                .where(ledger_entries.c.entry_id == mismatch["ledger_entry_id"])
                .values(amount_minor=amount)
            )

    ledger_amount = mismatch["ledger_amount_minor"]
    set_ledger_amount(ledger_amount - 50)
    changed = run(pipeline)
    assert (changed["superseded"], changed["new"], changed["remainder"]) == (1, 1, 0)
    rows = proposals_of(pipeline, "amount_mismatch", mismatch_key)
    assert statuses(rows) == [(1, "superseded", needed), (2, "proposed", needed + 50)]
    assert rows[0]["superseded_by"] == rows[1]["adjustment_id"]
    assert rows[1]["idempotency_key"] == rows[0]["idempotency_key"] + "#2"

    # Approve it, naming the amount seen; a stale amount is refused, and so is a row no longer proposed.
    approved_id = rows[1]["adjustment_id"]
    stale = [
        "adjustments",
        "approve",
        approved_id,
        "--by",
        "ana",
        "--note",
        "ok",
        "--amount-seen",
        str(needed),
    ]
    assert cli.main(stale) == 2
    refusal = f"now proposes {money(needed + 50, 'EUR')}, not the {money(needed, 'EUR')} you saw"
    assert refusal in capsys.readouterr().err
    seen = str(needed + 50)
    approve = [
        "adjustments",
        "approve",
        approved_id,
        "--by",
        "ana",
        "--note",
        "checked",
        "--amount-seen",
        seen,
    ]
    assert cli.main(approve) == 0
    assert "proposed -> approved by ana" in capsys.readouterr().out
    assert cli.main([*approve[:2], rows[0]["adjustment_id"], "--by", "ana", "--note", "x"]) == 2
    assert "is superseded; only a proposed one can be approved" in capsys.readouterr().err
    approved = proposals_of(pipeline, "amount_mismatch", mismatch_key)[1]
    with pipeline.engine.connect() as connection:
        audit = connection.execute(select(adjustment_reviews)).mappings().all()
    assert [
        (a["adjustment_id"], a["action"], a["reviewed_by"], a["note"], a["amount_minor"]) for a in audit
    ] == [(approved_id, "approve", "ana", "checked", needed + 50)]
    assert cli.main(["adjustments", "show", approved_id]) == 0
    shown = capsys.readouterr().out
    assert re.search(r"^status +approved$", shown, re.MULTILINE)
    assert re.search(r"^  \S+ +approve +proposed -> approved +by ana +at .+ checked$", shown, re.MULTILINE)

    # The amount changes again: the approved row stays as approved, a new proposal carries the remainder.
    set_ledger_amount(ledger_amount - 80)
    again = run(pipeline)
    assert (again["new"], again["remainder"], again["superseded"], again["withdrawn"]) == (1, 1, 0, 0)
    rows = proposals_of(pipeline, "amount_mismatch", mismatch_key)
    assert rows[1] == approved  # every column, untouched
    assert statuses(rows)[2] == (3, "proposed", 30)
    assert sum(r["amount_minor"] for r in rows if r["status"] in ("approved", "proposed")) == needed + 80

    # The PMS removes the payment it booked: the finding is outstanding again and proposes anew.
    with pipeline.engine.begin() as connection:
        connection.execute(delete(ledger_entries).where(ledger_entries.c.entry_id == "le_booked_late"))
    run(pipeline)
    outstanding = finding(pipeline, "missing_in_ledger", missing_key)
    assert (outstanding["cleared_at"], outstanding["cleared_run_id"]) == (None, None)
    assert statuses(proposals_of(pipeline, "missing_in_ledger", missing_key)) == [
        (1, "withdrawn", missing["provider_amount_minor"]),
        (2, "proposed", missing["provider_amount_minor"]),
    ]

    # A re-run with no change modifies no row: every column, timestamps and run ids included.
    before = (pipeline.table(adjustments), pipeline.table(discrepancies))
    quiet = run(pipeline)
    assert (quiet["new"], quiet["withdrawn"], quiet["superseded"], quiet["remainder"]) == (0, 0, 0, 0)
    assert quiet["unchanged"] == sum(1 for row in before[0] if "proposed" in row)
    assert (pipeline.table(adjustments), pipeline.table(discrepancies)) == before

    # What the analyst sees: each finding's state in the list and in the report (rendered on demand from
    # the tables, through adjustment_states).
    assert cli.main(["adjustments", "list", "--property", LISBON, "--status", "approved"]) == 0
    out = capsys.readouterr().out
    assert approved_id in out and out.rstrip().endswith("1 of 1 matching")
    with pipeline.engine.connect() as connection:
        states = adjustment_states(connection, LISBON, NIGHT.isoformat(), format_minor)
    assert states[("missing_in_ledger", missing_key)].startswith("proposed ")
    assert states[("amount_mismatch", mismatch_key)].startswith("approved ")
    assert states[("amount_mismatch", mismatch_key)].endswith("; proposed 0.30 EUR")


def test_adjustment_commands_refuse_bad_input_in_one_line(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RECON_DATABASE_URL", sqlite_url)
    cli.main(["db", "init"])
    for argv, message in (
        (["adjustments", "show", "42"], "an adjustment id is 'adj_' and 24 hex digits"),
        (["adjustments", "show", "adj_" + "0" * 24], "no adjustment with id"),
        (["adjustments", "list", "--status", "done"], "unknown status 'done'"),
        (["adjustments", "list", "--night", "2026-13-01"], "not a calendar date"),
        (["adjustments", "approve", "adj_" + "0" * 24, "--by", "a", "--amount-seen", "1e3"], "--amount-seen"),
        (["adjustments", "reject", "adj_" + "0" * 24, "--by", "a"], "say why with --note"),
    ):
        capsys.readouterr()
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err and "Traceback" not in err, (argv, err)
