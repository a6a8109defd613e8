"""`recon matches list|show|confirm|reject|pair` through the `recon` entry point, on SQLite and PostgreSQL:
a suggestion confirmed, a match rejected, two records paired by hand, each audited; every refusal one line
naming the offending thing, exit 2, nothing written."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, select

from recon_pipeline.db.schema import match_decisions, matches
from recon_pipeline.storage.matches import save_matches
from recon_pipeline_tests.support.match_rows import (
    NIGHT,
    NOW,
    PROPERTY,
    match_row,
    matches_frame,
    seed_pairable_night,
)
from recon_pipeline_tests.support.review_commands import recon

SUGGESTION = match_row(
    ["ch_2"], ["le_2"], rule="card_window", score=0.55, status="suggested", amount=8_000, booking_id=None
)
MATCH = match_row(["ch_7"], ["le_7a", "le_7b"], rule="split", score=0.9)
WHERE = ("--property", PROPERTY, "--night", NIGHT)


@pytest.fixture
def night(engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch) -> Engine:
    """Rome's pairable night with a suggestion and a split match stored, `recon` pointed at it."""
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    with engine.begin() as connection:
        seed_pairable_night(connection)
        save_matches(connection, PROPERTY, NIGHT, matches_frame(SUGGESTION, MATCH), "run-1", NOW)
    return engine


def stored(engine: Engine) -> dict[str, dict[str, Any]]:
    with engine.connect() as connection:
        query = select(matches).order_by(matches.c.match_id)
        return {row["match_key"]: dict(row) for row in connection.execute(query).mappings()}


def audit(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        query = select(match_decisions).order_by(match_decisions.c.decision_id)
        return [dict(row) for row in connection.execute(query).mappings()]


def test_list_confirm_reject_pair_and_show(night: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = recon(capsys, "matches", "list", "--property", PROPERTY)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split()[:6] == ["property", "night", "match", "rule", "score", "status"]
    assert [line.split()[2] for line in lines[2:-1]] == ["ch_2=le_2", "ch_7=le_7a+le_7b"]
    assert "card_window  0.55   suggested" in lines[2] and "80.00 EUR" in lines[2]
    assert lines[-1] == "2 of 2 matching"
    assert recon(capsys, "matches", "list", "--status", "confirmed")[1] == "no matches match\n"

    code, out, err = recon(
        capsys, "matches", "confirm", "ch_2=le_2", *WHERE, "--by", "ana", "--reason", "same card, same hour"
    )
    assert (code, err) == (0, "")
    assert out == (
        f"match ch_2=le_2 ({PROPERTY} {NIGHT}): suggested -> confirmed by ana at 80.00 EUR provider / "
        "80.00 EUR ledger\n"
    )
    code, out, _ = recon(
        capsys, "matches", "confirm", "ch_2=le_2", *WHERE, "--by", "ana", "--reason", "again"
    )
    assert (code, out) == (0, f"match ch_2=le_2 ({PROPERTY} {NIGHT}): already confirmed, unchanged\n")

    code, out, err = recon(
        capsys, "matches", "reject", "ch_7=le_7a+le_7b", *WHERE, "--by", "ben", "--reason", "two guests"
    )
    assert (code, err) == (0, "")
    assert out.startswith(f"match ch_7=le_7a+le_7b ({PROPERTY} {NIGHT}): matched -> rejected by ben at ")

    code, out, err = recon(
        capsys,
        "matches",
        "pair",
        *WHERE,
        "--record",
        "ch_1",
        "--entry",
        "le_1",
        "--by",
        "ana",
        "--reason",
        "folio",
    )
    assert (code, err) == (0, "")
    assert out == (
        f"match ch_1=le_1 ({PROPERTY} {NIGHT}): unmatched -> confirmed by ana at 120.00 EUR provider / "
        "120.00 EUR ledger\n"
    )
    rows = stored(night)
    assert {key: (row["status"], row["decided_by"]) for key, row in rows.items()} == {
        "ch_2=le_2": ("confirmed", "ana"),
        "ch_7=le_7a+le_7b": ("rejected", "ben"),
        "ch_1=le_1": ("confirmed", "ana"),
    }
    assert [(row["action"], row["decided_by"], row["reason"]) for row in audit(night)] == [
        ("confirm", "ana", "same card, same hour"),
        ("reject", "ben", "two guests"),
        ("pair", "ana", "folio"),
    ]
    code, out, _ = recon(capsys, "matches", "list", "--rule", "person", "--current")
    assert code == 0 and [line.split()[2] for line in out.splitlines()[2:-1]] == ["ch_1=le_1"]

    code, out, err = recon(capsys, "matches", "show", "ch_2=le_2", *WHERE)
    assert (code, err) == (0, "")
    assert "status                 confirmed" in out
    assert "provider_amount_minor  8000 (80.00 EUR)" in out
    assert "decision_reason        same card, same hour" in out
    [event] = [line for line in out.splitlines() if line.startswith("  ")]
    assert "confirm  suggested -> confirmed  by ana  at 80.00 EUR / 80.00 EUR  same card, same hour" in event


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["confirm", "ch_9=le_9", *WHERE, "--by", "ana", "--reason", "r"],
         f"error: no match 'ch_9=le_9' for property {PROPERTY} on {NIGHT}"),
        (["confirm", "ch_2=le_2", *WHERE, "--by", "ana"], "error: say why with --reason"),
        (["reject", "ch_2=le_2", *WHERE, "--by", " ", "--reason", "r"], "error: name the reviewer with --by"),
        (["pair", *WHERE, "--record", "ch_x", "--entry", "le_2", "--by", "ana", "--reason", "r"],
         f"error: provider record 'ch_x' is in no current finding or match of {PROPERTY} on {NIGHT}"),
        (["pair", *WHERE, "--record", "ch_1", "--entry", "le_far", "--by", "ana", "--reason", "r"],
         f"error: ledger entry 'le_far' is not in {PROPERTY}'s ledger on {NIGHT} or the nights either side"),
        (["pair", *WHERE, "--record", "ch_7", "--entry", "le_2", "--by", "ana", "--reason", "r"],
         "error: provider record 'ch_7' is already matched (match 'ch_7=le_7a+le_7b' on 2026-12-01)"),
        (["pair", *WHERE, "--entry", "le_2", "--by", "ana", "--reason", "r"],
         "error: name at least one --record to pair"),
        (["pair", "--property", "nowhere", "--night", NIGHT, "--record", "ch_1", "--entry", "le_1",
          "--by", "a", "--reason", "r"], "error: property 'nowhere' is not in the properties table"),
        (["list", "--status", "maybe"], "error: unknown match status 'maybe': use one of matched, suggested"),
        (["confirm", "ch_2=le_2", "--property", PROPERTY, "--by", "ana", "--reason", "r"],
         "error: recon matches confirm: the following arguments are required: --night"),
        (["pair", "--property", PROPERTY, "--night", "2026-13-01"],
         "error: recon matches pair: argument --night"),
    ],
)  # fmt: skip
def test_a_refusal_is_one_line_naming_the_offending_thing_and_writes_nothing(
    night: Engine, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    before = stored(night)
    code, out, err = recon(capsys, "matches", *argv)
    assert (code, out) == (2, "")
    assert err.startswith(message) and err.count("\n") == 1, err
    assert stored(night) == before and audit(night) == []
