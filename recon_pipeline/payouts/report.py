"""The payout report an accountant ticks against the bank: one row per payout arriving in the nights
asked, with the property-nights its movements belong to and the bank credit that paid it (or none)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from recon_pipeline.money import format_minor
from recon_pipeline.reports.exports import write_csv, write_xlsx

REPORT_FORMATS = ("csv", "xlsx")
SHEET = "payouts"


def report_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The report's rows (``store.payouts_between``) as its columns, in arrival order."""
    return pd.DataFrame(
        {
            "arrival_night": [row["arrival_night"] for row in rows],
            "payout_id": [row["payout_id"] for row in rows],
            "provider_account": [row["provider_account"] or "platform" for row in rows],
            "status": [row["status"] for row in rows],
            "failure_code": [row["failure_code"] for row in rows],
            "amount": [format_minor(int(row["amount_minor"]), row["currency"]) for row in rows],
            "amount_minor": pd.Series([int(row["amount_minor"]) for row in rows], dtype="int64"),
            "currency": [row["currency"] for row in rows],
            "bank_reference": [row["statement_descriptor"] for row in rows],
            "traced": ["yes" if row["traced"] else "no" if row["automatic"] else "manual" for row in rows],
            "sum_check": [_sum_check(row["sum_difference_minor"]) for row in rows],
            "property_nights": [" ".join(row["property_nights"]) for row in rows],
            "bank_credit": [
                f"{row['statement_id']}/{row['entry_reference']}" if row["statement_id"] else None
                for row in rows
            ],
            "booked_on": [row["booking_date"] for row in rows],
            "deposited": ["yes" if row["statement_id"] else "no" for row in rows],
        }
    )


def _sum_check(difference: int | None) -> str:
    if difference is None:
        return "untraceable"
    return "ok" if difference == 0 else f"off by {difference}"


def write_report(frame: pd.DataFrame, out: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    """The report as ``OUT/<stem>.<format>`` for each format asked."""
    written = []
    for name in formats:
        path = out / f"{stem}.{name}"
        written.append(write_csv(frame, path) if name == "csv" else write_xlsx(frame, path, SHEET))
    return written
