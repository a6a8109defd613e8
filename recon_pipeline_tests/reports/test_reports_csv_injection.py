"""Text from the PMS or the provider that a spreadsheet would run as a formula is neutralised in the CSV
export (OWASP "CSV Injection"), read back from a real `discrepancies` table on SQLite and PostgreSQL;
numbers, negative amounts included, stay numbers, and the Parquet export keeps every value exact. A part
of a cell that a spreadsheet splits off at a separator (``;`` where it is Excel's list separator) is
guarded too, and every cell is quoted so that part stays in its cell."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import insert

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies
from recon_pipeline.reports.exports import csv_bytes, neutralise_formula, write_csv, write_parquet
from recon_pipeline.reports.queries import partition_findings

PROPERTY, NIGHT = "p1", "2026-11-01"
# record_key → (provider_record_id, ledger_entry_id, difference_minor): a formula in each text column
HOSTILE = {
    '=HYPERLINK("http://evil.example","x")': ("@SUM(1+1)*cmd|' /C calc'!A0", "+1+1", -500),
    "-2+3": ("\tch_tab", "\rle_cr", 700),
    "ch_plain": ("ch_plain", "le_plain", -1),
}


def test_formula_cells_are_neutralised_and_numbers_kept(database_url: str, tmp_path: Path) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    now = datetime(2026, 11, 2, tzinfo=UTC)
    rows = [
        {
            "property_id": PROPERTY,
            "night": NIGHT,
            "category": "amount_mismatch",
            "record_key": key,
            "provider_record_id": provider_id,
            "ledger_entry_id": entry_id,
            "provider_amount_minor": 1000,
            "ledger_amount_minor": 1000 - difference,
            "difference_minor": difference,
            "currency": "EUR",
            "detail": "=1+1 looks like a formula",
            "detected_at": now,
        }
        for key, (provider_id, entry_id, difference) in HOSTILE.items()
    ]
    with engine.begin() as connection:
        connection.execute(insert(discrepancies), rows)
    with engine.connect() as connection:
        frame = partition_findings(connection, PROPERTY, NIGHT)
    engine.dispose()
    csv_path = write_csv(frame, tmp_path / "discrepancies.csv")
    parquet_path = write_parquet(frame, tmp_path / "discrepancies.parquet")

    with csv_path.open(newline="", encoding="utf-8") as handle:
        cells = {row["record_key"]: row for row in csv.DictReader(handle)}
    assert set(cells) == {"'" + key if key[0] in "=-" else key for key in HOSTILE}
    formula = cells['\'=HYPERLINK("http://evil.example","x")']
    assert formula["provider_record_id"] == "'@SUM(1+1)*cmd|' /C calc'!A0"
    assert formula["ledger_entry_id"] == "'+1+1"
    assert formula["detail"] == "'=1+1 looks like a formula"
    assert (formula["difference_minor"], formula["ledger_amount_minor"]) == ("-500", "1500")
    control = cells["'-2+3"]
    assert (control["provider_record_id"], control["ledger_entry_id"]) == ("'\tch_tab", "'\rle_cr")
    plain = cells["ch_plain"]
    assert (plain["provider_record_id"], plain["ledger_entry_id"], plain["difference_minor"]) == (
        "ch_plain",
        "le_plain",
        "-1",
    )
    assert plain["detected_at"] == now.isoformat()  # timestamps are not text cells to neutralise

    # A spreadsheet-like reader: amounts parse as integers, negative ones included; no cell starts a formula.
    read = pd.read_csv(csv_path, keep_default_na=False)
    assert read["difference_minor"].tolist() == frame["difference_minor"].tolist()
    assert pd.api.types.is_integer_dtype(read["difference_minor"].dtype)
    text = read.select_dtypes(exclude="number").astype(str)
    assert not text.map(lambda cell: cell.startswith(("=", "+", "-", "@", "\t", "\r"))).any().any()

    # Parquet is data, not a spreadsheet: exactly what the table holds.
    exact = pd.read_parquet(parquet_path)
    assert exact["record_key"].tolist() == frame["record_key"].tolist()
    assert exact["provider_record_id"].tolist() == frame["provider_record_id"].tolist()


SPLIT_FORMULAS = (
    "see memo;=cmd|' /C calc'!A0;",  # Excel where ";" is the list separator: the second cell a formula
    "refund, +1+1",
    "line one\n@SUM(A1)",
    "a\t-2+3",
    "  =1+1",  # blanks before the formula
)
PLAIN_TEXT = ("ch_plain", "refund - partial", "guest@example.com", "a-b;c", "2+2=4")


@pytest.mark.parametrize("cell", SPLIT_FORMULAS)
def test_a_formula_a_spreadsheet_splits_off_is_neutralised_and_quoted(cell: str) -> None:
    assert neutralise_formula(cell) == "'" + cell
    written = csv_bytes(pd.DataFrame({"note": [cell], "amount": [-500]})).decode("utf-8")
    quoted = '"' + ("'" + cell).replace('"', '""') + '"'
    assert written == f'"note","amount"\r\n{quoted},"-500"\r\n'


def test_text_without_a_formula_is_left_as_it_is() -> None:
    assert [neutralise_formula(cell) for cell in PLAIN_TEXT] == list(PLAIN_TEXT)
