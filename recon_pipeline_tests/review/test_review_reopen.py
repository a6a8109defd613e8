"""Review status across re-runs: kept while the amount holds, re-opened (and audited) when it changes."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import Engine, select, text, update

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies, discrepancy_reviews, ledger_entries
from recon_pipeline.review.store import review
from recon_pipeline.storage.adjustments import WriteCounts
from recon_pipeline.storage.findings import save_findings
from recon_pipeline_tests.support.finding_rows import FINDINGS, NOW
from recon_pipeline_tests.support.pipeline_fixtures import SeededPipeline
from recon_pipeline_tests.support.review_commands import KYOTO, jpy, recon

WAIT_S = 20


def findings_by_key(engine: Engine) -> dict[str, dict[str, Any]]:
    with engine.connect() as connection:
        return {row["record_key"]: dict(row) for row in connection.execute(select(discrepancies)).mappings()}


def audit(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        query = select(discrepancy_reviews).order_by(discrepancy_reviews.c.review_id)
        return [dict(row) for row in connection.execute(query).mappings()]


def test_a_rerun_keeps_review_status_and_a_changed_amount_reopens(
    seeded_pipeline: SeededPipeline,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    engine = seeded_pipeline.engine
    assert seeded_pipeline.materialize(KYOTO).success
    found = findings_by_key(engine)
    resolved, acknowledged = sorted(
        (row for row in found.values() if row["category"] == "amount_mismatch"),
        key=lambda row: row["record_key"],
    )
    untouched = next(row for row in found.values() if row["category"] == "missing_in_ledger")
    for action, row in (("resolve", resolved), ("ack", acknowledged), ("resolve", untouched)):
        code, _, err = recon(
            capsys, "findings", action, str(row["discrepancy_id"]), "--by", "aiko", "--note", "checked"
        )
        assert (code, err) == (0, "")
    reviewed = seeded_pipeline.table(discrepancies)

    # Same amounts: the re-run leaves every row, status and review as it was.
    assert seeded_pipeline.materialize(KYOTO).success
    assert seeded_pipeline.table(discrepancies) == reviewed
    assert [event["action"] for event in audit(engine)] == ["resolve", "acknowledge", "resolve"]

    # The PMS changes both mismatched entries by 300 yen: both reviews were about another amount.
    with engine.begin() as connection:
        for row in (resolved, acknowledged):
            connection.execute(
                update(ledger_entries)
                .where(ledger_entries.c.entry_id == row["ledger_entry_id"])
                .values(amount_minor=ledger_entries.c.amount_minor - 300)
            )
    third = seeded_pipeline.materialize(KYOTO)
    assert third.success
    after = findings_by_key(engine)
    for before in (resolved, acknowledged):
        row = after[before["record_key"]]
        assert row["discrepancy_id"] == before["discrepancy_id"]
        assert row["difference_minor"] == before["difference_minor"] + 300
        assert row["review_status"] == "open"
        # The last human review stays readable: who looked, at which amount.
        assert (row["reviewed_by"], row["reviewed_difference_minor"]) == ("aiko", before["difference_minor"])
    assert after[untouched["record_key"]]["review_status"] == "resolved"
    reopened = sorted(audit(engine)[3:], key=lambda event: event["record_key"])
    assert [(e["record_key"], e["action"], e["previous_status"]) for e in reopened] == sorted(
        [
            (resolved["record_key"], "reopen", "resolved"),
            (acknowledged["record_key"], "reopen", "acknowledged"),
        ]
    )
    assert {(e["reviewed_by"], e["run_id"]) for e in reopened} == {("recon", third.run_id)}
    assert [e["difference_minor"] for e in reopened] == [
        after[e["record_key"]]["difference_minor"] for e in reopened
    ]

    code, out, _ = recon(capsys, "findings", "show", str(resolved["discrepancy_id"]))
    history = out.split("review history\n", 1)[1].splitlines()
    assert "resolved -> open  by recon" in history[-1]
    assert f"at {jpy(resolved['difference_minor'] + 300)}" in history[-1]
    assert third.run_id in history[-1]


@pytest.mark.postgres
def test_concurrent_identical_runs_reopen_once(postgres_url: str) -> None:
    """Two transactions save the same changed findings at once: one re-open, one audit row."""
    engine = make_engine(postgres_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        save_findings(connection, "p1", "2026-11-30", FINDINGS, "run-0", NOW)
        target = connection.execute(
            select(discrepancies.c.discrepancy_id).where(discrepancies.c.record_key == "ch_2:payment")
        ).scalar_one()
        review(connection, [target], "resolve", "ana", "fixed", NOW)
    changed = FINDINGS.assign(
        difference_minor=FINDINGS["difference_minor"].where(FINDINGS["record_key"] != "ch_2:payment", 80)
    )

    errors: list[BaseException] = []
    second: list[WriteCounts] = []
    second_started = threading.Event()

    def second_run() -> None:
        try:
            with engine.begin() as connection:
                second_started.set()
                second.append(save_findings(connection, "p1", "2026-11-30", changed, "run-2", NOW))
        except BaseException as error:  # reported to the main thread below
            errors.append(error)

    with engine.begin() as connection:
        first = save_findings(connection, "p1", "2026-11-30", changed, "run-1", NOW)
        worker = threading.Thread(target=second_run)
        worker.start()
        assert second_started.wait(WAIT_S)
        wait_until_blocked_on_a_lock(engine)  # the second run waits for this transaction's row locks
    worker.join(WAIT_S)
    assert not worker.is_alive() and errors == []
    assert (first.reopened, second[0].reopened) == (1, 0)

    row = findings_by_key(engine)["ch_2:payment"]
    assert (row["review_status"], row["difference_minor"], row["reviewed_difference_minor"]) == (
        "open",
        80,
        50,
    )
    events = audit(engine)
    assert [(e["action"], e["run_id"], e["difference_minor"]) for e in events] == [
        ("resolve", None, 50),
        ("reopen", "run-1", 80),
    ]


def wait_until_blocked_on_a_lock(engine: Engine) -> None:
    """Poll pg_stat_activity (bounded) until some other session of this database waits on a lock."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
    )
    deadline = time.monotonic() + WAIT_S
    with engine.connect() as connection:
        while connection.execute(query).scalar_one() == 0:
            assert time.monotonic() < deadline, "the second run never waited on the first's locks"
            time.sleep(0.02)
            connection.rollback()  # a fresh snapshot of pg_stat_activity per poll
