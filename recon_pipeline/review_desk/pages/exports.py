"""Downloads from the desk: every list (findings, adjustments, nights, payouts, matches) as CSV
(formula-safe) or xlsx ready for Excel, and a night's HTML report; each narrowed to the user's properties
like the page it comes from.

A list's export runs the list's own statement (``findings_statement``, ``queue_statement``,
``payouts_statement``, ``matches_statement``) or summary (``nights.summarise``) over the same parsed
filters, so it holds exactly the rows the page shows, up to ``EXPORT_LIMIT`` rather than the page's 200; a
cut export says so in its file name and the ``X-Export-Truncated`` header. Its columns are the list's
sheet (``review_desk.sheets``: human headers, amounts in major units, dates, moments in the property's time
zone, per-currency totals); the bytes come from ``reports.exports`` (the writers ``recon report``'s files
share) and the night's page from ``reports.render`` (the same page as ``recon report night``). Every
download writes an ``export`` audit row: who took which rows out of the desk.

A list's file is read and written in one of the desk's export processes (``Workers.in_process``), which
reads the rows itself on its own connection to the desk's database: a 100,000-row workbook is tens of
seconds of pure-Python CPU that, in the desk's process, would hold the GIL against every page. An app
served without its lifespan (no processes) writes the same file in the download's thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, Select, select
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import properties
from recon_pipeline.keys import parse_night
from recon_pipeline.ledger.queries import UnknownPropertyError, load_property
from recon_pipeline.properties import InvalidPropertyError
from recon_pipeline.reports.exports import sheet_csv_bytes, sheet_xlsx_bytes
from recon_pipeline.reports.html import served_content_security_policy
from recon_pipeline.reports.render import render_night_html
from recon_pipeline.reports.sheets import Row, Sheet
from recon_pipeline.review_desk import adjustments, findings, matches, nights, payouts, sheets
from recon_pipeline.review_desk.listing import amount_search, parse_sort
from recon_pipeline.review_desk.pages.adjustments import parse_adjustment_query, parse_adjustment_sort
from recon_pipeline.review_desk.pages.filters import optional_param
from recon_pipeline.review_desk.pages.findings import parse_finding_query
from recon_pipeline.review_desk.pages.matches import parse_match_filter
from recon_pipeline.review_desk.pages.nights import parse_night_query
from recon_pipeline.review_desk.pages.payouts import parse_payout_query
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk, UserHandler

EXPORT_LIMIT = 100_000  # rows; bounds the memory and time of one download
CSV = "csv"
XLSX = "xlsx"
MEDIA_TYPES = {
    CSV: "text/csv",  # Starlette adds "; charset=utf-8"
    XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}
TRUNCATED_HEADER = "x-export-truncated"
_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9_.-]+")

# Reads a list's rows (at most the export's limit + 1, to know whether it was cut).
RowsReader = Callable[[Connection], Sequence[Row]]
# A list's filters (query parameters), its user and the export's limit → the reader of its rows and the
# labels naming them in the file name.
ExportQuery = Callable[[Any, ReviewUser, int], tuple[RowsReader, list[str]]]


@dataclass(frozen=True)
class ExportFile:
    """A list's file: its bytes, how many rows it holds, and whether it was cut at the limit."""

    body: bytes
    rows: int
    truncated: bool


