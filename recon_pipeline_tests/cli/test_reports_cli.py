"""`recon report night` and `recon report overview` render report files on demand, from the committed
tables alone (written here by the pipeline's own writers, no Dagster run, no in-memory result), on SQLite
and PostgreSQL; bad input is one line, exit 2, and writes nothing."""

from __future__ import annotations

import csv
import re
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import Engine, func, insert, select

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies, properties
from recon_pipeline.reconcile.adjustments import ADJUSTMENT_POLICY, plan_adjustments
from recon_pipeline.reports.overview import ORPHAN_COLUMNS, OVERVIEW_COLUMNS
from recon_pipeline.reports.paths import FILE_NAMES, OPEN_CSV, ORPHANS_CSV, OVERVIEW_FOLDER
from recon_pipeline.storage.adjustments import sync_adjustments
from recon_pipeline.storage.findings import save_findings
from recon_pipeline_tests.support.finding_rows import FINDINGS, NOW, finding, findings_frame
from recon_pipeline_tests.support.review_commands import recon

NIGHT, EARLIER = "2026-11-30", "2026-11-21"
PROPERTY = "lisbon-riverside"
HOSTILE_KEY = '=HYPERLINK("http://evil.example","x")'
HOSTILE = finding(
    "missing_in_ledger",
    HOSTILE_KEY,
    300,
    provider_record_id="@SUM(1+1)*cmd|' /C calc'!A0",
    provider_amount_minor=300,
    detail="+1+1 looks like a formula",
)
ORPHAN = finding(
    "orphaned_captured_payment",
    "pi_7:payment",
    500,
    provider_record_id="pi_7",
    provider_amount_minor=500,
    booking_id="b7",
)
CLEARED = "ch_3:payment"  # seen by the first run only
EVERY_FILE = sorted(FILE_NAMES.values())
Capture = pytest.CaptureFixture[str]


def add_property(engine: Engine, property_id: str, timezone: str = "Europe/Lisbon") -> None:
    row = {"property_id": property_id, "name": property_id.title(), "timezone": timezone, "currency": "EUR"}
    with engine.begin() as connection:
        connection.execute(insert(properties), [row])


def reconcile(engine: Engine, property_id: str, night: str, found: pd.DataFrame, run: int) -> None:
    """What a night's run commits: the findings, then the adjustments that follow them."""
    now = NOW + timedelta(hours=run)
    with engine.begin() as connection:
        save_findings(connection, property_id, night, found, f"run-{run}", now)
        plan = plan_adjustments(property_id, night, found, f"run-{run}", now)
        sync_adjustments(connection, property_id, night, plan, now)


