"""Temporary bridge for the per-partition ``discrepancy_report`` asset of ``defs/assets.py``, which is
being rewritten into a night summary that writes no file: delete this module when that lands.

It renders through ``reports.render`` (the on-demand path, database only) into ``RECON_HOME/reports``, so
the old asset keeps working meanwhile; the run's in-memory ``NightReport`` is no longer used for files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection

from recon_pipeline.ledger.queries import PropertyRow
from recon_pipeline.money import format_minor
from recon_pipeline.reconcile.report import NightReport, markdown_table
from recon_pipeline.reports.paths import CSV, HTML, PARQUET, reports_root
from recon_pipeline.reports.render import render_night
from recon_pipeline.review.adjustments import adjustment_states

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
    """The old asset's call: every format under ``home``/reports (``night_report`` is not read)."""
    rendered = render_night(connection, property_row, night, reports_root(home))
    states = adjustment_states(connection, property_row.property_id, night, format_minor)
    paths = rendered.paths
    return ReportFiles(paths[CSV], paths[PARQUET], paths[HTML], rendered.rows, states)
