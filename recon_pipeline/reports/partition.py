"""The exports of one property-night, read back from ``discrepancies`` after the asset committed it.

``RECON_HOME/reports/<property>/<night>/`` holds ``discrepancies.csv`` and ``discrepancies.parquet``
(every column of the table, the partition's rows ordered by category and record key, cleared ones with
their ``cleared_at``, and each finding's ``adjustment`` state: ``proposed 120.00 EUR``, ``approved …``,
``withdrawn``) and ``report.html`` (the outstanding findings only). Everything is rebuilt from the
table on every run, so a re-run over unchanged rows rewrites the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from sqlalchemy import Connection

from recon_pipeline.keys import parse_night
from recon_pipeline.ledger.queries import PropertyRow
from recon_pipeline.money import format_minor
from recon_pipeline.reconcile.report import NightReport, markdown_table
from recon_pipeline.reports.exports import write_csv, write_parquet, write_text
from recon_pipeline.reports.html import ReportPage, first_night_shown, render_report_html
from recon_pipeline.reports.paths import partition_folder
from recon_pipeline.reports.queries import findings_between, partition_discrepancies
from recon_pipeline.review.adjustments import adjustment_states

CSV_NAME = "discrepancies.csv"
PARQUET_NAME = "discrepancies.parquet"
HTML_NAME = "report.html"
ADJUSTMENT_COLUMN = "adjustment"
STATES_SHOWN = 20  # findings listed with their adjustment state in the UI's metadata


@dataclass(frozen=True)
class ReportFiles:
    """The files one partition's export wrote, and how many discrepancy rows they hold."""

    csv: Path
    parquet: Path
    html: Path
    rows: int
    # (category, record_key) → adjustment state, for findings that ever proposed an adjustment
    adjustment_states: dict[tuple[str, str], str] = field(default_factory=dict)

    def adjustment_states_markdown(self) -> str:
        """The findings' adjustment states as a markdown table (the first STATES_SHOWN)."""
        if not self.adjustment_states:
            return "_No adjustments._"
        rows = [
            [category, f"`{record_key}`", state]
            for (category, record_key), state in sorted(self.adjustment_states.items())[:STATES_SHOWN]
        ]
        more = len(self.adjustment_states) - STATES_SHOWN
        return markdown_table(["category", "record", "adjustment"], rows) + (
            f"\n\n_and {more} more in the CSV._" if more > 0 else ""
        )


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
    states = adjustment_states(connection, property_row.property_id, night, format_minor)
    findings = with_adjustment_state(findings, states)
    recent = findings_between(
        connection, property_row.property_id, first_night_shown(night), parse_night(night)
    )
    outstanding = findings[findings["cleared_at"].isna()].reset_index(drop=True)
    page = ReportPage(property_row, night, outstanding, recent, night_report, (CSV_NAME, PARQUET_NAME))
    return ReportFiles(
        csv=write_csv(findings, folder / CSV_NAME),
        parquet=write_parquet(findings, folder / PARQUET_NAME),
        html=write_text(render_report_html(page), folder / HTML_NAME),
        rows=len(findings),
        adjustment_states=states,
    )


def with_adjustment_state(findings: pd.DataFrame, states: dict[tuple[str, str], str]) -> pd.DataFrame:
    """``findings`` with an ``adjustment`` column: its state, empty for a finding that proposed none."""
    keys = zip(findings["category"].astype("object"), findings["record_key"].astype("object"), strict=True)
    column = pd.Series([states.get(key, "") for key in keys], index=findings.index, dtype="string")
    return findings.assign(**{ADJUSTMENT_COLUMN: column})
