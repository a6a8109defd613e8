"""Durable results of a reconciliation: adjustments (insert-once) and discrepancies (upsert per partition).

Both writes are keyed on business keys, so a replay, a retry or two concurrent runs of one partition
leave the same rows behind; the database's unique constraints, not the caller, decide what is new.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import Connection, delete, select

from recon_pipeline.db.schema import adjustments, discrepancies
from recon_pipeline.db.upsert import insert_new, upsert
from recon_pipeline.reconcile.categories import DISCREPANCY_COLUMNS

FINDING_KEY = ("property_id", "night", "category", "record_key")
# What a re-detection may refresh; detected_at, run_id and review_status keep their first values.
FINDING_FACTS = tuple(name for name in DISCREPANCY_COLUMNS if name not in ("category", "record_key"))


@dataclass(frozen=True)
class WriteCounts:
    """What a writer did: rows new to the table, and rows the business key showed were already there."""

    new: int
    already_present: int
    removed: int = 0


def write_adjustments(connection: Connection, rows: Sequence[Mapping[str, Any]]) -> WriteCounts:
    """Insert proposed adjustments once per idempotency key."""
    new = insert_new(connection, adjustments, rows, ["idempotency_key"])
    return WriteCounts(new=new, already_present=len(rows) - new)


def save_discrepancies(
    connection: Connection,
    property_id: str,
    night: str,
    findings: pd.DataFrame,
    run_id: str | None,
    now: datetime,
) -> WriteCounts:
    """Make the partition's open findings equal ``findings``; reviewed findings are never dropped."""
    partition = (discrepancies.c.property_id == property_id) & (discrepancies.c.night == night)
    before = {
        (row.category, row.record_key): row.review_status
        for row in connection.execute(
            select(discrepancies.c.category, discrepancies.c.record_key, discrepancies.c.review_status).where(
                partition
            )
        )
    }
    rows = [
        {**_clean(record), "property_id": property_id, "night": night, "detected_at": now, "run_id": run_id}
        for record in findings.loc[:, list(DISCREPANCY_COLUMNS)].to_dict("records")
    ]
    upsert(connection, discrepancies, rows, FINDING_KEY, FINDING_FACTS)
    current = {(row["category"], row["record_key"]) for row in rows}
    stale = [key for key, status in before.items() if key not in current and status == "open"]
    for category, record_key in stale:
        connection.execute(
            delete(discrepancies).where(
                partition, discrepancies.c.category == category, discrepancies.c.record_key == record_key
            )
        )
    new = len(current - before.keys())
    return WriteCounts(new=new, already_present=len(rows) - new, removed=len(stale))


def _clean(record: Mapping[str, Any]) -> dict[str, Any]:
    """pandas NA/NaN → None and numpy integers → int, as the DB drivers expect."""
    return {key: (None if _is_missing(value) else _plain(value)) for key, value in record.items()}


def _is_missing(value: Any) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
