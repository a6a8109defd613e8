"""The adjustments a review desk user may see: the queue with its filters, and one adjustment with its
posting and the finding it corrects.

An adjustment's state on the desk is its posting's state (``posting_outbox.state``) once it has one, else
its own status: what a finance analyst wants to know is where the money is, not only what was decided.
Every query here takes the user's properties and applies them in SQL, so no page or action reaches an
adjustment of another property whatever its URL or form says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, RowMapping, Select, func, select

from recon_pipeline.db.outbox_states import FAILED, POSTING, UNKNOWN
from recon_pipeline.db.schema import adjustment_reviews, adjustments, discrepancies, posting_outbox
from recon_pipeline.keys import parse_night
from recon_pipeline.reconcile.lifecycle import (
    APPROVED,
    POSTED,
    PROPOSED,
    REJECTED,
    SUPERSEDED,
    WITHDRAWN,
)
from recon_pipeline.review.adjustments import APPROVE, approvals_needed_under
from recon_pipeline.review.four_eyes import four_eyes_threshold
from recon_pipeline.review_desk.findings import PAGE_SIZE

QUEUE_STATES: Final = (PROPOSED, APPROVED, POSTING, UNKNOWN, POSTED, FAILED, REJECTED, WITHDRAWN, SUPERSEDED)

# The posting's state when there is a posting, else the adjustment's status.
queue_state = func.coalesce(posting_outbox.c.state, adjustments.c.status).label("state")
approval_count = (
    select(func.count(func.distinct(adjustment_reviews.c.reviewed_by)))
    .where(
        adjustment_reviews.c.adjustment_id == adjustments.c.adjustment_id,
        adjustment_reviews.c.action == APPROVE,
    )
    .scalar_subquery()
    .label("approvals")
)


@dataclass(frozen=True)
class AdjustmentQuery:
    """The queue's filters; None matches everything. Validated on creation."""

    state: str | None = None
    property_id: str | None = None
    night_from: str | None = None
    night_to: str | None = None

    def __post_init__(self) -> None:
        if self.state is not None and self.state not in QUEUE_STATES:
            raise ValueError(f"unknown state {self.state!r}: use one of {', '.join(QUEUE_STATES)}")
        for night in (self.night_from, self.night_to):
            if night is not None:
                parse_night(night)

    def matching(self) -> list[ColumnElement[bool]]:
        column = adjustments.c
        conditions: list[ColumnElement[bool]] = []
        if self.state is not None:
            conditions.append(queue_state == self.state)
        if self.property_id is not None:
            conditions.append(column.property_id == self.property_id)
        if self.night_from is not None:
            conditions.append(column.night >= self.night_from)
        if self.night_to is not None:
            conditions.append(column.night <= self.night_to)
        return conditions


def _with_posting() -> Select[Any]:
    """adjustments with their state, approvals and posting's columns (none before approval)."""
    return select(
        adjustments,
        queue_state,
        approval_count,
        posting_outbox.c.pms_reference,
        posting_outbox.c.last_error,
        posting_outbox.c.attempts,
    ).join(posting_outbox, posting_outbox.c.adjustment_id == adjustments.c.adjustment_id, isouter=True)


def _with_needed(connection: Connection, rows: Sequence[RowMapping]) -> list[dict[str, Any]]:
    """Each row with ``approvals_needed`` (four eyes above its property's four-eyes threshold): one look-up
    per property, not per row."""
    thresholds = {p: four_eyes_threshold(connection, p).minor for p in {row["property_id"] for row in rows}}
    return [
        {
            **row,
            "approvals_needed": approvals_needed_under(
                thresholds[row["property_id"]], int(row["amount_minor"])
            ),
        }
        for row in rows
    ]


def queue_statement(
    query: AdjustmentQuery, allowed: tuple[str, ...], limit: int, offset: int = 0
) -> Select[Any]:
    """The queue's rows (adjustments with state, approvals and posting) of ``allowed`` properties, newest
    night first: the page, its count and its exports run this one statement. The id ends the order, so
    pages never overlap."""
    column = adjustments.c
    return (
        _with_posting()
        .where(*query.matching(), column.property_id.in_(allowed))
        .order_by(
            column.night.desc(),
            column.property_id,
            column.kind,
            column.idempotency_key,
            column.revision,
            column.adjustment_id,
        )
        .limit(limit)
        .offset(offset)
    )


def list_queue(
    connection: Connection, query: AdjustmentQuery, allowed: tuple[str, ...], offset: int = 0
) -> list[dict[str, Any]]:
    """The matching adjustments of ``allowed`` properties, newest night first: ``PAGE_SIZE`` of them
    after skipping ``offset``."""
    statement = queue_statement(query, allowed, PAGE_SIZE, offset)
    return _with_needed(connection, list(connection.execute(statement).mappings()))


def get_adjustments(
    connection: Connection, adjustment_ids: Sequence[str], allowed: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Those of ``adjustment_ids`` that exist and are of an ``allowed`` property, in the order given."""
    statement = _with_posting().where(
        adjustments.c.adjustment_id.in_(list(adjustment_ids)), adjustments.c.property_id.in_(allowed)
    )
    found = {
        row["adjustment_id"]: row
        for row in _with_needed(connection, list(connection.execute(statement).mappings()))
    }
    return [found[adjustment_id] for adjustment_id in dict.fromkeys(adjustment_ids) if adjustment_id in found]


def corrected_finding_id(connection: Connection, adjustment: RowMapping | dict[str, Any]) -> int | None:
    """The id of the finding the adjustment corrects (same property, night, category, record), if any."""
    if adjustment["category"] is None:
        return None
    statement = select(discrepancies.c.discrepancy_id).where(
        *(
            discrepancies.c[name] == adjustment[name]
            for name in ("property_id", "night", "category", "record_key")
        )
    )
    found = connection.execute(statement).scalar_one_or_none()
    return None if found is None else int(found)
