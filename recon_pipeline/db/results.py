"""Durable results of a reconciliation: adjustments (insert-once) and discrepancies (upsert per partition).

Both writes are keyed on business keys, so a replay, a retry or two concurrent runs of one partition
leave the same rows behind; the database's unique constraints, not the caller, decide what is new.

Review status survives re-detection: a re-run refreshes a finding's facts and keeps its status, unless
the finding was acknowledged or resolved at another difference than it has now; then it goes back to
``open`` and ``discrepancy_reviews`` records the automatic re-open (``review/store.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import Connection, delete, select, text

from recon_pipeline.db.schema import FINDING_KEY, adjustments, discrepancies
from recon_pipeline.db.upsert import insert_new, upsert
from recon_pipeline.reconcile.categories import DISCREPANCY_COLUMNS
from recon_pipeline.review.rules import OPEN
from recon_pipeline.review.store import reopen_changed

# What a re-detection may refresh; detected_at, run_id, review_status and the review columns keep their
# values (a changed difference re-opens the finding afterwards, see reopen_changed).
FINDING_FACTS = tuple(name for name in DISCREPANCY_COLUMNS if name not in ("category", "record_key"))


@dataclass(frozen=True)
class WriteCounts:
    """What a writer did: rows new to the table, and rows the business key showed were already there."""

    new: int
    already_present: int
    removed: int = 0
    reopened: int = 0


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
    """Make the partition's open findings equal ``findings``; reviewed findings are never dropped.

    A reviewed finding re-detected with another difference than its reviewer saw is re-opened. Writers of
    one partition take turns (``lock_partition``), so each one's read of what was there is current: two
    concurrent identical runs count the findings as new once, and neither deletes what the other wrote.
    """
    lock_partition(connection, property_id, night)
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
    reopened = reopen_changed(connection, property_id, night, run_id, now)
    current = {(row["category"], row["record_key"]) for row in rows}
    stale = [key for key, status in before.items() if key not in current and status == OPEN]
    for category, record_key in stale:
        # Still open: a reviewer may have acted since `before` was read, and a reviewed row stays.
        connection.execute(
            delete(discrepancies).where(
                partition,
                discrepancies.c.category == category,
                discrepancies.c.record_key == record_key,
                discrepancies.c.review_status == OPEN,
            )
        )
    new = len(current - before.keys())
    return WriteCounts(new=new, already_present=len(rows) - new, removed=len(stale), reopened=reopened)


def lock_partition(connection: Connection, property_id: str, night: str) -> None:
    """Hold the (property, night) writer lock until the transaction ends.

    PostgreSQL: a transaction-scoped advisory lock on the partition's key. SQLite has a single writer per
    database already, and its transactions that write never interleave.
    """
    if connection.dialect.name == "postgresql":
        connection.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": f"recon/discrepancies/{property_id}/{night}"},
        )


def _clean(record: Mapping[str, Any]) -> dict[str, Any]:
    """pandas NA/NaN → None and numpy integers → int, as the DB drivers expect."""
    return {key: (None if _is_missing(value) else _plain(value)) for key, value in record.items()}


def _is_missing(value: Any) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
