"""`recon findings list|show|ack|resolve|reopen|threshold` on the demo seed, seeded through Dagster;
`assign` and `note` on a desk's database."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import insert, select

from recon_pipeline.db.schema import discrepancies, discrepancy_reviews, review_audit
from recon_pipeline_tests.support.desk_fixtures import add_user, desk_database, finding, finding_ids
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline
from recon_pipeline_tests.support.review_commands import KYOTO, LISBON, eur, jpy, recon


def rows(pipeline: SeededPipeline, *where: Any) -> list[dict[str, Any]]:
    with pipeline.engine.connect() as connection:
        query = select(discrepancies).where(*where).order_by(discrepancies.c.discrepancy_id)
        return [dict(row) for row in connection.execute(query).mappings()]


def listed_ids(out: str) -> list[int]:
    """Ids of the table rows `list` printed (the lines after the header's dashes, before the count)."""
    lines = out.splitlines()
    return [int(line.split()[0]) for line in lines[2:-1]]


@pytest.fixture
def seeded(
    seeded_pipeline: SeededPipeline, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> SeededPipeline:
    """The demo seed, with `recon` pointed at its database."""
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    return seeded_pipeline


def test_list_filters_and_show_print_amounts_in_major_units(
    seeded: SeededPipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    for property_id in (KYOTO, LISBON):
        assert seeded.materialize(property_id).success
    kyoto = rows(seeded, discrepancies.c.property_id == KYOTO)
    lisbon = rows(seeded, discrepancies.c.property_id == LISBON)
    assert len(kyoto) == sum(seeded.planted(KYOTO).values()) > 0

    code, out, err = recon(capsys, "findings", "list", "--property", KYOTO)
    assert (code, err) == (0, "")
    assert sorted(listed_ids(out)) == [row["discrepancy_id"] for row in kyoto]
    assert out.splitlines()[-1] == f"{len(kyoto)} of {len(kyoto)} matching"
    for row in kyoto:  # whole yen, thousands separated, never divided by 100
        line = next(line for line in out.splitlines() if line.split()[0] == str(row["discrepancy_id"]))
        if row["category"] == "currency_mismatch":  # no difference across currencies: both are named
            assert f"  JPY ≠ {row['ledger_currency']}  " in line
        else:
            assert f"  {jpy(row['difference_minor'])}  " in line
        assert row["record_key"] in line and row["category"] in line and "open" in line

    mismatches = [row for row in lisbon if row["category"] == "amount_mismatch"]
    code, out, _ = recon(
        capsys, "findings", "list", "--property", LISBON, "--category", "amount_mismatch"
    )
    assert code == 0 and sorted(listed_ids(out)) == [row["discrepancy_id"] for row in mismatches]
    for row in mismatches:
        assert eur(row["difference_minor"]) in out
    negative = next(row for row in lisbon if row["difference_minor"] < 0)
    assert eur(negative["difference_minor"]).startswith("-")
    assert eur(negative["difference_minor"]) in recon(capsys, "findings", "list", "--limit", "500")[1]

    code, out, _ = recon(capsys, "findings", "list", "--night", NIGHT.isoformat(), "--limit", "3")
    assert code == 0 and len(listed_ids(out)) == 3
    assert out.splitlines()[-1] == f"3 of {len(kyoto) + len(lisbon)} matching (raise --limit to see more)"

    assert recon(capsys, "findings", "list", "--night", "2026-11-29")[1] == "no findings match\n"
    assert recon(capsys, "findings", "list", "--status", "resolved")[1] == "no findings match\n"
    code, out, _ = recon(capsys, "findings", "list", "--status", "open", "--limit", "500")
    assert sorted(listed_ids(out)) == sorted(row["discrepancy_id"] for row in kyoto + lisbon)

    # show: every column, amounts in yen as well as in minor units, and the (empty) history
    row = next(row for row in kyoto if row["category"] == "amount_mismatch")
    code, out, err = recon(capsys, "findings", "show", str(row["discrepancy_id"]))
    assert (code, err) == (0, "")
    fields = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines() if line and line[0] != " "}
    assert set(discrepancies.c.keys()) <= set(fields)
    assert fields["record_key"] == row["record_key"] and fields["review_status"] == "open"
    assert (
        fields["provider_amount_minor"]
        == f"{jpy(row['provider_amount_minor'])}  ({row['provider_amount_minor']} minor)"
    )
    assert fields["difference_minor"].startswith(jpy(row["difference_minor"]))
    assert fields["reviewed_by"] == "-"
    assert out.rstrip().endswith("review history: none")

    # `recon discrepancies`, the findings' table's name, is the same command: the same output word for word
    for words in (("list", "--property", LISBON), ("show", str(row["discrepancy_id"])), ("threshold", KYOTO)):
        assert recon(capsys, "discrepancies", *words) == recon(capsys, "findings", *words)


def test_ack_and_resolve_record_who_why_and_the_amount_seen(
    seeded: SeededPipeline, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert seeded.materialize(LISBON).success
    first, second = rows(seeded, discrepancies.c.property_id == LISBON)[:2]
    ids = [str(first["discrepancy_id"]), str(second["discrepancy_id"])]

    code, out, err = recon(capsys, "findings", "ack", *ids, "--by", "ana", "--note", "PMS export late")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"finding {row['discrepancy_id']}: open -> acknowledged by ana at {eur(row['difference_minor'])}"
        for row in (first, second)
    ]
    monkeypatch.setenv("USER", "rui")  # --by defaults to the login name
    code, out, _ = recon(capsys, "discrepancies", "resolve", ids[0], "--note", "booked by hand")  # the alias
    assert (
        out == f"finding {ids[0]}: acknowledged -> resolved by rui at {eur(first['difference_minor'])}\n"
    )
    # Repeating an action changes nothing; a resolved finding cannot be acknowledged.
    code, out, _ = recon(capsys, "findings", "resolve", ids[0], "--by", "rui", "--note", "again")
    assert (code, out) == (0, f"finding {ids[0]}: already resolved, unchanged\n")
    code, out, err = recon(capsys, "findings", "ack", ids[1], ids[0], "--by", "ana", "--note", "x")
    assert code == 2 and out == ""
    assert (
        err
        == f"error: finding {ids[0]}: it is already resolved; a resolved finding cannot be acknowledged\n"
    )

    resolved, acknowledged = rows(
        seeded, discrepancies.c.discrepancy_id.in_([first["discrepancy_id"], second["discrepancy_id"]])
    )
    assert resolved["review_status"] == "resolved" and resolved["reviewed_by"] == "rui"
    assert resolved["review_note"] == "booked by hand"
    assert resolved["reviewed_difference_minor"] == first["difference_minor"]
    assert acknowledged["review_status"] == "acknowledged" and acknowledged["reviewed_by"] == "ana"
    with seeded.engine.connect() as connection:
        audit = connection.execute(
            select(
                discrepancy_reviews.c.record_key,
                discrepancy_reviews.c.action,
                discrepancy_reviews.c.previous_status,
                discrepancy_reviews.c.reviewed_by,
                discrepancy_reviews.c.difference_minor,
            ).order_by(discrepancy_reviews.c.review_id)
        ).all()
    assert [tuple(row) for row in audit] == [
        (first["record_key"], "acknowledge", "open", "ana", first["difference_minor"]),
        (second["record_key"], "acknowledge", "open", "ana", second["difference_minor"]),
        (first["record_key"], "resolve", "acknowledged", "rui", first["difference_minor"]),
    ]

    code, out, _ = recon(capsys, "findings", "list", "--property", LISBON, "--status", "acknowledged")
    assert listed_ids(out) == [second["discrepancy_id"]] and "ana" in out
    code, out, _ = recon(capsys, "findings", "show", ids[0])
    history = out.split("review history\n", 1)[1].splitlines()
    assert len(history) == 2
    assert "acknowledge" in history[0] and "open -> acknowledged" in history[0] and "by ana" in history[0]
    assert history[0].endswith(f"at {eur(first['difference_minor'])}  PMS export late")
    assert "acknowledged -> resolved" in history[1] and history[1].endswith("booked by hand")


def test_reopen_puts_a_reviewed_finding_back_to_open_with_who_and_why(
    seeded: SeededPipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    assert seeded.materialize(LISBON).success
    first, second = rows(seeded, discrepancies.c.property_id == LISBON)[:2]
    ids = [str(first["discrepancy_id"]), str(second["discrepancy_id"])]
    assert recon(capsys, "findings", "ack", ids[0], "--by", "ana", "--note", "looking")[0] == 0
    assert recon(capsys, "findings", "resolve", ids[1], "--by", "ana", "--note", "booked")[0] == 0

    code, out, err = recon(capsys, "findings", "reopen", *ids, "--by", "rui", "--note", "not booked")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"finding {ids[0]}: acknowledged -> open by rui at {eur(first['difference_minor'])}",
        f"finding {ids[1]}: resolved -> open by rui at {eur(second['difference_minor'])}",
    ]
    # An open finding stays open; a reopened one can be acknowledged again.
    code, out, _ = recon(capsys, "findings", "reopen", ids[1], "--by", "rui", "--note", "again")
    assert (code, out) == (0, f"finding {ids[1]}: already open, unchanged\n")
    code, out, err = recon(capsys, "findings", "reopen", ids[1], "--by", "rui")
    assert (code, out, err) == (2, "", "error: say why with --note\n")

    reopened = rows(seeded, discrepancies.c.discrepancy_id == first["discrepancy_id"])[0]
    assert reopened["review_status"] == "open" and reopened["reviewed_by"] == "rui"
    assert reopened["review_note"] == "not booked"
    with seeded.engine.connect() as connection:
        audit = connection.execute(
            select(
                discrepancy_reviews.c.record_key,
                discrepancy_reviews.c.action,
                discrepancy_reviews.c.previous_status,
                discrepancy_reviews.c.reviewed_by,
                discrepancy_reviews.c.note,
                discrepancy_reviews.c.difference_minor,
            )
            .where(discrepancy_reviews.c.action == "reopen")
            .order_by(discrepancy_reviews.c.review_id)
        ).all()
    assert [tuple(row) for row in audit] == [
        (first["record_key"], "reopen", "acknowledged", "rui", "not booked", first["difference_minor"]),
        (second["record_key"], "reopen", "resolved", "rui", "not booked", second["difference_minor"]),
    ]
    history = recon(capsys, "findings", "show", ids[1])[1].split("review history\n", 1)[1]
    assert "resolved -> open  by rui" in history.splitlines()[1]
    assert recon(capsys, "findings", "ack", ids[1], "--by", "ana", "--note", "on it")[0] == 0


def test_thresholds_are_shown_and_set_per_property(
    seeded: SeededPipeline, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECON_UNEXPLAINED_THRESHOLD_MINOR", "250000")
    code, out, _ = recon(capsys, "findings", "threshold", KYOTO)
    assert out.startswith(f"{KYOTO}: unexplained amount threshold 250,000 JPY (250000 minor units")
    assert "RECON_UNEXPLAINED_THRESHOLD_MINOR" in out
    code, out, _ = recon(capsys, "findings", "threshold", LISBON, "--set", "123456")
    assert out.startswith(f"{LISBON}: unexplained amount threshold 1,234.56 EUR (123456 minor units")
    assert "this property's own" in out
    assert "1,234.56 EUR" in recon(capsys, "findings", "threshold", LISBON)[1]
    assert "2,500.00 EUR" in recon(capsys, "findings", "threshold", LISBON, "--clear")[1]


BAD_INPUT = [
    (["show", "999999"], "error: no finding with id 999999"),
    (["show", "abc"], "error: recon findings show: argument finding_id: a finding_id is an"),
    (["ack", "{id}", "999999", "--by", "ana", "--note", "n"], "error: no finding with id 999999"),
    (["resolve", "{id}", "--by", "ana", "--note", "  "], "error: say why with --note"),
    (["ack", "{id}", "--by", "ana"], "error: say why with --note"),
    (["resolve", "{id}", "--by", "a\nb", "--note", "n"], "error: --by must be one line"),
    (["list", "--property", "bad|id"], "error: recon findings list: argument --property: invalid"),
    (["list", "--status", "closed"], "error: unknown status 'closed': use one of open, acknowledged"),
    (["list", "--category", "typo"], "error: unknown category 'typo'"),
    (["list", "--night", "2026-02-30"], "error: recon findings list: argument --night: night '2026-"),
    (["threshold", "no-such-property"], "error: property 'no-such-property' is not in the properties"),
    (["threshold", KYOTO, "--set", "1.5"], "error: recon findings threshold: argument --set: an amo"),
]


def test_bad_input_exits_2_with_one_line_and_changes_nothing(
    seeded: SeededPipeline, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert seeded.materialize(KYOTO).success
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("LOGNAME", raising=False)
    before = rows(seeded)
    known = str(before[0]["discrepancy_id"])
    for argv, reason in [*BAD_INPUT, (["ack", known, "--note", "n"], "error: name the reviewer with --by")]:
        code, out, err = recon(capsys, "findings", *(arg.format(id=known) for arg in argv))
        assert (code, out) == (2, ""), argv
        assert err.startswith(reason) and err.count("\n") == 1, (argv, err)
    assert rows(seeded) == before
    with seeded.engine.connect() as connection:
        assert connection.execute(select(discrepancy_reviews)).all() == []


def test_assign_and_note_from_the_command_line_are_audited_and_leave_the_state(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with desk_database(database_url, monkeypatch) as engine:
        with engine.begin() as connection:
            connection.execute(insert(discrepancies).values(**finding("p1", "r-a", 1500)))
            (number,) = finding_ids(connection).values()
        add_user("ana", "analyst", "p1")
        add_user("cy", "analyst", "p2")
        target = str(number)
        for argv, expected in (
            (("assign", target, "--to", "ana"), (0, f"finding {target}: assigned to ana (by rui)\n", "")),
            (
                ("assign", target, "--to", "cy"),
                (2, "", "error: cy is not a desk user who may review p1's findings\n"),
            ),
            (
                ("assign", target, "--unassign"),
                (0, f"finding {target}: unassigned (was ana) (by rui)\n", ""),
            ),
            (
                ("note", target, "--note", "called the hotel"),
                (0, f"finding {target}: note; still open (by rui)\n", ""),
            ),
            (("note", target), (2, "", "error: say why with --note\n")),
            (("assign", target), (2, "", None)),  # --to or --unassign: argparse says so
        ):
            code, out, err = recon(capsys, "findings", *argv, "--by", "rui")
            assert (code, out) == expected[:2], argv
            assert expected[2] is None or err == expected[2], argv
        history = recon(capsys, "findings", "show", target)[1].split("review history\n", 1)[1]
        assert "note         open -> open  by rui  at 15.00 EUR  called the hotel" in history
        with engine.connect() as connection:
            row = connection.execute(select(discrepancies)).mappings().one()
            audit = connection.execute(
                select(review_audit.c.user_name, review_audit.c.action, review_audit.c.detail).order_by(
                    review_audit.c.id
                )
            ).all()
    assert (row["review_status"], row["assigned_to"]) == ("open", None)
    assert [tuple(entry) for entry in audit] == [
        ("rui", "assign", "assigned to ana"),
        ("rui", "unassign", "unassigned (was ana)"),
        ("rui", "note", "note; still open"),
    ]