def routes(desk: Desk) -> list[Route]:
    """``/{list}/export.{csv,xlsx}`` for each list of ``EXPORT_QUERIES``, and the night's report: each a
    download (``Desk.download``), which takes one of the desk's few download turns, not a page's thread.

    The app lists these before the other page areas, whose ``/{id}`` routes would otherwise take
    ``export.csv`` for an id."""

    def list_export(name: str, file_format: str) -> UserHandler:
        def endpoint(request: Request, user: ReviewUser) -> Response:
            limit = EXPORT_LIMIT
            try:
                _reader, labels = EXPORT_QUERIES[name](request.query_params, user, limit)
            except ValueError as error:  # refused here, before a process is asked for anything
                return PlainTextResponse(str(error), status_code=400)
            exported = _exported(desk, name, file_format, request.url.query, user, limit)
            counted = f"{exported.rows} row" if exported.rows == 1 else f"{exported.rows} rows"
            detail = f"{name} {file_format} {counted}" + (" (cut at the limit)" if exported.truncated else "")
            desk.audit(user.name, "export", target=request.url.query, detail=detail)
            filename = export_filename(name, labels, file_format, exported.truncated, limit)
            headers = {"content-disposition": f'attachment; filename="{filename}"'}
            if exported.truncated:
                headers[TRUNCATED_HEADER] = f"first {limit} rows"
            return Response(exported.body, media_type=MEDIA_TYPES[file_format], headers=headers)

        return endpoint

    def night_report(request: Request, user: ReviewUser) -> Response:
        property_id = request.path_params["property_id"]
        night = request.path_params["night"]
        try:
            parse_night(night)
        except ValueError:
            return desk.not_found(request, user)
        if property_id not in user.properties:
            return desk.not_found(request, user)
        page = _night_page(desk, property_id, night)
        if page is None:
            return desk.not_found(request, user)
        desk.audit(user.name, "export", target=f"{property_id}/{night}", detail="night report html")
        return HTMLResponse(page, headers={"content-security-policy": served_content_security_policy()})

    return [
        *(
            Route(
                f"/{name}/export.{file_format}",
                desk.download(list_export(name, file_format)),
                methods=["GET"],
            )
            for name in EXPORT_QUERIES
            for file_format in (CSV, XLSX)
        ),
        Route("/nights/{property_id}/{night}/report.html", desk.download(night_report), methods=["GET"]),
    ]


def statement_rows(statement: Select[Any]) -> RowsReader:
    """The reader of a list whose rows are one statement's."""
    return lambda connection: list(connection.execute(statement).mappings())


def findings_export(params: Any, user: ReviewUser, limit: int) -> tuple[RowsReader, list[str]]:
    """The findings list's statement for these filters (ValueError for a bad one) and the file's labels."""
    query = parse_finding_query(params, user)
    where = query.where
    labels = [
        *_given(where.property_id),
        *_night_range(query.night_from, query.night_to),
        *_given(where.category, where.status),
        *([] if where.cleared is None else ["cleared" if where.cleared else "not-cleared"]),
        *([] if query.amount_at_least is None else [f"at-least-{query.amount_at_least}"]),
    ]
    return statement_rows(findings.findings_statement(query, user.properties, limit + 1)), labels


def adjustments_export(params: Any, user: ReviewUser, limit: int) -> tuple[RowsReader, list[str]]:
    """The adjustments queue's statement for these filters, tab and order, and the file's labels."""
    query = parse_adjustment_query(params, user)
    sort = parse_adjustment_sort(params)
    labels = [
        *([] if query.tab == adjustments.ALL else [query.tab]),
        *_given(query.where.property_id),
        *_night_range(query.night_from, query.night_to),
        *_given(query.state),
    ]
    statement = adjustments.queue_statement(query, user.properties, limit + 1, sort=sort)
    return statement_rows(statement), labels


def payouts_export(params: Any, user: ReviewUser, limit: int) -> tuple[RowsReader, list[str]]:
    """The payouts list's statement for these filters and the file's labels."""
    query = parse_payout_query(params, user)
    labels = [
        *_given(query.property_id),
        *_night_range(query.arrival_from, query.arrival_to),
        *_given(query.status),
    ]
    return statement_rows(payouts.payouts_statement(query, user.properties, limit + 1)), labels


def nights_export(params: Any, user: ReviewUser, limit: int) -> tuple[RowsReader, list[str]]:
    """The nights overview for these filters (one row per property-night and category) and the labels;
    its range bounds it, and ``written_file`` cuts it at ``limit`` like any list."""
    query = parse_night_query(params, user)

    def read_rows(connection: Connection) -> list[dict[str, Any]]:
        keys = nights.chosen_nights(connection, query, user.properties)
        return sheets.night_rows(nights.summarise(connection, keys, user.properties), datetime.now(UTC))

    return read_rows, [*_given(query.property_id), *_night_range(query.night_from, query.night_to)]


def matches_export(params: Any, user: ReviewUser, limit: int) -> tuple[RowsReader, list[str]]:
    """The matches list's statement for these filters, search and order, and the file's labels."""
    where = parse_match_filter(params, user)
    search = optional_param(params, "q")
    if search is not None:
        amount_search(search)  # a reversed amount range: refused, as the list refuses it
    sort = parse_sort(params, matches.SORT_COLUMNS, matches.DEFAULT_SORT.word)
    labels = [
        *_given(where.property_id, where.night, where.status, where.rule),
        *([] if where.cleared is None else ["cleared" if where.cleared else "not-cleared"]),
    ]
    statement = matches.matches_statement(where, user.properties, limit + 1, 0, search, sort)
    return statement_rows(statement), labels