@pytest.fixture
def engine(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Engine:
    """PROPERTY reconciled for NIGHT twice (the second run no longer sees CLEARED) and for EARLIER once;
    RECON_DATABASE_URL names the database, as for any `recon` command."""
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    add_property(engine, PROPERTY)
    found = pd.concat([FINDINGS, findings_frame(HOSTILE, ORPHAN)], ignore_index=True)
    reconcile(engine, PROPERTY, NIGHT, found, 1)
    reconcile(engine, PROPERTY, NIGHT, found[found["record_key"] != CLEARED], 2)
    reconcile(engine, PROPERTY, EARLIER, FINDINGS.iloc[:1], 0)
    return engine


def table_rows(engine: Engine, property_id: str, night: str) -> list[dict[str, object]]:
    c = discrepancies.c
    query = (
        select(discrepancies)
        .where(c.property_id == property_id, c.night == night)
        .order_by(c.category, c.record_key)
    )
    with engine.connect() as connection:
        return [dict(row) for row in connection.execute(query).mappings()]


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_night_is_rendered_from_the_committed_tables(
    engine: Engine, tmp_path: Path, capsys: Capture
) -> None:
    out = tmp_path / "shared" / "reports"
    code, stdout, stderr = recon(capsys, "report", "night", NIGHT, "--property", PROPERTY, "--out", str(out))
    assert (code, stderr) == (0, "")
    folder = out.resolve() / PROPERTY / NIGHT
    assert sorted(path.name for path in folder.iterdir()) == EVERY_FILE  # no temporary file left
    rows = table_rows(engine, PROPERTY, NIGHT)
    assert stdout.startswith(f"{PROPERTY} {NIGHT}: {len(rows)} findings ({len(rows) - 1} outstanding) -> ")
    assert str(folder / "report.html") in stdout

    # CSV and Parquet: every row and column of the table, and each finding's adjustment state.
    cells = read_csv(folder / "discrepancies.csv")
    assert list(cells[0]) == [column.name for column in discrepancies.columns] + ["adjustment"]
    assert [cell["discrepancy_id"] for cell in cells] == [str(row["discrepancy_id"]) for row in rows]
    states = {cell["record_key"]: cell["adjustment"] for cell in cells}
    assert states["ch_1:payment"] == "proposed 10.00 EUR"
    assert states["ch_2:payment"] == "proposed 0.50 EUR"
    assert states[CLEARED] == "" and "status_mismatch" not in ADJUSTMENT_POLICY
    assert states["pi_7:payment"] == ""
    [cleared] = [cell for cell in cells if cell["record_key"] == CLEARED]
    assert cleared["cleared_at"] == (NOW + timedelta(hours=2)).isoformat()
    parquet = pd.read_parquet(folder / "discrepancies.parquet")
    assert parquet["record_key"].tolist() == [row["record_key"] for row in rows]
    assert parquet["adjustment"].tolist() == [cell["adjustment"] for cell in cells]

    # Formula-safe: text from the provider never runs in a spreadsheet; Parquet keeps it exact.
    [hostile] = [cell for cell in cells if cell["record_key"] == "'" + HOSTILE_KEY]
    assert hostile["provider_record_id"] == "'@SUM(1+1)*cmd|' /C calc'!A0"
    assert hostile["detail"] == "'+1+1 looks like a formula"
    assert hostile["difference_minor"] == "300" and hostile["adjustment"] == "proposed 3.00 EUR"
    assert HOSTILE_KEY in parquet["record_key"].tolist()

    # The page: outstanding findings only, the earlier night in the by-night data, links to its exports.
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert f"{len(rows) - 1} outstanding findings, 1 cleared by a later run" in page
    assert CLEARED not in page and "<rect" not in page  # bars are drawn by the page's script
    assert re.findall(r'href="([^"]+)"', page) == ["discrepancies.csv", "discrepancies.parquet"]
    assert f'"night":"{EARLIER}"' in page and "Totals" not in page  # no run figure it cannot read back

    # On demand, any time: rendering again over unchanged rows writes the same bytes.
    first = {name: (folder / name).read_bytes() for name in EVERY_FILE}
    assert recon(capsys, "report", "night", NIGHT, "--property", PROPERTY, "--out", str(out))[0] == 0
    assert {name: (folder / name).read_bytes() for name in EVERY_FILE} == first


def test_the_default_root_is_recon_home_and_formats_can_be_chosen(
    engine: Engine,
    recon_home: Path,
    capsys: Capture,
) -> None:
    code, _, stderr = recon(capsys, "report", "night", NIGHT, "--format", "html")
    assert (code, stderr) == (0, "")
    folder = recon_home.resolve() / "reports" / PROPERTY / NIGHT
    assert [path.name for path in folder.iterdir()] == ["report.html"]
    assert "href=" not in (folder / "report.html").read_text(encoding="utf-8")  # nothing beside it to link
    code, _, _ = recon(capsys, "report", "night", EARLIER, "--format", "parquet,csv")
    assert code == 0
    assert sorted(p.name for p in (folder.parent / EARLIER).iterdir()) == EVERY_FILE[:2]


def test_every_valid_property_is_rendered_and_a_bad_row_fails_alone(
    engine: Engine,
    tmp_path: Path,
    capsys: Capture,
) -> None:
    add_property(engine, "kyoto-gion", "Asia/Tokyo")  # no finding that night: an empty report
    add_property(engine, "mars-base", "Mars/Olympus_Mons")
    code, stdout, stderr = recon(capsys, "report", "night", NIGHT, "--out", str(tmp_path))
    assert code == 2
    assert stderr.startswith("error: property 'mars-base' is invalid: ") and stderr.count("\n") == 1
    assert "kyoto-gion 2026-11-30: 0 findings (0 outstanding)" in stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kyoto-gion", PROPERTY]
    assert sorted(p.name for p in (tmp_path / "kyoto-gion" / NIGHT).iterdir()) == EVERY_FILE
    assert read_csv(tmp_path / "kyoto-gion" / NIGHT / "discrepancies.csv") == []


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--property", "nope"], "error: property 'nope' is not in the properties table"),
        (
            ["--property", PROPERTY, "--property", "nope"],
            "error: property 'nope' is not in the properties table",
        ),
        (["--property", "../etc"], "error: recon report night: argument --property: "),
        (["--format", "csv,xlsx"], "error: recon report night: argument --format: "),
        (["--format", ""], "error: recon report night: argument --format: "),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    line: str,
    capsys: Capture,
) -> None:
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    add_property(engine, PROPERTY)
    monkeypatch.setenv("RECON_DATABASE_URL", sqlite_url)
    code, stdout, stderr = recon(capsys, "report", "night", NIGHT, "--out", str(tmp_path / "out"), *argv)
    assert (code, stdout) == (2, "")
    assert stderr.startswith(line) and stderr.count("\n") == 1, stderr
    assert not (tmp_path / "out").exists()


