"""Report files, written atomically: a reader (or a browser) sees the previous file or the new one, whole.

The CSV and xlsx writers are built on ``csv_bytes`` and ``xlsx_bytes``, which the review desk's downloads
use too. Each writer fills a temporary file beside the target and ``os.replace``s it into place, so a crash
mid-write leaves the old report, and a re-run with the same rows writes the same bytes.

CSV files are opened in spreadsheets, and their text cells come from the PMS and the provider (ids,
names, metadata): a cell such as ``=HYPERLINK(...)`` would run as a formula. Text cells are therefore
neutralised as OWASP's "CSV Injection" advises; Parquet is data for programs and keeps every value exact.
"""

from __future__ import annotations

import io
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pandas as pd

# OWASP "CSV Injection": a cell starting with one of these is read as a formula by spreadsheets.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """``csv_bytes(frame)`` written atomically to ``path``."""
    return _atomically(path, lambda temp: temp.write_bytes(csv_bytes(frame)))


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """Every column of ``frame`` as UTF-8 CSV; nulls are empty cells, timestamps ISO 8601 with their UTC
    offset, and text cells that a spreadsheet would run as a formula prefixed with ``'`` (numbers stay
    numbers). Bytes rather than a file, so a file and an HTTP download are the same code.

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
    return text.to_csv(index=False, lineterminator="\r\n").encode("utf-8")


def neutralise_formula(cell: object) -> object:
    """``cell`` with a leading ``'`` if it is text a spreadsheet would run as a formula, else unchanged."""
    if isinstance(cell, str) and cell.startswith(FORMULA_PREFIXES):
        return "'" + cell
    return cell


def write_xlsx(frame: pd.DataFrame, path: Path, sheet: str) -> Path:
    """``xlsx_bytes(frame, sheet)`` written atomically to ``path``."""
    return _atomically(path, lambda temp: temp.write_bytes(xlsx_bytes(frame, sheet)))


def xlsx_bytes(frame: pd.DataFrame, sheet: str) -> bytes:
    """Every column of ``frame`` on one sheet with a bold header; nulls are empty cells, timestamps ISO
    8601 text, and text neutralised as in CSV (openpyxl stores a string starting with ``=`` as a
    formula). Bytes rather than a file, so a file and an HTTP download are the same code.

    The workbook is write-only (rows streamed, not kept as cell objects) and nulls are found once for the
    whole frame: a 100,000-row export is a download, not a wait at a proxy's timeout."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    def cell(value: object) -> object:
        if isinstance(value, pd.Timestamp):
            return value.isoformat()
        return neutralise_formula(value.item() if hasattr(value, "item") else value)

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