def export_filename(
    name: str, labels: Sequence[str], file_format: str, truncated: bool, limit: int = EXPORT_LIMIT
) -> str:
    """``findings-p1-2026-12-01_2026-12-02.csv``: the list and its filters, in characters any file system
    and a Content-Disposition header take as they are; ``-first-100000`` when the export was cut."""
    parts = [name, *labels, *([f"first-{limit}"] if truncated else [])]
    stem = "-".join(_UNSAFE_IN_FILENAME.sub("_", part) for part in parts)
    return f"{stem}.{file_format}"


def _given(*values: str | None) -> list[str]:
    return [value for value in values if value is not None]


def _night_range(night_from: str | None, night_to: str | None) -> list[str]:
    if night_from is None and night_to is None:
        return []
    if night_to is None:
        return [f"from-{night_from}"]
    if night_from is None:
        return [f"to-{night_to}"]
    return [f"{night_from}_{night_to}"]


# Each list the desk exports: its filters' reader and its sheet.
EXPORT_QUERIES: dict[str, ExportQuery] = {
    "findings": findings_export,
    "adjustments": adjustments_export,
    "nights": nights_export,
    "payouts": payouts_export,
    "matches": matches_export,
}
SHEETS: dict[str, Sheet] = {
    "findings": sheets.FINDINGS,
    "adjustments": sheets.ADJUSTMENTS,
    "nights": sheets.NIGHTS,
    "payouts": sheets.PAYOUTS,
    "matches": sheets.MATCHES,
}


def _exported(
    desk: Desk, name: str, file_format: str, query: str, user: ReviewUser, limit: int
) -> ExportFile:
    """The list's file, written in an export process when the app's lifespan started them, else here."""
    if desk.workers.has_processes:
        return desk.workers.in_process(export_file, name, file_format, query, user, limit)
    with desk.engine.connect() as connection:
        return written_file(connection, name, file_format, query, user, limit)


_process_engine: list[Engine] = []  # an export process's own engine, opened as it starts


def open_database(database_url: str) -> None:
    """An export process's start: its engine on the desk's database, one connection (one export at a
    time per process)."""
    _process_engine.append(make_engine(database_url, pool_size=1))


def export_file(name: str, file_format: str, query: str, user: ReviewUser, limit: int) -> ExportFile:
    """In an export process: list ``name``'s file for ``query`` (the download's query string) as ``user``
    sees it, its rows read on the process's own engine."""
    with _process_engine[0].connect() as connection:
        return written_file(connection, name, file_format, query, user, limit)


def written_file(
    connection: Connection, name: str, file_format: str, query: str, user: ReviewUser, limit: int
) -> ExportFile:
    """The file of the list's first ``limit`` rows, their count, and whether it was cut (the reader
    returns one row more than the limit to know)."""
    read_rows, _labels = EXPORT_QUERIES[name](QueryParams(query), user, limit)
    sheet = SHEETS[name]
    rows = read_rows(connection)
    truncated = len(rows) > limit
    rows = rows[:limit]
    zones = timezones(connection, {sheet.property_id(row) for row in rows})
    write = sheet_csv_bytes if file_format == CSV else sheet_xlsx_bytes
    return ExportFile(write(sheet, rows, zones), len(rows), truncated)


def timezones(connection: Connection, property_ids: set[str]) -> dict[str, str]:
    """Each property's time zone (IANA name), the zone its rows' moments are shown in."""
    if not property_ids:
        return {}
    statement = select(properties.c.property_id, properties.c.timezone).where(
        properties.c.property_id.in_(sorted(property_ids))
    )
    return {row.property_id: row.timezone for row in connection.execute(statement)}


def _night_page(desk: Desk, property_id: str, night: str) -> str | None:
    """The night's report page, or None for a property the table does not hold (or holds invalid)."""
    with desk.engine.connect() as connection:
        try:
            property_row = load_property(connection, property_id)
        except (UnknownPropertyError, InvalidPropertyError):
            return None
        return render_night_html(connection, property_row, night)
