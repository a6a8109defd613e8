"""Durable results of a reconciliation: adjustments (their lifecycle) and discrepancies (upsert per
partition).

Both writes are keyed on business keys, so a replay, a retry or two concurrent runs of one partition
leave the same rows behind; the database's unique constraints, not the caller, decide what is new. Both
writers of a partition take its lock first (``lock_partition``), so each one's read of what is there is
current when it decides what to change.

A finding no longer seen is cleared (``cleared_at``), not deleted: the row stays for audit, and its
``cleared_at`` goes back to NULL if a later run sees it again.

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
from sqlalchemy import Connection, bindparam, select, text, update

from recon_pipeline.db.schema import FINDING_KEY, adjustments, discrepancies
from recon_pipeline.db.upsert import insert_new, upsert
from recon_pipeline.reconcile.categories import DISCREPANCY_COLUMNS
from recon_pipeline.reconcile.lifecycle import PROPOSED, LifecyclePlan, plan_lifecycle
from recon_pipeline.review.store import reopen_changed

# What a re-detection may refresh; detected_at, run_id, review_status and the review columns keep their
# values (a changed difference re-opens the finding afterwards, see reopen_changed); a cleared finding
# seen again is outstanding again (cleared_at back to NULL).
FINDING_FACTS = (
    *(name for name in DISCREPANCY_COLUMNS if name not in ("category", "record_key")),
    "cleared_at",
)
# What the lifecycle planner reads of the partition's adjustments.
LIFECYCLE_COLUMNS = ("adjustment_id", "idempotency_key", "revision", "status", "amount_minor", "currency")


@dataclass(frozen=True)
class WriteCounts:
    """What a writer did: rows new to the table, and rows the business key showed were already there."""

    new: int
    already_present: int
    cleared: int = 0
    reopened: int = 0


def write_adjustments(connection: Connection, rows: Sequence[Mapping[str, Any]]) -> WriteCounts:
    """Insert adjustment rows once per idempotency key."""
    new = insert_new(connection, adjustments, rows, ["idempotency_key"])
    return WriteCounts(new=new, already_present=len(rows) - new)


def sync_adjustments(
    connection: Connection,
    property_id: str,
    night: str,
    proposals: Sequence[Mapping[str, Any]],
    now: datetime,
) -> LifecyclePlan:
    """Make the partition's adjustments follow its current findings (``proposals``, as
    ``plan_adjustments`` makes them): new revisions inserted, stale ``proposed`` rows withdrawn or
    superseded (``reconcile/lifecycle.py``), nothing else touched; returns the plan applied.

    Under the partition's lock, which reviewers (``recon adjustments approve|reject``) take too, so a
    concurrent identical run finds this one's rows and changes nothing, and an approval never races a
    supersession. The status guard on each update is a second line: only ``proposed`` rows ever move.
    """
    lock_partition(connection, property_id, night)
    existing = connection.execute(
        select(*(adjustments.c[name] for name in LIFECYCLE_COLUMNS)).where(
            adjustments.c.property_id == property_id, adjustments.c.night == night
        )
    ).mappings()
    plan = plan_lifecycle(proposals, existing)
    write_adjustments(connection, plan.inserts)
    if plan.transitions:
        connection.execute(
            update(adjustments)
            .where(adjustments.c.adjustment_id == bindparam("target"), adjustments.c.status == PROPOSED)
            .values(status=bindparam("new_status"), superseded_by=bindparam("by"), updated_at=now),
            [
                {"target": t.adjustment_id, "new_status": t.status, "by": t.superseded_by}
                for t in plan.transitions
            ],
        )
    return plan


def save_discrepancies(
    connection: Connection,
    property_id: str,
    night: str,
    findings: pd.DataFrame,
    run_id: str | None,
    now: datetime,
) -> WriteCounts:
    """Make the partition's outstanding findings equal ``findings``: upsert them (a cleared one seen again
    is outstanding again) and clear the ones no longer seen, reviewed or not; no row is deleted.

    A reviewed finding re-detected with another difference than its reviewer saw is re-opened. Writers of
    one partition take turns (``lock_partition``), so each one's read of what was there is current: two
    concurrent identical runs count the findings as new once, and neither clears what the other wrote.
    """
    lock_partition(connection, property_id, night)
    partition = (discrepancies.c.property_id == property_id) & (discrepancies.c.night == night)
    before = {
        (row.category, row.record_key): row.cleared_at
        for row in connection.execute(
            select(discrepancies.c.category, discrepancies.c.record_key, discrepancies.c.cleared_at).where(
                partition
            )
        )
    }
    rows = [
        {
            **_clean(record),
            "property_id": property_id,
            "night": night,
            "detected_at": now,
            "run_id": run_id,
            "cleared_at": None,
        }
        for record in findings.loc[:, list(DISCREPANCY_COLUMNS)].to_dict("records")
    ]
    upsert(connection, discrepancies, rows, FINDING_KEY, FINDING_FACTS)
    reopened = reopen_changed(connection, property_id, night, run_id, now)
    current = {(row["category"], row["record_key"]) for row in rows}
    stale = [key for key, cleared_at in before.items() if key not in current and cleared_at is None]
    if stale:
        connection.execute(
            update(discrepancies)
            .where(
                partition,
                discrepancies.c.category == bindparam("stale_category"),
                discrepancies.c.record_key == bindparam("stale_record_key"),
                discrepancies.c.cleared_at.is_(None),
            )
            .values(cleared_at=now),
            [{"stale_category": category, "stale_record_key": key} for category, key in stale],
        )
    new = len(current - before.keys())
    return WriteCounts(new=new, already_present=len(rows) - new, cleared=len(stale), reopened=reopened)


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
