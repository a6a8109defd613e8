"""Plain text for `recon findings`: amounts in major units of their currency (JPY has no decimals)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from recon_pipeline.money import format_minor
from recon_pipeline.reconcile.report import finding_amounts, plain_table
from recon_pipeline.review.rules import status_after

AMOUNT_COLUMNS = (
    "provider_amount_minor",
    "ledger_amount_minor",
    "difference_minor",
    "reviewed_difference_minor",
    "amount_minor",  # of an adjustment
)
LIST_HEADER = ("id", "property", "night", "category", "record", "difference", "status", "reviewed by")
ADJUSTMENT_HEADER = ("id", "property", "night", "kind", "record", "rev", "amount", "status", "finding")
_NONE = "-"


def money(amount: int | None, currency: str) -> str:
    """``12.50 EUR``, ``1,000 JPY``; ``-`` for no amount."""
    return _NONE if amount is None else format_minor(int(amount), currency)


def list_text(rows: Sequence[Mapping[Any, Any]], total: int) -> str:
    """A table of findings, then how many of the matching ones it shows."""
    if not rows:
        return "no findings match"
    table = [
        [
            str(row["discrepancy_id"]),
            row["property_id"],
            row["night"],
            row["category"],
            row["record_key"],
            difference_text(row),
            row["review_status"] + (", cleared" if row.get("cleared_at") is not None else ""),
            row["reviewed_by"] or _NONE,
        ]
        for row in rows
    ]
    shown = f"{len(rows)} of {total} matching" + (" (raise --limit to see more)" if total > len(rows) else "")
    return f"{plain_table(LIST_HEADER, table)}\n{shown}"


def findings_markdown(rows: Sequence[Mapping[Any, Any]]) -> str:
    """A markdown list of findings (id, record, amount, why), for check metadata in the UI."""
    lines = [
        f"- #{row['discrepancy_id']} `{row['record_key']}` {difference_text(row)}: {row['detail']}"
        for row in rows
    ]
    return "\n".join(lines) or "none"


def difference_text(row: Mapping[Any, Any]) -> str:
    """A finding's difference in its currency, or both currencies when the sides are in different ones
    (a currency mismatch has no difference to show: ``EUR ≠ GBP``, never ``0.00 EUR``)."""
    return finding_amounts(row, _NONE)[2]


def show_text(row: Mapping[Any, Any], history: Sequence[Mapping[Any, Any]]) -> str:
    """Every column of the finding (amounts also in major units), then its review history."""
    return _record_text(
        row,
        [
            f"  {_when(event['reviewed_at'])}  {event['action']:<11}  {event['previous_status']} -> "
            f"{status_after(event['action'], event['previous_status'])}  by {event['reviewed_by']}  at "
            f"{money(event['difference_minor'], event['currency'])}"
            + (f"  {event['note']}" if event["note"] else "")
            + (f"  (run {event['run_id']})" if event["run_id"] else "")
            for event in history
        ],
    )


def _record_text(row: Mapping[Any, Any], history: Sequence[str]) -> str:
    """Every column of a row, one per line (amounts also in major units), then its review history lines."""
    width = max(len(name) for name in row)
    lines = [f"{name:<{width}}  {_value(name, value, row['currency'])}" for name, value in row.items()]
    return "\n".join([*lines, "", "review history" if history else "review history: none", *history])


def _value(name: str, value: Any, currency: str) -> str:
    if value is None:
        return _NONE
    if name in AMOUNT_COLUMNS:
        return f"{money(value, currency)}  ({value} minor)"
    if isinstance(value, datetime):
        return _when(value)
    return str(value)


def _when(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def adjustments_list_text(rows: Sequence[Mapping[Any, Any]], total: int) -> str:
    """A table of adjustments, then how many of the matching ones it shows."""
    if not rows:
        return "no adjustments match"
    table = [
        [
            row["adjustment_id"],
            row["property_id"],
            row["night"],
            row["kind"],
            row["provider_record_id"] or row["ledger_entry_id"] or _NONE,
            str(row["revision"]),
            money(row["amount_minor"], row["currency"]),
            row["status"],
            row["category"] or _NONE,
        ]
        for row in rows
    ]
    shown = f"{len(rows)} of {total} matching" + (" (raise --limit to see more)" if total > len(rows) else "")
    return f"{plain_table(ADJUSTMENT_HEADER, table)}\n{shown}"


def adjustment_show_text(row: Mapping[Any, Any], history: Sequence[Mapping[Any, Any]]) -> str:
    """Every column of the adjustment (its amount also in major units), then its review history."""
    return _record_text(
        row,
        [
            f"  {_when(event['reviewed_at'])}  {event['action']:<8}  {event['previous_status']} -> "
            f"{event['status']}  by {event['reviewed_by']}  at "
            f"{money(event['amount_minor'], event['currency'])}  {event['note']}"
            for event in history
        ],
    )
