"""The ``adjustments`` table's run writes: a night's proposals and their lifecycle (people's approvals and
rejections are ``review/adjustments.py``'s decisions).

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

from sqlalchemy import Connection, bindparam, select, update

from recon_pipeline.db.schema import adjustments
from recon_pipeline.db.upsert import insert_new
from recon_pipeline.reconcile.lifecycle import PROPOSED, LifecyclePlan, plan_lifecycle
from recon_pipeline.storage.partition import lock_partition

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
    """Make the partition's adjustments follow its current findings (``proposals``, as
    ``plan_adjustments`` makes them): apply ``plan_lifecycle``'s plan, the rule of
    ``reconcile/lifecycle.py``, and return it.

    Under the partition's lock, which reviewers (``recon adjustments approve|reject``) take too, so a
    concurrent identical run finds this one's rows and changes nothing, and an approval never races a
    supersession. The status guard on each update is the rule's second line in the database.

    ``categories``: the finding categories whose proposals this writer owns (default: all), as
    ``save_findings`` scopes findings: the payouts asset proposes for its payout-fee findings in
    property-nights the night's reconciliation writes too, and neither may withdraw the other's proposals.
    """
    lock_partition(connection, property_id, night)
    query = select(*(adjustments.c[name] for name in LIFECYCLE_COLUMNS)).where(
        adjustments.c.property_id == property_id, adjustments.c.night == night
    )
    if categories is not None:
        foreign = {str(proposal["category"]) for proposal in proposals} - set(categories)
        if foreign:
            raise ValueError(f"proposals of {sorted(foreign)} are not this writer's ({sorted(categories)})")
        query = query.where(adjustments.c.category.in_(sorted(categories)))
    existing = connection.execute(query).mappings()
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


def set_status(connection: Connection, adjustment_id: str, status: str, now: datetime) -> None:
    """The adjustment's new contract status, as a person's review or the posting of it decides."""
    connection.execute(
        update(adjustments)
        .where(adjustments.c.adjustment_id == adjustment_id)
        .values(status=status, updated_at=now)
    )
