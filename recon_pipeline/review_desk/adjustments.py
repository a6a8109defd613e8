"""The adjustments a review desk user may see: the queue with its filters, and one adjustment with its
posting and the finding it corrects.

An adjustment's state on the desk is its posting's state (``posting_outbox.state``) once it has one, else
its own status: what a finance analyst wants to know is where the money is, not only what was decided.
Every query here takes the user's properties and applies them in SQL, so no page or action reaches an
adjustment of another property whatever its URL or form says.

The queue opens on what needs a decision (tab ``decide``: proposed ones, those awaiting a second approval
included, and postings whose outcome is unknown); the other tabs (``TABS``) hold the rest, so superseded
and withdrawn rows never crowd the work. Approvals are the live ones (``live_approval_count``: an approval
withdrawn no longer counts). A decided row carries its decision (who approved or rejected, when) instead of
a checkbox: ``with_decisions`` reads it for a page's rows in one query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, RowMapping, Select, exists, false, func, or_, select

from recon_pipeline.db.outbox_states import FAILED, POSTING, UNKNOWN
from recon_pipeline.db.schema import (
    FINDING_KEY,
    adjustment_reviews,
    adjustments,
    discrepancies,
    posting_outbox,
)
from recon_pipeline.keys import parse_night
from recon_pipeline.reconcile.lifecycle import (
    APPROVED,
    POSTED,
    PROPOSED,
    REJECTED,
    SUPERSEDED,
    WITHDRAWN,
)
from recon_pipeline.review.adjustments import (
    APPROVE,
    REJECT,
    approvals_needed_under,
    live_approval_count,
    live_approvers,
)
from recon_pipeline.review.four_eyes import four_eyes_threshold
from recon_pipeline.review_desk.listing import (
    Sort,
    SortColumn,
    amount_between,
    amount_search,
    sorted_statement,
)
from recon_pipeline.storage.adjustments import AdjustmentFilter
from recon_pipeline.storage.conditions import one_of
from recon_pipeline.words import QUEUE_STATE_WORDS

QUEUE_STATES: Final = (PROPOSED, APPROVED, POSTING, UNKNOWN, POSTED, FAILED, REJECTED, WITHDRAWN, SUPERSEDED)
DECIDE: Final = "decide"
WAITING: Final = "waiting"
ALL: Final = "all"
# Each tab's queue states (None: every state); ``waiting`` is proposed with at least one live approval.
TABS: Final[dict[str, tuple[str, ...] | None]] = {
    DECIDE: (PROPOSED, UNKNOWN),
    WAITING: (PROPOSED,),
    "posting": (APPROVED, POSTING, UNKNOWN, FAILED),
    "done": (POSTED, REJECTED),
    "closed": (WITHDRAWN, SUPERSEDED),
    ALL: None,
}
TAB_WORDS: Final = {
    DECIDE: "Needs a decision",
    WAITING: "Awaiting a second approval",
    "posting": "Posting",
    "done": "Done",
    "closed": "Withdrawn or superseded",
    ALL: "All",
}
# States whose decision a row shows instead of a checkbox.
DECIDED: Final = (APPROVED, POSTING, UNKNOWN, POSTED, FAILED, REJECTED)

# The posting's state when there is a posting, else the adjustment's status.
queue_state = func.coalesce(posting_outbox.c.state, adjustments.c.status).label("state")
approval_count = live_approval_count(adjustments.c.adjustment_id).label("approvals")

SORT_COLUMNS: Final = (
    SortColumn("adjustment", adjustments.c.adjustment_id, "Adjustment"),
    SortColumn("property", adjustments.c.property_id, "Property"),
    SortColumn("night", adjustments.c.night, "Night"),
    SortColumn("kind", adjustments.c.kind, "Kind"),
    SortColumn("amount", adjustments.c.amount_minor, "Amount"),
    SortColumn("reason", adjustments.c.reason, "Reason"),
    SortColumn("state", queue_state, "State"),
    SortColumn("approvals", approval_count, "Approvals"),
)
DEFAULT_SORT: Final = "-night"
# The queue's total key: after the chosen column, rows keep the order they always had.
TIEBREAK: Final = (
    adjustments.c.night.desc(),
    adjustments.c.property_id,
    adjustments.c.kind,
    adjustments.c.idempotency_key,
    adjustments.c.revision,
    adjustments.c.adjustment_id,
)


@dataclass(frozen=True)
class AdjustmentQuery:
    """The queue's tab and filters; None matches everything. Validated on creation (ValueError naming the
    field); ``search`` is the ``q`` box: an id (adjustment, provider record, ledger entry, or the booking of
    the finding it corrects) or an amount in major units (``120.50``, ``100..200``)."""

    tab: str = ALL
    state: str | None = None
    where: AdjustmentFilter = AdjustmentFilter()  # the command line's filter: the property, here
    night_from: str | None = None
    night_to: str | None = None
    search: str | None = None

    def __post_init__(self) -> None:
        if self.tab not in TABS:
            raise ValueError(f"unknown tab {self.tab!r}: use one of {', '.join(TABS)}")
        if self.state is not None and self.state not in QUEUE_STATES:
            raise ValueError(f"unknown state {self.state!r}: use one of {', '.join(QUEUE_STATES)}")
        for night in (self.night_from, self.night_to):
            if night is not None:
                parse_night(night)
        if self.night_from is not None and self.night_to is not None and self.night_from > self.night_to:
            raise ValueError(f"night from {self.night_from} is after night to {self.night_to}")
        if self.search is not None:
            amount_search(self.search)  # a reversed amount range is refused here

    def matching(self) -> list[ColumnElement[bool]]:
        column = adjustments.c
        conditions: list[ColumnElement[bool]] = []
        states = TABS[self.tab]
        if states is not None:
            conditions.append(queue_state.in_(states))
        if self.tab == WAITING:
            conditions.append(approval_count > 0)
        if self.state is not None:
            conditions.append(queue_state == self.state)
        if self.search is not None:
            conditions.append(_search(self.search))
        conditions += self.where.matching()
        if self.night_from is not None:
            conditions.append(column.night >= self.night_from)
        if self.night_to is not None:
            conditions.append(column.night <= self.night_to)
        return conditions


def _search(text: str) -> ColumnElement[bool]:
    """The ``q`` box: an amount (either sign) in major units of the row's currency, or an exact id."""
    amounts = amount_search(text)
    if amounts is not None:
        low, high = amounts
        return amount_between([adjustments.c.amount_minor], adjustments.c.currency, low, high, None)
    word = text.strip()
    column = adjustments.c
    booked = exists().where(
        *(discrepancies.c[name] == column[name] for name in FINDING_KEY),
        discrepancies.c.booking_id == word,
    )
    ids = (column.adjustment_id, column.provider_record_id, column.ledger_entry_id)
    return or_(false(), *(id_ == word for id_ in ids), booked)


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
    query: AdjustmentQuery, allowed: tuple[str, ...], limit: int, offset: int = 0, sort: Sort | None = None
) -> Select[Any]:
    """The queue's rows (adjustments with state, approvals and posting) of ``allowed`` properties in the
    chosen order (newest night first by default): the page, its count, its totals and its exports run
    this one statement. The id ends the order, so pages never overlap."""
    chosen = sort or Sort(DEFAULT_SORT.lstrip("-"), descending=True)
    statement = _with_posting().where(*query.matching(), one_of(adjustments.c.property_id, allowed))
    return sorted_statement(statement, chosen, SORT_COLUMNS, TIEBREAK).limit(limit).offset(offset)


