"""Matches as the matcher hands them to ``save_matches`` (MATCH_COLUMNS), and a property-night with
ledger entries and findings for a person to pair by hand."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pandas as pd
from sqlalchemy import Connection, insert

from recon_pipeline.db.schema import ledger_entries, properties
from recon_pipeline.nights import night_window
from recon_pipeline.reconcile.matching import MATCH_COLUMNS, match_key
from recon_pipeline.storage.findings import save_findings
from recon_pipeline_tests.support.finding_rows import finding, findings_frame

NIGHT = "2026-12-01"
PROPERTY = "rome-centro"  # EUR, UTC
NOW = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)


def match_row(
    records: Sequence[str],
    entries: Sequence[str],
    rule: str = "booking_amount",
    score: float = 0.95,
    status: str = "matched",
    amount: int = 12_000,
    **extra: object,
) -> dict[str, object]:
    """One match of ``records`` with ``entries``, of ``amount`` euro cents on both sides."""
    row: dict[str, object] = {
        "match_key": match_key(records, entries),
        "rule": rule,
        "score": score,
        "status": status,
        "kind": "payment",
        "provider_record_ids": " ".join(sorted(records)),
        "ledger_entry_ids": " ".join(sorted(entries)),
        "booking_id": "B-17",
        "provider_amount_minor": amount,
        "ledger_amount_minor": amount,
        "currency": "EUR",
        "keys_agree": f"booking B-17, amount {amount / 100:.2f} EUR",
        "keys_differ": None,
        "detail": f"{rule} match",
    }
    row.update(extra)
    return row


def matches_frame(*rows: dict[str, object]) -> pd.DataFrame:
    """The matcher's frame of ``rows`` (amounts nullable integers, as a frame with gaps has them)."""
    frame = pd.DataFrame(list(rows), columns=list(MATCH_COLUMNS))
    for column in ("provider_amount_minor", "ledger_amount_minor"):
        frame[column] = frame[column].astype("Int64")
    frame["score"] = frame["score"].astype("float64")
    return frame


def seed_pairable_night(connection: Connection) -> None:
    """Rome's night: entries le_1 (in the night, 120.00 EUR, booking B-1), le_2 (the next night's early
    hours, 80.00), le_far (three nights later) and another property's le_other; two unmatched provider
    records (findings of ch_1 at 120.00 and ch_2 at 80.00)."""
    window = night_window(NIGHT, "UTC", "00:00")
    connection.execute(
        insert(properties),
        [
            {"property_id": pid, "name": pid, "timezone": "UTC", "currency": "EUR"}
            for pid in (PROPERTY, "milan-duomo")
        ],
    )
    entries = [
        ("le_1", PROPERTY, "B-1", 12_000, window.start + timedelta(hours=20)),
        ("le_2", PROPERTY, None, 8_000, window.end + timedelta(hours=2)),
        ("le_far", PROPERTY, None, 8_000, window.end + timedelta(days=3)),
        ("le_other", "milan-duomo", None, 12_000, window.start + timedelta(hours=20)),
    ]
    connection.execute(
        insert(ledger_entries),
        [
            {"entry_id": entry_id, "property_id": pid, "booking_id": booking, "provider_record_id": None,
             "kind": "payment", "amount_minor": amount, "currency": "eur", "posted_at": posted,
             "card_brand": "visa", "card_last4": "4242", "approval_code": None, "reference": None}
            for entry_id, pid, booking, amount, posted in entries
        ],
    )  # fmt: skip
    findings = findings_frame(
        *(
            finding("missing_in_ledger", f"{record}:payment", amount, provider_record_id=record,
                    provider_amount_minor=amount)
            for record, amount in (("ch_1", 12_000), ("ch_2", 8_000))
        ),
        finding("missing_at_provider", "entry:le_1", -12_000, ledger_entry_id="le_1",
                ledger_amount_minor=12_000),
    )  # fmt: skip
    save_findings(connection, PROPERTY, NIGHT, findings, "run-0", NOW)
