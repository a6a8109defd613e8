"""The exports of one property-night, read back from ``discrepancies`` after the asset committed it.

``RECON_HOME/reports/<property>/<night>/`` holds ``discrepancies.csv`` and ``discrepancies.parquet``
(every column of the table, the partition's rows ordered by category and record key) and
``report.html``. Everything is rebuilt from the table on every run, so a re-run over unchanged rows
rewrites the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection

from recon_pipeline.keys import parse_night
from recon_pipeline.ledger.queries import PropertyRow
from recon_pipeline.reconcile.report import NightReport
from recon_pipeline.reports.exports import write_csv, write_parquet, write_text
from recon_pipeline.reports.html import ReportPage, first_night_shown, render_report_html
from recon_pipeline.reports.paths import partition_folder
from recon_pipeline.reports.queries import findings_between, partition_discrepancies

CSV_NAME = "discrepancies.csv"
PARQUET_NAME = "discrepancies.parquet"
HTML_NAME = "report.html"


@dataclass(frozen=True)
class ReportFiles:
    """The files one partition's export wrote, and how many discrepancy rows they hold."""

    csv: Path
    parquet: Path
    html: Path
    rows: int


def export_partition(
    connection: Connection,
    property_row: PropertyRow,
    night: str,
    night_report: NightReport,
    home: Path | None = None,
) -> ReportFiles:
    """Write the partition's CSV, Parquet and HTML under ``home`` (RECON_HOME by default)."""
    folder = partition_folder(property_row.property_id, night, home)
    findings = partition_discrepancies(connection, property_row.property_id, night)
    recent = findings_between(
        connection, property_row.property_id, first_night_shown(night), parse_night(night)
    )
    page = ReportPage(property_row, night, findings, recent, night_report, (CSV_NAME, PARQUET_NAME))
    return ReportFiles(
        csv=write_csv(findings, folder / CSV_NAME),
        parquet=write_parquet(findings, folder / PARQUET_NAME),
        html=write_text(render_report_html(page), folder / HTML_NAME),
        rows=len(findings),
    )
