"""Matches kept true across re-runs (``review/matches.py``), on SQLite and PostgreSQL: new, found again
unchanged (no row written), refreshed, cleared, reappeared; a person's decision never rewritten by a run;
what the next run is told (``known_matches``); every decision audited with who, when, why, the ids and
the amounts seen; a pair by hand refused, in one line naming the id, for an id unknown or already held."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, event, select

from recon_pipeline.db.schema import match_decisions, matches
from recon_pipeline.errors import ReviewError
from recon_pipeline.reconcile.matching import KnownMatch
from recon_pipeline.review.matches import confirm_match, pair_by_hand, reject_match
from recon_pipeline.storage.findings import save_findings
from recon_pipeline.storage.matches import (
    MatchFilter,
    MatchSaveCounts,
    UnknownMatchError,
    count_matches,
    known_matches,
    list_matches,
    save_matches,
)
from recon_pipeline_tests.support.finding_rows import finding, findings_frame
from recon_pipeline_tests.support.match_rows import (
    NIGHT,
    NOW,
    PROPERTY,
    match_row,
    matches_frame,
    seed_pairable_night,
)

A = match_row(["ch_a"], ["le_a"])
B = match_row(["ch_b"], ["le_b1", "le_b2"], rule="split", score=0.6, status="suggested")
LATER = [NOW + timedelta(hours=hours) for hours in range(1, 10)]


def rows_by_key(engine: Engine) -> dict[str, dict[str, Any]]:
    with engine.connect() as connection:
        query = select(matches).order_by(matches.c.match_id)
        return {row["match_key"]: dict(row) for row in connection.execute(query).mappings()}


def decisions(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        query = select(match_decisions).order_by(match_decisions.c.decision_id)
        return [dict(row) for row in connection.execute(query).mappings()]


def save(engine: Engine, *rows: dict[str, object], run: str, now: Any) -> MatchSaveCounts:
    with engine.begin() as connection:
        return save_matches(connection, PROPERTY, NIGHT, matches_frame(*rows), run, now)


def test_matches_are_new_unchanged_refreshed_cleared_and_reappear(engine: Engine) -> None:
    assert save(engine, A, B, run="run-1", now=NOW) == MatchSaveCounts(2, 0, 0, 0, 0, 0)
    first = rows_by_key(engine)
    assert first[A["match_key"]]["status"] == "matched"
    assert first[B["match_key"]]["ledger_entry_ids"] == "le_b1 le_b2"
    assert first[B["match_key"]]["match_key"] == "ch_b=le_b1+le_b2"

    # The same matches again: counted unchanged, and not one row written (no INSERT, no UPDATE).
    written: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def remember(_c: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
            written.append(statement)

    assert save(engine, A, B, run="run-2", now=LATER[0]) == MatchSaveCounts(0, 2, 0, 0, 0, 0)
    event.remove(engine, "before_cursor_execute", remember)
    assert written == []
    assert rows_by_key(engine) == first

    # A found with another score and status; B not found: refreshed and cleared.
    rescored = {**A, "score": 0.7, "status": "suggested"}
    assert save(engine, rescored, run="run-3", now=LATER[1]) == MatchSaveCounts(0, 0, 1, 0, 1, 0)
    third = rows_by_key(engine)
    assert (third[A["match_key"]]["score"], third[A["match_key"]]["status"]) == (0.7, "suggested")
    assert third[A["match_key"]]["run_id"] == "run-1"  # the run that first found it
    assert third[B["match_key"]]["cleared_at"] == LATER[1]

    # B found again: current again, its first detection kept.
    assert save(engine, rescored, B, run="run-4", now=LATER[2]) == MatchSaveCounts(0, 1, 0, 1, 0, 0)
    fourth = rows_by_key(engine)
    assert fourth[B["match_key"]]["cleared_at"] is None
    assert (fourth[B["match_key"]]["run_id"], fourth[B["match_key"]]["detected_at"]) == ("run-1", NOW)
    assert list(fourth) == list(first)  # same rows, same ids: nothing deleted, nothing duplicated


def test_a_persons_decision_is_never_rewritten_by_a_run(engine: Engine) -> None:
    save(engine, A, B, run="run-1", now=NOW)
    with engine.begin() as connection:
        confirm_match(connection, PROPERTY, NIGHT, B["match_key"], "ana", "folio split 2 ways", LATER[0])
        reject_match(connection, PROPERTY, NIGHT, A["match_key"], "ana", "other guest", LATER[0])
    decided = rows_by_key(engine)

    # The run finds B again with other facts, A again, and a new C; it applied a person's match of the
    # night before (status confirmed, rule person): B and A are decided, left alone, and the applied
    # decision is not written here (it is stored where the person made it).
    c = match_row(["ch_c"], ["le_c"])
    applied = match_row(["ch_d"], ["le_d"], rule="person", score=float("nan"), status="confirmed")
    assert save(engine, {**B, "score": 0.3}, A, c, applied, run="run-2", now=LATER[1]) == MatchSaveCounts(
        1, 0, 0, 0, 0, 3
    )
    assert "ch_d=le_d" not in rows_by_key(engine)
    # The run no longer finds them: a decision is not cleared either.
    assert save(engine, c, run="run-3", now=LATER[2]) == MatchSaveCounts(0, 1, 0, 0, 0, 0)
    after = rows_by_key(engine)
    for key in (A["match_key"], B["match_key"]):
        assert after[key] == decided[key]
    assert (after[B["match_key"]]["status"], after[B["match_key"]]["score"]) == ("confirmed", 0.6)
    assert after[A["match_key"]]["status"] == "rejected"
    assert (after[B["match_key"]]["decided_by"], after[B["match_key"]]["decision_reason"]) == (
        "ana",
        "folio split 2 ways",
    )


def test_decisions_are_audited_once_and_refused_in_one_line(engine: Engine) -> None:
    held = match_row(["ch_a"], ["le_other"], rule="card_window", score=0.5, status="suggested")
    save(engine, A, B, held, run="run-1", now=NOW)
    with engine.begin() as connection:
        first = confirm_match(connection, PROPERTY, NIGHT, B["match_key"], " ana ", " split folio ", LATER[0])
        again = confirm_match(connection, PROPERTY, NIGHT, B["match_key"], "ben", "again", LATER[1])
        back = reject_match(connection, PROPERTY, NIGHT, B["match_key"], "ben", "wrong guest", LATER[2])
    assert (first.previous_status, first.status, first.changed) == ("suggested", "confirmed", True)
    assert (again.status, again.changed) == ("confirmed", False)
    assert (back.previous_status, back.status) == ("confirmed", "rejected")
    audit = decisions(engine)
    assert [(row["action"], row["previous_status"], row["decided_by"], row["reason"]) for row in audit] == [
        ("confirm", "suggested", "ana", "split folio"),
        ("reject", "confirmed", "ben", "wrong guest"),
    ]
    assert audit[0] | {"decision_id": None} == {
        "decision_id": None,
        "property_id": PROPERTY,
        "night": NIGHT,
        "match_key": "ch_b=le_b1+le_b2",
        "action": "confirm",
        "previous_status": "suggested",
        "decided_by": "ana",
        "reason": "split folio",
        "provider_record_ids": "ch_b",
        "ledger_entry_ids": "le_b1 le_b2",
        "provider_amount_minor": 12_000,
        "ledger_amount_minor": 12_000,
        "currency": "EUR",
        "decided_at": LATER[0],
    }

    with engine.begin() as connection:
        # ch_a is matched (A): confirming another pairing of it is refused, naming it and the match.
        with pytest.raises(
            ReviewError, match=r"^provider record 'ch_a' is already matched \(match 'ch_a=le_a'"
        ):
            confirm_match(connection, PROPERTY, NIGHT, held["match_key"], "ana", "same card", LATER[3])
        with pytest.raises(UnknownMatchError, match=r"^no match 'ch_z=le_z' for property rome-centro on"):
            confirm_match(connection, PROPERTY, NIGHT, "ch_z=le_z", "ana", "why", LATER[3])
        with pytest.raises(ReviewError, match=r"^say why with --reason$"):
            reject_match(connection, PROPERTY, NIGHT, A["match_key"], "ana", "  ", LATER[3])
        with pytest.raises(ReviewError, match=r"^name the reviewer with --by"):
            reject_match(connection, PROPERTY, NIGHT, A["match_key"], "", "why", LATER[3])
    save(engine, B, run="run-2", now=LATER[4])  # A and held are cleared
    with engine.begin() as connection, pytest.raises(ReviewError, match="is cleared: the latest run no"):
        reject_match(connection, PROPERTY, NIGHT, A["match_key"], "ana", "why", LATER[5])
    assert len(decisions(engine)) == 2


def test_known_matches_are_decisions_and_the_adjacent_nights_machine_matches(engine: Engine) -> None:
    """What the next run of NIGHT is told, per property: every person's decision of the night and the
    nights either side, and the adjacent nights' current machine matches; not tonight's own machine
    matches, suggestions, cleared matches or nights further away."""
    suggested = "suggested"
    rows = {
        "2026-11-30": [
            match_row(["ch_prev"], ["le_prev"], rule="card_window"),
            match_row(["ch_s"], ["le_s"], status=suggested),
        ],
        NIGHT: [A, B, match_row(["ch_r"], ["le_r"], status=suggested)],
        "2026-12-02": [
            match_row(["ch_next"], ["le_n1", "le_n2"], rule="split"),
            match_row(["ch_gone"], ["le_gone"]),
        ],
        "2026-12-03": [match_row(["ch_far"], ["le_far"])],
    }
    with engine.begin() as connection:
        for night, found in rows.items():
            save_matches(connection, PROPERTY, night, matches_frame(*found), "run-1", NOW)
        save_matches(connection, PROPERTY, "2026-12-02", matches_frame(rows["2026-12-02"][0]), "run-2", NOW)
        save_matches(connection, "milan-duomo", NIGHT, matches_frame(A), "run-1", NOW)
        confirm_match(connection, PROPERTY, NIGHT, B["match_key"], "ana", "split folio", LATER[0])
        reject_match(connection, PROPERTY, NIGHT, "ch_r=le_r", "ana", "other guest", LATER[0])
        reject_match(connection, PROPERTY, "2026-11-30", "ch_s=le_s", "ana", "other guest", LATER[0])
        known = known_matches(connection, [PROPERTY, "milan-duomo", "nowhere"], NIGHT)
    assert known == {
        PROPERTY: [
            KnownMatch(("ch_prev",), ("le_prev",), "payment", "card_window"),
            KnownMatch(("ch_s",), ("le_s",), "payment", "booking_amount", confirmed=False),
            KnownMatch(("ch_b",), ("le_b1", "le_b2"), "payment", "person"),
            KnownMatch(("ch_r",), ("le_r",), "payment", "booking_amount", confirmed=False),
            KnownMatch(("ch_next",), ("le_n1", "le_n2"), "payment", "split"),
        ],
        "milan-duomo": [],
        "nowhere": [],
    }


def test_a_pair_by_hand_is_a_confirmed_match_and_refuses_unknown_or_held_ids(engine: Engine) -> None:
    with engine.begin() as connection:
        seed_pairable_night(connection)
        save_matches(connection, PROPERTY, NIGHT, matches_frame(match_row(["ch_5"], ["le_5"])), "run-1", NOW)
        decision = pair_by_hand(
            connection, PROPERTY, NIGHT, ["ch_1"], ["le_1"], "ana", "same folio", LATER[0]
        )
    assert (decision.match_key, decision.previous_status, decision.status) == ("ch_1=le_1", None, "confirmed")
    row = rows_by_key(engine)["ch_1=le_1"]
    assert {
        name: row[name] for name in ("rule", "status", "kind", "booking_id", "currency", "decided_by")
    } == {
        "rule": "person",
        "status": "confirmed",
        "kind": "payment",
        "booking_id": "B-1",
        "currency": "EUR",
        "decided_by": "ana",
    }
    assert (row["provider_amount_minor"], row["ledger_amount_minor"], row["decision_reason"]) == (
        12_000,
        12_000,
        "same folio",
    )
    [audit] = decisions(engine)
    assert (audit["action"], audit["previous_status"], audit["provider_record_ids"]) == ("pair", None, "ch_1")
    assert (audit["provider_amount_minor"], audit["ledger_amount_minor"], audit["decided_at"]) == (
        12_000,
        12_000,
        LATER[0],
    )
    refusals = [
        (["ch_x"], ["le_2"], LookupError, r"^provider record 'ch_x' is in no current finding or match of"),
        (["ch_2"], ["le_far"], LookupError, r"^ledger entry 'le_far' is not in rome-centro's ledger on 2026"),
        (["ch_2"], ["le_other"], LookupError, r"^ledger entry 'le_other' is not in rome-centro's ledger"),
        (["ch_1"], ["le_2"], ReviewError, r"^provider record 'ch_1' is already matched \(match 'ch_1=le_1'"),
        (["ch_2"], ["le_5"], LookupError, r"^ledger entry 'le_5' is not in"),
        (["ch_5"], ["le_2"], ReviewError, r"^provider record 'ch_5' is already matched \(match 'ch_5=le_5'"),
        ([], ["le_2"], ReviewError, r"^name at least one --record to pair$"),
        (["ch_2", "ch_2"], ["le_2"], ReviewError, r"^--record 'ch_2' is named twice$"),
        (["ch_2"], ["le 2"], ReviewError, r"^--entry 'le 2' is not an id"),
    ]  # fmt: skip
    for records, entries, error, message in refusals:
        with engine.begin() as connection, pytest.raises(error, match=message):
            pair_by_hand(connection, PROPERTY, NIGHT, records, entries, "ana", "why", LATER[1])
    # An adjacent night's entry and a record of a finding: paired; the pair is what the next run is told.
    with engine.begin() as connection:
        pair_by_hand(connection, PROPERTY, NIGHT, ["ch_2"], ["le_2"], "ben", "late posting", LATER[2])
        known = known_matches(connection, [PROPERTY], NIGHT)[PROPERTY]
        listed = list_matches(connection, MatchFilter(PROPERTY, NIGHT, rule="person"), 10)
        assert count_matches(connection, MatchFilter(status="confirmed")) == 2
    assert known == [
        KnownMatch(("ch_1",), ("le_1",), "payment", "person"),
        KnownMatch(("ch_2",), ("le_2",), "payment", "person"),
    ]
    assert [row["match_key"] for row in listed] == ["ch_1=le_1", "ch_2=le_2"]
    assert len(decisions(engine)) == 2


def test_pairing_a_stored_suggestion_confirms_it(engine: Engine) -> None:
    """Pairing exactly the sides of a suggestion is its confirmation (one row, one audit row), and a run
    that finds the suggestion again leaves the person's match as it is."""
    suggestion = match_row(
        ["ch_2"], ["le_2"], rule="card_window", score=0.55, status="suggested", amount=8_000
    )
    with engine.begin() as connection:
        seed_pairable_night(connection)
        save_matches(connection, PROPERTY, NIGHT, matches_frame(suggestion), "run-1", NOW)
        decision = pair_by_hand(connection, PROPERTY, NIGHT, ["ch_2"], ["le_2"], "ana", "same card", LATER[0])
        counts = save_matches(connection, PROPERTY, NIGHT, matches_frame(suggestion), "run-2", LATER[1])
    assert (decision.action, decision.previous_status, decision.status) == ("pair", "suggested", "confirmed")
    assert counts == MatchSaveCounts(0, 0, 0, 0, 0, 1)
    [row] = rows_by_key(engine).values()
    assert (row["rule"], row["score"], row["status"], row["decided_by"]) == (
        "card_window",
        0.55,
        "confirmed",
        "ana",
    )
    assert [(d["action"], d["previous_status"]) for d in decisions(engine)] == [("pair", "suggested")]


