"""Report files, written atomically: a reader (or a browser) sees the previous file or the new one, whole.

The CSV and xlsx writers are built on ``csv_bytes`` and ``xlsx_bytes``, which the review desk's downloads
use too. Each writer fills a temporary file beside the target and ``os.replace``s it into place, so a crash
mid-write leaves the old report, and a re-run with the same rows writes the same bytes.

CSV files are opened in spreadsheets, and their text cells come from the PMS, the provider and the desk's
users (ids, names, metadata, review notes): a cell such as ``=HYPERLINK(...)`` would run as a formula.
Text cells are therefore neutralised as OWASP's "CSV Injection" advises, and every cell is quoted: Excel
where the list separator is ``;`` splits an unquoted ``memo;=cmd|...`` into two cells, the second a
formula. Parquet is data for programs and keeps every value exact.
An xlsx cell carries its type, so a text cell is written as a string (never a formula) with no visible
prefix.

``sheet_csv_bytes`` and ``sheet_xlsx_bytes`` write a declared sheet (``reports.sheets``: human headers,
typed columns, per-currency totals): the review desk's list exports.
"""

from __future__ import annotations

import csv
import io
import os
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from recon_pipeline.reports.sheets import Cell, Kind, Row, Sheet, totals_rows, typed_rows

# OWASP "CSV Injection": text a spreadsheet runs as a formula starts with a tab, a carriage return, or
# "=", "+", "-" or "@" (blanks before it included), at the cell's start or after a separator a spreadsheet
# may split the cell at: "," or ";" (Excel's list separator in many locales), a tab or a line break.
FORMULA_START = re.compile(r"^[\t\r]|(?:^|[,;\t\r\n])\s*[=+\-@]")


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """``csv_bytes(frame)`` written atomically to ``path``."""
    return _atomically(path, lambda temp: temp.write_bytes(csv_bytes(frame)))


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """Every column of ``frame`` as UTF-8 CSV, every cell quoted; nulls are empty cells, timestamps ISO 8601
    with their UTC offset, and text cells that a spreadsheet would run as a formula prefixed with ``'``
    (numbers stay numbers: a spreadsheet reads a quoted number as a number). Bytes rather than a file, so a
    file and an HTTP download are the same code.

    Lines end in CRLF (RFC 4180): Python's CSV writer quotes a cell holding a line terminator's character,
    so a carriage return inside a PMS field stays inside its cell instead of splitting the row."""
    text = frame.assign(
        **{
            name: frame[name].map(lambda moment: moment.isoformat(), na_action="ignore")
            for name in frame.columns
            if isinstance(frame[name].dtype, pd.DatetimeTZDtype)
        }
    )
    text = text.assign(
        **{
            name: text[name].map(neutralise_formula, na_action="ignore")
            for name in text.columns
            if pd.api.types.is_string_dtype(text[name].dtype)  # object columns too
        }
    )
    return text.to_csv(index=False, lineterminator="\r\n", quoting=csv.QUOTE_ALL).encode("utf-8")


def neutralise_formula(cell: object) -> object:
    """``cell`` with a leading ``'`` if it is text a spreadsheet would run as a formula, whole or split at a
    separator (``FORMULA_START``), else unchanged. The writers quote every cell, so a split part stays
    inside its cell."""
    if isinstance(cell, str) and FORMULA_START.search(cell):
        return "'" + cell
    return cell


def write_xlsx(frame: pd.DataFrame, path: Path, sheet: str) -> Path:
    """``xlsx_bytes(frame, sheet)`` written atomically to ``path``."""
    return _atomically(path, lambda temp: temp.write_bytes(xlsx_bytes(frame, sheet)))


def xlsx_bytes(frame: pd.DataFrame, sheet: str) -> bytes:
    """Every column of ``frame`` on one sheet with a bold header; nulls are empty cells, timestamps ISO
    8601 text, and text typed as text (``_text_cell``). Bytes rather than a file, so a file and an HTTP
    download are the same code.

    The workbook is write-only (rows streamed, not kept as cell objects) and nulls are found once for the
    whole frame: a 100,000-row export is a download, not a wait at a proxy's timeout."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    def cell(value: object) -> object:
        if isinstance(value, pd.Timestamp):
            return value.isoformat()
        plain = value.item() if hasattr(value, "item") else value
        return _text_cell(worksheet, plain) if isinstance(plain, str) and plain.startswith("=") else plain

    book = Workbook(write_only=True)
    worksheet = book.create_sheet(sheet)
    worksheet.freeze_panes = "A2"
    bold = Font(bold=True)
    header = []
    for name in frame.columns:
        title = WriteOnlyCell(worksheet, value=str(name))
        title.font = bold
        header.append(title)
    worksheet.append(header)
    values = frame.astype(object).where(frame.notna(), None)
    for record in values.itertuples(index=False):
        worksheet.append([None if value is None else cell(value) for value in record])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _text_cell(worksheet: Any, text: str) -> Any:
    """A write-only cell holding ``text`` as a string: openpyxl takes a string starting with ``=`` for a
    formula (and only that: ``+``, ``-``, ``@`` stay strings), so the type is set after the value. A string
    cell is never run, so it needs no ``'``."""
    from openpyxl.cell import WriteOnlyCell

    cell = WriteOnlyCell(worksheet, value=text)
    cell.data_type = "s"
    return cell


