"""Plain-text views of the outbox for ``recon postings list|show`` (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

_NONE = "-"
LIST_COLUMNS = ("adjustment_id", "state", "attempts", "next_attempt_at", "pms_reference", "last_error")


def _text(value: Any) -> str:
    if value is None:
        return _NONE
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return " ".join(str(value).split())  # one line, whatever the PMS said


def postings_list_text(rows: Sequence[Mapping[Any, Any]]) -> str:
    """One line per outbox row, oldest first, columns separated by two spaces."""
    if not rows:
        return "no postings match"
    return "\n".join("  ".join(_text(row[name]) for name in LIST_COLUMNS) for row in rows)


def posting_show_text(row: Mapping[Any, Any]) -> str:
    """Every column of the outbox row, ``name: value`` one per line."""
    return "\n".join(f"{name}: {_text(value)}" for name, value in row.items())