def test_a_pair_by_hand_takes_its_records_kind_from_their_findings(engine: Engine) -> None:
    """The matcher finds a known match's records by id and kind: a refund the provider reported, paired
    with an entry the PMS posted as a payment, is a refund's match."""
    refund = finding(
        "missing_in_ledger", "re_3:refund", -8_000, kind="refund", provider_record_id="re_3",
        provider_amount_minor=-8_000,
    )  # fmt: skip
    with engine.begin() as connection:
        seed_pairable_night(connection)
        save_findings(
            connection, PROPERTY, NIGHT, findings_frame(refund), "run-1", NOW, ["missing_in_ledger"]
        )
        pair_by_hand(connection, PROPERTY, NIGHT, ["re_3"], ["le_2"], "ana", "refund posted as -80", LATER[0])
        known = known_matches(connection, [PROPERTY], NIGHT)[PROPERTY]
    row = rows_by_key(engine)["re_3=le_2"]
    assert (row["kind"], row["provider_amount_minor"], row["ledger_amount_minor"]) == (
        "refund",
        -8_000,
        8_000,
    )
    assert known == [KnownMatch(("re_3",), ("le_2",), "refund", "person")]


def test_a_record_an_ambiguity_holds_back_can_be_paired_by_hand(engine: Engine) -> None:
    """An ambiguity's finding names its first record in provider_record_id and all of them in its record
    key: each of them can be paired; its amount (the sum of all) is not taken for one record's."""
    ambiguity = finding(
        "ambiguous_match", "ambiguous:ch_8+ch_9=le_2", 0, provider_record_id="ch_8",
        provider_amount_minor=16_000, ledger_entry_id="le_2", ledger_amount_minor=8_000,
    )  # fmt: skip
    with engine.begin() as connection:
        seed_pairable_night(connection)
        save_findings(
            connection, PROPERTY, NIGHT, findings_frame(ambiguity), "run-1", NOW, ["ambiguous_match"]
        )
        pair_by_hand(
            connection, PROPERTY, NIGHT, ["ch_9"], ["le_2"], "ana", "approval code on the slip", LATER[0]
        )
    row = rows_by_key(engine)["ch_9=le_2"]
    assert (row["status"], row["kind"], row["provider_amount_minor"], row["ledger_amount_minor"]) == (
        "confirmed", "payment", None, 8_000,
    )  # fmt: skip
