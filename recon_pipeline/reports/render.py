"""Report files rendered on demand from the committed tables: never a cost of the nightly run.

A night's run commits its findings to ``discrepancies`` and its proposals to ``adjustments``; a report is
read back from those (and ``properties``) whenever someone asks for it (``recon report night``), on
whichever host asks, so nothing a run writes to local disk is needed by another host. Under the root
(``RECON_HOME/reports`` unless ``--out`` names another):

- ``<property>/<night>/discrepancies.csv`` and ``discrepancies.parquet``: every column of the night's rows
  of ``discrepancies`` ordered by category and record key, cleared ones with their ``cleared_at``, and each
  finding's ``adjustment`` state (``proposed 120.00 EUR``, ``approved …``, ``withdrawn``; empty for a
  finding that proposed none);
- ``<property>/<night>/report.html``: the outstanding findings, the night's matches and its takings
  (``reports.html``). The run's provider and ledger totals, matched figures and timing differences are not
  in the database, so no on-demand report shows them: they stay in the run's Dagster metadata;
- ``_overview/open_discrepancies.csv`` and ``_overview/orphaned_payments.csv`` (``recon report
  overview``): the cross-night views the ``reports`` assets show as markdown.

Every file is rebuilt from the tables and replaced atomically, so rendering twice over unchanged rows
writes the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd
from sqlalchemy import Connection

from recon_pipeline.keys import parse_night
from recon_pipeline.ledger.queries import UnknownPropertyError, list_properties, load_property
from recon_pipeline.money import format_minor
from recon_pipeline.properties import InvalidPropertyError, PropertyRow, split_valid_properties
from recon_pipeline.reports.exports import write_csv, write_parquet, write_text
from recon_pipeline.reports.html import ReportPage, first_night_shown, render_report_html
from recon_pipeline.reports.overview import open_overview, orphans_overview
from recon_pipeline.reports.paths import (
    CSV,
    FILE_NAMES,
    FORMATS,
    HTML,
    OPEN_CSV,
    ORPHANS_CSV,
    PARQUET,
    night_folder,
    overview_folder,
)
from recon_pipeline.reports.queries import (
    findings_between,
    partition_findings,
    partition_matches,
    partition_takings,
)
from recon_pipeline.review.adjustments import adjustment_states

ADJUSTMENT_COLUMN = "adjustment"


@dataclass(frozen=True)
class RenderedNight:
    """The files rendered for one property-night, and what they hold."""

    property_id: str
    night: str
    paths: dict[str, Path]  # format → file
    rows: int  # rows of ``discrepancies`` in the exports
    outstanding: int  # of them, not cleared: the findings on the page

    def summary(self) -> str:
        """One line for a terminal: the property-night, its counts and its files."""
        files = ", ".join(str(path) for path in self.paths.values())
        return (
            f"{self.property_id} {self.night}: {self.rows} findings ({self.outstanding} outstanding) -> "
            f"{files}"
        )


def report_properties(
    connection: Connection, property_ids: Sequence[str]
) -> tuple[list[PropertyRow], list[InvalidPropertyError]]:
    """The named properties (UnknownPropertyError or InvalidPropertyError for the first that is not a
    valid row: nothing is rendered for a mistyped id), or with none named every valid property and one
    error per invalid row, so a bad row fails that property alone."""
    if property_ids:
        return [load_property(connection, property_id) for property_id in dict.fromkeys(property_ids)], []
    valid, invalid = split_valid_properties(list_properties(connection))
    if not valid and not invalid:
        raise UnknownPropertyError("the properties table holds no property: there is nothing to render")
    return valid, invalid


def render_night(
    connection: Connection,
    property_row: PropertyRow,
    night: str,
    root: Path | None = None,
    formats: Sequence[str] = FORMATS,
) -> RenderedNight:
    """Write ``formats`` of the property-night under ``root`` (default ``RECON_HOME/reports``), read from
    ``discrepancies`` and ``adjustments`` as committed; the page links the exports written with it."""
    folder = night_folder(property_row.property_id, night, root)
    findings = night_findings(connection, property_row, night)
    outstanding = findings[findings["cleared_at"].isna()].reset_index(drop=True)
    paths: dict[str, Path] = {}
    if CSV in formats:
        paths[CSV] = write_csv(findings, folder / FILE_NAMES[CSV])
    if PARQUET in formats:
        paths[PARQUET] = write_parquet(findings, folder / FILE_NAMES[PARQUET])
    if HTML in formats:
        exports = tuple(path.name for path in paths.values())
        page = render_night_html(connection, property_row, night, findings, exports)
        paths[HTML] = write_text(page, folder / FILE_NAMES[HTML])
    return RenderedNight(property_row.property_id, night, paths, len(findings), len(outstanding))


def night_findings(connection: Connection, property_row: PropertyRow, night: str) -> pd.DataFrame:
    """Every column of the property-night's rows of ``discrepancies``, with each one's adjustment state."""
    findings = partition_findings(connection, property_row.property_id, night)
    states = adjustment_states(connection, property_row.property_id, night, format_minor)
    return with_adjustment_state(findings, states)


def render_night_html(
    connection: Connection,
    property_row: PropertyRow,
    night: str,
    findings: pd.DataFrame | None = None,
    files: Sequence[str] = (),
) -> str:
    """The property-night's HTML page as a string (``reports.html``): written beside its exports by
    ``render_night``, served as it is by the review desk. ``findings`` are ``night_findings`` if already
    read; ``files`` name the exports beside the page (none when it is served alone)."""
    if findings is None:
        findings = night_findings(connection, property_row, night)
    outstanding = findings[findings["cleared_at"].isna()].reset_index(drop=True)
    recent = findings_between(
        connection, property_row.property_id, first_night_shown(night), parse_night(night)
    )
    cleared = len(findings) - len(outstanding)
    matched = partition_matches(connection, property_row.property_id, night)
    takings = partition_takings(connection, property_row.property_id, night)
    return render_report_html(
        ReportPage(property_row, night, outstanding, cleared, recent, files, matched, takings)
    )


def with_adjustment_state(findings: pd.DataFrame, states: dict[tuple[str, str], str]) -> pd.DataFrame:
    """``findings`` with an ``adjustment`` column: its state, empty for a finding that proposed none."""
    keys = zip(findings["category"].astype("object"), findings["record_key"].astype("object"), strict=True)
    column = pd.Series([states.get(key, "") for key in keys], index=findings.index, dtype="string")
    return findings.assign(**{ADJUSTMENT_COLUMN: column})


def render_overviews(connection: Connection, now: datetime, root: Path | None = None) -> dict[Path, int]:
    """Write the two cross-night overviews, as of ``now``, under ``root``/_overview; each file's rows."""
    folder = overview_folder(root)
    overview, _findings = open_overview(connection, now.date())
    orphans = orphans_overview(connection, now)
    return {
        write_csv(overview, folder / OPEN_CSV): len(overview),
        write_csv(orphans, folder / ORPHANS_CSV): len(orphans),
    }
