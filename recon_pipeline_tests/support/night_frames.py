"""A night's two sides as frames for the diff (provider records and ledger entries), and its findings as plain
dicts to compare."""

from __future__ import annotations

from typing import Any

import pandas as pd

from recon_pipeline.frames import typed_frame
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS, empty_provider_records
from recon_pipeline.reconcile.diff import DiffResult

NIGHT = pd.Timestamp("2025-03-15T00:00:00Z")


def record(
    record_id: str,
    kind: str = "payment",
    amount: int = 10_000,
    currency: str = "EUR",
    status: str = "succeeded",
    booking: str | None = "bk_1",
    charge: str | None = None,
    minute: int = 60,
) -> dict[str, Any]:
    """One provider record; refunds and fees default to the sign the contract gives them."""
    return {
        "provider_record_id": record_id,
        "kind": kind,
        "charge_id": charge or record_id,
        "property_id": "prop_1",
        "booking_id": booking,
        "payment_intent_id": None,
        "amount_minor": amount,
        "currency": currency,
        "status": status,
        "settled": status == "succeeded",
        "created_at": NIGHT + pd.Timedelta(minutes=minute),
    }


def entry(
    entry_id: str,
    record_id: str | None,
    kind: str = "payment",
    amount: int = 10_000,
    currency: str = "EUR",
    in_night: bool = True,
    minute: int = 65,
    booking: str | None = "bk_1",
) -> dict[str, Any]:
    return {
        "entry_id": entry_id,
        "property_id": "prop_1",
        "booking_id": booking,
        "provider_record_id": record_id,
        "kind": kind,
        "amount_minor": amount,
        "currency": currency,
        "posted_at": NIGHT + pd.Timedelta(minutes=minute if in_night else 24 * 60 + minute),
        "in_night": in_night,
    }


def providers(*rows: dict[str, Any]) -> pd.DataFrame:
    if not rows:
        return empty_provider_records()
    return pd.DataFrame(list(rows), columns=list(PROVIDER_RECORD_COLUMNS)).astype(PROVIDER_RECORD_COLUMNS)


def ledger(*rows: dict[str, Any]) -> pd.DataFrame:
    if not rows:
        return typed_frame({}, LEDGER_RECORD_COLUMNS, 0)
    return pd.DataFrame(list(rows), columns=list(LEDGER_RECORD_COLUMNS)).astype(LEDGER_RECORD_COLUMNS)


def findings(result: DiffResult) -> list[dict[str, Any]]:
    """The finding rows as dicts, nulls as None, without the detail sentence and the ledger's currency
    (shown beside its amount: test_report.py)."""
    frame = result.findings.drop(columns=["detail", "ledger_currency"]).astype(object)
    return [
        {key: (None if pd.isna(value) else value) for key, value in row.items()}
        for row in frame.to_dict("records")
    ]


def finding(
    category: str,
    key: str,
    kind: str = "payment",
    provider_record_id: str | None = None,
    ledger_entry_id: str | None = None,
    provider_amount: int | None = None,
    ledger_amount: int | None = None,
    difference: int = 0,
    currency: str = "EUR",
    booking: str | None = "bk_1",
) -> dict[str, Any]:
    return {
        "category": category,
        "record_key": key,
        "kind": kind,
        "provider_record_id": provider_record_id,
        "ledger_entry_id": ledger_entry_id,
        "booking_id": booking,
        "provider_amount_minor": provider_amount,
        "ledger_amount_minor": ledger_amount,
        "difference_minor": difference,
        "currency": currency,
    }
