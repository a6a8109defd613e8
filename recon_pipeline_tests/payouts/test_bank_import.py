"""`recon bank import FILE` stores a CAMT.053 statement's booked credits (a batch booking's details each a
credit) and matches them to paid payouts; a re-import adds nothing; a bad file is one line naming it and
what is wrong. `recon report payouts` writes the accountant's sheet (CSV and xlsx, read back)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
from sqlalchemy import select

from recon_pipeline.db.schema import bank_credits
from recon_pipeline.payouts.camt import read_statement
from recon_pipeline.payouts.night import reconcile_payouts
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
from recon_pipeline_tests.support.review_commands import recon

STATEMENT = Path(__file__).parents[1] / "data" / "camt053_payouts.xml"
Capture = pytest.CaptureFixture[str]


@pytest.fixture(name="world")
def world_fixture(
    database_url: str, simulator: StartSimulator, monkeypatch: pytest.MonkeyPatch
) -> Iterator[PayoutWorld]:
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    with payout_world(database_url, simulator(payout_store())) as world:
        reconcile_payouts(world.engine, world.client, ARRIVAL, PROPERTIES, 3, frozenset(), "run-1")
        yield world


def test_statement_with_a_batch_booking_reads_one_credit_per_detail() -> None:
    statement = read_statement(STATEMENT)
    assert statement.statement_id == "STMT-2026-11-30-001"
    assert statement.skipped == 2  # the debit and the pending credit
    got = [
        (c.entry_reference, c.detail_index, c.amount_minor, c.currency, str(c.booking_date))
        for c in statement.credits
    ]
    assert got == [
        ("BANKREF-0001", 0, 19_400, "EUR", "2026-11-30"),
        ("BANKREF-0002", 0, 28_245, "EUR", "2026-11-30"),
        ("BANKREF-0002", 1, 15_000, "EUR", "2026-11-30"),
    ]
    assert "po_platform_paid" in statement.credits[1].remittance_info
    assert "INVOICE 2026-118" in statement.credits[2].remittance_info


def test_import_stores_and_matches_credits_once(world: PayoutWorld, capsys: Capture) -> None:
    code, out, err = recon(capsys, "bank", "import", str(STATEMENT))
    assert code == 0, err
    assert "3 credits (3 new, 2 other entries skipped), 2 payouts matched" in out
    code, out, err = recon(capsys, "bank", "import", str(STATEMENT))
    assert code == 0 and "3 credits (0 new" in out and "0 payouts matched" in out
    with world.engine.connect() as connection:
        rows = connection.execute(
            select(bank_credits).order_by(bank_credits.c.entry_reference, bank_credits.c.detail_index)
        )
        matched = [row.matched_payout_id for row in rows]
    assert matched == ["po_conn_paid", "po_platform_paid", None]


BAD_FILES = {
    "not_xml.xml": ("this is not xml <", "not XML"),
    "pain.xml": (
        '<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.03"><CstmrCdtTrfInitn/></Document>',
        "not a CAMT.053 statement",
    ),
    "bad_amount.xml": (
        STATEMENT.read_text(encoding="utf-8").replace(">194.00<", ">19,4O<"),
        "entry BANKREF-0001: amount '19,4O' is not a decimal number",
    ),
    "no_booking_date.xml": (
        STATEMENT.read_text(encoding="utf-8").replace("<BookgDt><Dt>2026-11-30</Dt></BookgDt>", "", 1),
        "entry BANKREF-0001: no booking date",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_bad_file_is_one_line_naming_it_and_stores_nothing(
    world: PayoutWorld, capsys: Capture, tmp_path: Path, name: str
) -> None:
    text, reason = BAD_FILES[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = recon(capsys, "bank", "import", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and str(path) in err and reason in err, err
    with world.engine.connect() as connection:
        assert connection.execute(select(bank_credits)).first() is None


def test_missing_file_is_one_line(world: PayoutWorld, capsys: Capture, tmp_path: Path) -> None:
    code, _, err = recon(capsys, "bank", "import", str(tmp_path / "absent.xml"))
    assert code == 2 and err.count("\n") == 1 and "absent.xml" in err


def test_payout_report_csv_and_xlsx_read_back(world: PayoutWorld, capsys: Capture, tmp_path: Path) -> None:
    assert recon(capsys, "bank", "import", str(STATEMENT))[0] == 0
    code, out, err = recon(capsys, "report", "payouts", "--night", "2026-11-27", "--out", str(tmp_path))
    assert code == 0, err
    assert out.count("4 payouts") == 2
    with (tmp_path / "payouts_2026-11-27.csv").open(newline="", encoding="utf-8") as handle:
        rows = {row["payout_id"]: row for row in csv.DictReader(handle)}
    assert rows["po_conn_paid"]["deposited"] == "yes"
    assert rows["po_conn_paid"]["bank_credit"] == "STMT-2026-11-30-001/BANKREF-0001"
    assert rows["po_conn_paid"]["property_nights"] == "porto-ribeira/2026-11-24 porto-ribeira/2026-11-25"
    assert (
        rows["po_platform_paid"]["property_nights"] == "denver-lodge/2026-11-24 lisbon-riverside/2026-11-25"
    )
    assert (rows["po_manual"]["traced"], rows["po_manual"]["sum_check"]) == ("manual", "untraceable")
    assert (rows["po_failed"]["status"], rows["po_failed"]["deposited"]) == ("failed", "no")
    book = openpyxl.load_workbook(tmp_path / "payouts_2026-11-27.xlsx", read_only=True)
    sheet = book["payouts"]
    [header, *lines] = [list(row) for row in sheet.iter_rows(values_only=True)]
    book.close()
    assert header[:2] == ["arrival_night", "payout_id"] and len(lines) == 4
    xlsx = {line[1]: dict(zip(header, line, strict=True)) for line in lines}
    assert xlsx["po_conn_paid"]["amount_minor"] == 19_400  # a number, not text
    assert xlsx["po_conn_paid"]["bank_credit"] == rows["po_conn_paid"]["bank_credit"]
    assert xlsx["po_failed"]["failure_code"] == "account_closed" and xlsx["po_failed"]["booked_on"] is None


def test_report_refuses_a_backwards_range(world: PayoutWorld, capsys: Capture, tmp_path: Path) -> None:
    code, _, err = recon(
        capsys, "report", "payouts", "--from", "2026-11-28", "--to", "2026-11-27", "--out", str(tmp_path)
    )
    assert code == 2 and err.count("\n") == 1 and "--from 2026-11-28 is after --to 2026-11-27" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (("--from", "2026-11-27"), "--from needs --to"),
        (("--night", "2026-11-27", "--to", "2026-11-28"), "--to goes with --from, not with --night"),
        (("--night", "2026-11-31"), "2026-11-31"),
    ],
)
def test_report_nights_are_checked(
    world: PayoutWorld, capsys: Capture, tmp_path: Path, argv: tuple[str, ...], reason: str
) -> None:
    code, _, err = recon(capsys, "report", "payouts", *argv, "--out", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and reason in err, err
    assert not list(tmp_path.iterdir())