def test_an_out_folder_that_is_a_file_is_one_line(engine: Engine, tmp_path: Path, capsys: Capture) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    for command in (["night", NIGHT], ["overview"]):
        code, _, stderr = recon(capsys, "report", *command, "--out", str(tmp_path / "a-file"))
        assert code == 2 and stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
        assert "a-file" in stderr
    assert (tmp_path / "a-file").read_text() == "not a folder"


def test_an_empty_properties_table_is_one_line(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    migrations.upgrade(make_engine(sqlite_url))
    monkeypatch.setenv("RECON_DATABASE_URL", sqlite_url)
    code, _, stderr = recon(capsys, "report", "night", NIGHT)
    assert code == 2
    assert stderr == "error: the properties table holds no property: there is nothing to render\n"


def test_the_overviews_are_rendered_on_demand(engine: Engine, tmp_path: Path, capsys: Capture) -> None:
    code, stdout, stderr = recon(capsys, "report", "overview", "--out", str(tmp_path))
    assert (code, stderr) == (0, "")
    folder = tmp_path.resolve() / OVERVIEW_FOLDER
    assert sorted(p.name for p in folder.iterdir()) == sorted([OPEN_CSV, ORPHANS_CSV])
    opened, orphans = read_csv(folder / OPEN_CSV), read_csv(folder / ORPHANS_CSV)
    assert list(opened[0]) == list(OVERVIEW_COLUMNS) and list(orphans[0]) == list(ORPHAN_COLUMNS)
    c = discrepancies.c
    with engine.connect() as connection:
        unresolved = connection.execute(
            select(func.count()).where(c.cleared_at.is_(None), c.review_status == "open")
        ).scalar_one()
    assert sum(int(row["count"]) for row in opened) == unresolved
    assert {row["oldest_night"] for row in opened} == {NIGHT, EARLIER}
    assert [row["payment_id"] for row in orphans] == ["pi_7"]
    assert stdout.splitlines() == [
        f"{folder / OPEN_CSV}: {len(opened)} rows",
        f"{folder / ORPHANS_CSV}: 1 rows",
    ]
