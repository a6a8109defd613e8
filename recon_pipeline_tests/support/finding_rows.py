"""Findings as the night's diff hands them to the writers: one row, a frame of rows, and a fixed set of
them."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from recon_pipeline.categories import FINDING_COLUMNS

NOW = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)


def finding(category: str, record_key: str, difference: int, **extra: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(FINDING_COLUMNS)
    row.update(
        category=category,
        record_key=record_key,
        kind="payment",
        difference_minor=difference,
        currency="EUR",
        detail=f"{category} of {record_key}",
    )
    row.update(extra)
    return row


def findings_frame(*rows: dict[str, object]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(FINDING_COLUMNS))
    for column in ("provider_amount_minor", "ledger_amount_minor"):
        frame[column] = frame[column].astype("Int64")
    return frame


FINDINGS = findings_frame(
    finding("missing_in_ledger", "ch_1:payment", 1000, provider_record_id="ch_1", provider_amount_minor=1000),
    finding("missing_at_provider", "ch_9:payment", -700, ledger_entry_id="le_9", ledger_amount_minor=700),
    finding(
        "amount_mismatch",
        "ch_2:payment",
        50,
        provider_record_id="ch_2",
        ledger_entry_id="le_2",
        provider_amount_minor=1050,
        ledger_amount_minor=1000,
    ),
    finding(
        "status_mismatch",
        "ch_3:payment",
        0,
        provider_record_id="ch_3",
        ledger_entry_id="le_3",
        provider_amount_minor=900,
        ledger_amount_minor=900,
    ),
)
