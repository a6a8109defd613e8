"""The ``adjustments`` table: the run's writes of a night's proposals and their lifecycle, the query type
the command line and the review desk select adjustments with (``AdjustmentFilter``), and the status a
person's review or a posting sets (``review/adjustments.py`` and ``postings/`` decide them).

Writes are keyed on business keys, so a replay, a retry or two concurrent runs of one partition leave the
same rows behind; the database's unique constraints, not the caller, decide what is new. Every writer of a
partition takes its lock first (``lock_partition``), so each one's read of what is there is current when
it decides what to change.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, RowMapping, bindparam, func, select, update

from recon_pipeline.db.schema import adjustments
from recon_pipeline.db.upsert import insert_new
from recon_pipeline.keys import parse_night, validate_property_id
from recon_pipeline.ledger.queries import in_chunks
from recon_pipeline.reconcile.lifecycle import ADJUSTMENT_STATUSES, PROPOSED, LifecyclePlan, plan_lifecycle
from recon_pipeline.storage.partition import lock_partitions

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
    categories: Collection[str] | None = None,
) -> LifecyclePlan:
    """``sync_batch_adjustments`` of one partition: its plan."""
    return sync_batch_adjustments(connection, night, {property_id: proposals}, now, categories)[property_id]


def sync_batch_adjustments(
    connection: Connection,
    night: str,
    proposals: Mapping[str, Sequence[Mapping[str, Any]]],
    now: datetime,
    categories: Collection[str] | None = None,
) -> dict[str, LifecyclePlan]:
    """Make each partition's adjustments follow its current findings (``proposals`` per property, as
    ``plan_adjustments`` makes them): apply ``plan_lifecycle``'s plan, the rule of
    ``reconcile/lifecycle.py``, and return the plans per property. One read of every partition's rows,
    one insert and one (executemany) update for the whole batch.

    Under the partitions' locks, which reviewers (``recon adjustments approve|reject``) take too, so a
    concurrent identical run finds this one's rows and changes nothing, and an approval never races a
    supersession. The status guard on each update is the rule's second line in the database.

    ``categories``: the finding categories whose proposals this writer owns (default: all), as
    ``save_findings`` scopes findings: the payouts asset proposes for its payout-fee findings in
    property-nights the night's reconciliation writes too, and neither may withdraw the other's proposals.
    """
    lock_partitions(connection, night, proposals)
    if categories is not None:
        foreign = {str(p["category"]) for rows in proposals.values() for p in rows} - set(categories)
        if foreign:
            raise ValueError(f"proposals of {sorted(foreign)} are not this writer's ({sorted(categories)})")
    existing: dict[str, list[RowMapping]] = {property_id: [] for property_id in proposals}
    for chunk in in_chunks(sorted(proposals)):
        query = select(adjustments.c.property_id, *(adjustments.c[name] for name in LIFECYCLE_COLUMNS)).where(
            adjustments.c.night == night, adjustments.c.property_id.in_(chunk)
        )
        if categories is not None:
            query = query.where(adjustments.c.category.in_(sorted(categories)))
        for row in connection.execute(query).mappings():
            existing[row["property_id"]].append(row)
    plans = {
        property_id: plan_lifecycle(rows, existing[property_id]) for property_id, rows in proposals.items()
    }
    write_adjustments(connection, [row for plan in plans.values() for row in plan.inserts])
    transitions = [t for plan in plans.values() for t in plan.transitions]
    if transitions:
        connection.execute(
            update(adjustments)
            .where(adjustments.c.adjustment_id == bindparam("target"), adjustments.c.status == PROPOSED)
            .values(status=bindparam("new_status"), superseded_by=bindparam("by"), updated_at=now),
            [{"target": t.adjustment_id, "new_status": t.status, "by": t.superseded_by} for t in transitions],
        )
    return plans


def set_status(connection: Connection, adjustment_id: str, status: str, now: datetime) -> None:
    """The adjustment's new contract status, as a person's review or the posting of it decides."""
    connection.execute(
        update(adjustments)
        .where(adjustments.c.adjustment_id == adjustment_id)
        .values(status=status, updated_at=now)
    )


class UnknownAdjustmentError(LookupError):
    """No row of ``adjustments`` has this id."""


@dataclass(frozen=True)
class AdjustmentFilter:
    """Which adjustments `recon adjustments list` shows; None matches everything. Validated on creation."""

    property_id: str | None = None
    night: str | None = None
    status: str | None = None

    def __post_init__(self) -> None:
        if self.property_id is not None:
            validate_property_id(self.property_id)
        if self.night is not None:
            parse_night(self.night)
        if self.status is not None and self.status not in ADJUSTMENT_STATUSES:
            raise ValueError(f"unknown status {self.status!r}: use one of {', '.join(ADJUSTMENT_STATUSES)}")

    def matching(self) -> list[ColumnElement[bool]]:
        return [
            adjustments.c[column] == value
            for column, value in (
                ("property_id", self.property_id),
                ("night", self.night),
                ("status", self.status),
            )
            if value is not None
        ]


def list_adjustments(connection: Connection, where: AdjustmentFilter, limit: int) -> list[RowMapping]:
    """Matching adjustments, newest night first, then property, kind, record and revision."""
    c = adjustments.c
    query = (
        select(adjustments)
        .where(*where.matching())
        .order_by(c.night.desc(), c.property_id, c.kind, c.idempotency_key, c.revision)
        .limit(limit)
    )
    return list(connection.execute(query).mappings())


def count_adjustments(connection: Connection, where: AdjustmentFilter) -> int:
    query = select(func.count()).select_from(adjustments).where(*where.matching())
    return int(connection.execute(query).scalar_one())


def get_adjustment(connection: Connection, adjustment_id: str, *, lock: bool = False) -> RowMapping:
    """The adjustment's row, or UnknownAdjustmentError; ``lock`` holds it until the transaction ends."""
    query = select(adjustments).where(adjustments.c.adjustment_id == adjustment_id)
    row = connection.execute(query.with_for_update() if lock else query).mappings().first()
    if row is None:
        raise UnknownAdjustmentError(f"no adjustment with id {adjustment_id}")
    return row