def list_queue(connection: Connection, statement: Select[Any]) -> list[dict[str, Any]]:
    """The rows of one page of the queue (``queue_statement``), each with its approvals needed and, once
    decided, its decision."""
    rows = _with_needed(connection, list(connection.execute(statement).mappings()))
    return with_decisions(connection, rows)


def with_decisions(connection: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with ``decision``: who approved (live approvals) or rejected it and when, for a decided
    row ("Approved by alice, bob · 2026-12-03 08:00 UTC"); None while undecided. One query for all rows."""
    decided = [row["adjustment_id"] for row in rows if row["state"] in DECIDED]
    events: dict[str, list[RowMapping]] = {}
    if decided:
        statement = (
            select(adjustment_reviews)
            .where(adjustment_reviews.c.adjustment_id.in_(decided))
            .order_by(adjustment_reviews.c.reviewed_at, adjustment_reviews.c.review_id)
        )
        for event in connection.execute(statement).mappings():
            events.setdefault(event["adjustment_id"], []).append(event)
    return [{**row, "decision": decision_of(events.get(row["adjustment_id"], []))} for row in rows]


def decision_of(history: Sequence[RowMapping | dict[str, Any]]) -> str | None:
    """The decision an adjustment's review history ends in, in words (pure); None before any."""
    rejection = next((event for event in reversed(history) if event["action"] == REJECT), None)
    if rejection is not None:
        return f"Rejected by {rejection['reviewed_by']} · {_when(rejection['reviewed_at'])}"
    names = live_approvers(history)
    if not names:
        return None
    last = next(e for e in reversed(history) if e["action"] == APPROVE and e["reviewed_by"] in names)
    return f"Approved by {', '.join(names)} · {_when(last['reviewed_at'])}"


def history_words(history: Sequence[RowMapping | dict[str, Any]], needed: int) -> list[dict[str, Any]]:
    """Each review event with ``what`` it did in words: "approved (1 of 2 approvals)", "rejected",
    "approval withdrawn (0 of 2 approvals)" — the live approvals after it, never "proposed → proposed"."""
    worded = []
    for index, event in enumerate(history):
        live = len(live_approvers(history[: index + 1]))
        what = {
            APPROVE: f"approved ({live} of {needed} approvals)",
            REJECT: "rejected",
        }.get(event["action"], f"approval withdrawn ({live} of {needed} approvals)")
        if event["previous_status"] != event["status"] and event["action"] != REJECT:
            what += f"; now {QUEUE_STATE_WORDS.get(event['status'], event['status']).lower()}"
        worded.append({**event, "what": what, "when": _when(event["reviewed_at"])})
    return worded


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def get_adjustments(
    connection: Connection, adjustment_ids: Sequence[str], allowed: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Those of ``adjustment_ids`` that exist and are of an ``allowed`` property, in the order given."""
    statement = _with_posting().where(
        adjustments.c.adjustment_id.in_(list(adjustment_ids)), one_of(adjustments.c.property_id, allowed)
    )
    found = {
        row["adjustment_id"]: row
        for row in with_decisions(
            connection, _with_needed(connection, list(connection.execute(statement).mappings()))
        )
    }
    return [found[adjustment_id] for adjustment_id in dict.fromkeys(adjustment_ids) if adjustment_id in found]


def corrected_finding_id(connection: Connection, adjustment: RowMapping | dict[str, Any]) -> int | None:
    """The id of the finding the adjustment corrects (same property, night, category, record), if any."""
    if adjustment["category"] is None:
        return None
    statement = select(discrepancies.c.discrepancy_id).where(
        *(discrepancies.c[name] == adjustment[name] for name in FINDING_KEY)
    )
    found = connection.execute(statement).scalar_one_or_none()
    return None if found is None else int(found)