# Excel's number formats: an amount with its currency's decimals, a night, a moment to the minute.
DATE_FORMAT = "yyyy-mm-dd"
MOMENT_FORMAT = "yyyy-mm-dd hh:mm"
NUMBER_FORMAT = "0.00"


def amount_format(exponent: int) -> str:
    """``#,##0.00`` for a two-decimal currency, ``#,##0`` for JPY, ``#,##0.000`` for KWD."""
    return "#,##0" + ("." + "0" * exponent if exponent else "")


def sheet_csv_bytes(sheet: Sheet, rows: Sequence[Row], timezones: Mapping[str, str]) -> bytes:
    """The sheet as UTF-8 CSV (CRLF lines, every cell quoted as ``csv_bytes``'s): its headers, a line per row,
    then an empty line and a totals line per currency (the empty line ends the data where a spreadsheet's
    sort or filter looks).

    Amounts are numbers in major units with the currency's decimals (``-15.00``; ``1200`` for JPY), dates
    ``YYYY-MM-DD``, moments ISO 8601 in the property's time zone with its offset. Only text cells get the
    formula guard's ``'``: an amount, count or date is written by this code from a number, so a leading
    ``-`` is a negative number a spreadsheet must read as one, never text from outside."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n", quoting=csv.QUOTE_ALL)
    writer.writerow([column.header for column in sheet.columns])
    writer.writerows([_csv_cell(cell) for cell in line] for line in typed_rows(sheet, rows, timezones))
    totals = totals_rows(sheet, rows)
    if totals:
        writer.writerow([])
        writer.writerows([_csv_cell(cell) for cell in line] for line in totals)
    return buffer.getvalue().encode("utf-8")


def _csv_cell(cell: Cell) -> object:
    if cell.value is None:
        return ""
    if cell.kind is Kind.TEXT:
        return neutralise_formula(cell.value)
    if cell.kind is Kind.AMOUNT:
        return f"{cell.value:.{cell.exponent}f}"
    if cell.kind is Kind.MOMENT and cell.moment is not None:
        return cell.moment.isoformat(timespec="seconds")
    if cell.kind is Kind.NUMBER:
        return f"{cell.value:.2f}"
    if cell.kind is Kind.DATE:
        return cell.value.isoformat()
    return cell.value


def sheet_xlsx_bytes(sheet: Sheet, rows: Sequence[Row], timezones: Mapping[str, str]) -> bytes:
    """The sheet as an xlsx workbook for Excel: a bold header row, frozen, an autofilter over the header
    and the data, each column its width, amounts as numbers in major units (``#,##0.00`` per currency),
    nights as date cells, moments as the property's local date-times (Excel has no time zones), text as
    strings, then an empty row and a bold totals row per currency (values, so they read back as the sums).

    Write-only (rows streamed): a 100,000-row export is a download, not a wait at a proxy's timeout."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    book = Workbook(write_only=True)
    worksheet = book.create_sheet(sheet.title)
    worksheet.freeze_panes = "A2"
    for index, column in enumerate(sheet.columns, start=1):
        worksheet.column_dimensions[get_column_letter(index)].width = column.width
    bold = Font(bold=True)

    def xlsx_cell(cell: Cell, font: Font | None = None) -> Any:
        """A cell object where the value needs a type or a style; the bare value (written through one
        reused cell, much faster on 100,000 rows) where it needs neither."""
        value = cell.value
        if value is None:
            return None
        if cell.kind is Kind.TEXT:
            if font is None and not value.startswith("="):
                return value
            written = _text_cell(worksheet, value)
        elif cell.kind in _FORMATS:
            written = WriteOnlyCell(worksheet, value=value)
            written.number_format = _FORMATS[cell.kind](cell.exponent)
        elif font is None:
            return value
        else:
            written = WriteOnlyCell(worksheet, value=value)
        if font is not None:
            written.font = font
        return written

    worksheet.append([xlsx_cell(Cell(Kind.TEXT, column.header), bold) for column in sheet.columns])
    cells = typed_rows(sheet, rows, timezones)
    for line in cells:
        worksheet.append([xlsx_cell(cell) for cell in line])
    worksheet.auto_filter.ref = f"A1:{get_column_letter(len(sheet.columns))}{len(cells) + 1}"
    totals = totals_rows(sheet, rows)
    if totals:
        worksheet.append([])
        for line in totals:
            worksheet.append([xlsx_cell(cell, bold) for cell in line])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


_FORMATS: dict[Kind, Callable[[int], str]] = {
    Kind.AMOUNT: amount_format,
    Kind.DATE: lambda _: DATE_FORMAT,
    Kind.MOMENT: lambda _: MOMENT_FORMAT,
    Kind.NUMBER: lambda _: NUMBER_FORMAT,
}


def write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    """Every column of ``frame`` with its dtype (nullable integers, UTC timestamps) kept."""
    return _atomically(path, lambda temp: frame.to_parquet(temp, index=False, engine="pyarrow"))


def write_text(text: str, path: Path) -> Path:
    """A UTF-8 text file."""
    return _atomically(path, lambda temp: temp.write_text(text, encoding="utf-8"))


def _atomically(path: Path, write: Callable[[Path], object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        write(temp)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return path
