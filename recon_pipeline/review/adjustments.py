"""The database side of adjustment reviews: list and show adjustments, approve or reject a proposed one,
and read each finding's adjustment state for the reports.

Only a ``proposed`` row can be approved or rejected, and an approval names the amount the reviewer saw
(``--amount-seen``): a row that now carries another amount is refused rather than approved blind. A
review takes the partition's writer lock (``lock_partition``) before it locks and reads the row, so it
never races the pipeline superseding or withdrawing that row; status and audit row are written in the
caller's one transaction, and an approval writes the adjustment's posting (``postings/store.enqueue``,
the transactional outbox) in that same transaction.

Four eyes: an adjustment whose |amount| is above its property's four-eyes threshold
(``review.four_eyes.four_eyes_threshold``) needs approvals by two different people. The first approval is
recorded in ``adjustment_reviews`` and leaves the row ``proposed`` (nothing is posted); the second, by
someone else, approves it and enqueues its posting. Approvals count for one ``adjustment_id`` only: a
superseding revision needs fresh ones. The partition lock and the row lock serialise approvers, so two at
once cannot both be the first.

Withdrawing an approval (``withdraw_approval``): an approver takes their own approval back before posting
begins, recorded as a ``withdraw_approval`` review. Only live approvals count (an approval not withdrawn
since), here and on the desk (``live_approval_count``). An adjustment the withdrawn approval had approved
goes back to ``proposed`` and its posting is deleted, but only while that posting is untouched (approved,
never attempted, looked up or claimed): the outbox row is locked and deleted on exactly that condition, so a
drainer that claimed it first wins and the withdrawal is refused; one that comes after finds no row.

Refusals are plain sentences that name no command: the desk and the CLI show them as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    RowMapping,
    ScalarSelect,
    delete,
    func,
    insert,
    select,
)

from recon_pipeline.db import outbox_states
from recon_pipeline.db.schema import adjustment_reviews, adjustments, posting_outbox
from recon_pipeline.errors import ReviewError
from recon_pipeline.postings.store import enqueue
from recon_pipeline.reconcile.lifecycle import (
    APPROVED,
    PROPOSED,
    REJECTED,
    adjustment_state,
)
from recon_pipeline.review.four_eyes import four_eyes_threshold
from recon_pipeline.review.render import money
from recon_pipeline.storage.adjustments import get_adjustment, set_status
from recon_pipeline.storage.partition import lock_partition

APPROVE = "approve"
REJECT = "reject"
WITHDRAW_APPROVAL = "withdraw_approval"
ACTION_STATUS = {APPROVE: APPROVED, REJECT: REJECTED}
_ADJUSTMENT_ID = re.compile(r"^adj_[0-9a-f]{24}$")


def parse_adjustment_id(text: str) -> str:
    """An adjustment id as `list` shows it: ``adj_`` and 24 hex digits."""
    if not _ADJUSTMENT_ID.match(text):
        raise ValueError(f"an adjustment id is 'adj_' and 24 hex digits, not {text!r}")
    return text


def review_history(connection: Connection, adjustment_id: str) -> list[RowMapping]:
    """Every approve/reject of the adjustment, oldest first."""
    query = (
        select(adjustment_reviews)
        .where(adjustment_reviews.c.adjustment_id == adjustment_id)
        .order_by(adjustment_reviews.c.reviewed_at, adjustment_reviews.c.review_id)
    )
    return list(connection.execute(query).mappings())


@dataclass(frozen=True)
class AdjustmentOutcome:
    """What one approve/reject did; ``changed`` is False when the row kept its status: already decided
    so, or an approval recorded that still waits for a second approver (``waiting``)."""

    adjustment_id: str
    previous_status: str
    status: str
    amount_minor: int
    currency: str
    approvals: int = 0  # distinct approvers recorded for this adjustment_id, this review included
    approvals_needed: int = 1

    @property
    def changed(self) -> bool:
        return self.previous_status != self.status

    @property
    def waiting(self) -> bool:
        """An approval was recorded and the adjustment still needs another approver's."""
        return self.status == PROPOSED and 0 < self.approvals < self.approvals_needed

    @property
    def summary(self) -> str:
        """One line for a person: "proposed -> approved", "approved 1 of 2: waiting for a second
        approver" or "already approved, unchanged"."""
        if self.waiting:
            return f"approved {self.approvals} of {self.approvals_needed}: waiting for a second approver"
        if self.changed:
            return f"{self.previous_status} -> {self.status}"
        return f"already {self.status}, unchanged"


def approvals_needed(connection: Connection, property_id: str, amount_minor: int) -> int:
    """2 when |amount_minor| is above the property's four-eyes threshold, else 1."""
    return approvals_needed_under(four_eyes_threshold(connection, property_id).minor, amount_minor)


def approvals_needed_under(threshold_minor: int, amount_minor: int) -> int:
    """The four-eyes rule (pure): 2 approvers above ``threshold_minor``, else 1."""
    return 2 if abs(amount_minor) > threshold_minor else 1


def approvers(connection: Connection, adjustment_id: str) -> list[str]:
    """Whose approvals of this adjustment_id are live (not withdrawn since), in order (each name once)."""
    return live_approvers(review_history(connection, adjustment_id))


def live_approvers(history: Sequence[RowMapping | dict[str, Any]]) -> list[str]:
    """The approvers whose approval stands after ``history`` (oldest first): an approval counts until its
    approver withdraws it, and again if they approve anew (pure)."""
    live: dict[str, None] = {}
    for event in history:
        if event["action"] == APPROVE:
            live[event["reviewed_by"]] = None
        elif event["action"] == WITHDRAW_APPROVAL:
            live.pop(event["reviewed_by"], None)
    return list(live)


def live_approval_count(adjustment_id: ColumnElement[str]) -> ScalarSelect[int]:
    """SQL: how many different people hold a live approval of the adjustment ``adjustment_id`` names (an
    approve review with no later withdrawal by the same person): the desk's queue counts in SQL what
    ``live_approvers`` counts here."""
    approval = adjustment_reviews.alias("approval")
    later = adjustment_reviews.alias("withdrawal")
    withdrawn = (
        select(later.c.review_id)
        .where(
            later.c.adjustment_id == approval.c.adjustment_id,
            later.c.reviewed_by == approval.c.reviewed_by,
            later.c.action == WITHDRAW_APPROVAL,
            later.c.review_id > approval.c.review_id,
        )
        .exists()
    )
    return (
        select(func.count(func.distinct(approval.c.reviewed_by)))
        .where(approval.c.adjustment_id == adjustment_id, approval.c.action == APPROVE, ~withdrawn)
        .scalar_subquery()
    )


def review_adjustment(
    connection: Connection,
    adjustment_id: str,
    action: str,
    reviewer: str,
    note: str,
    amount_seen: int | None,
    now: datetime,
) -> AdjustmentOutcome:
    """Approve or reject a proposed adjustment, recording who, when, why and the amount.

    Repeating the action on a row already in its status changes nothing; any other status (withdrawn,
    superseded, posted, or the other decision) raises ReviewError, as does an ``amount_seen`` other than
    the row's amount (the ledger moved since the reviewer looked) and a second approval by the same
    person of an adjustment that needs two approvers. A rejection by anyone ends it."""
    unlocked = get_adjustment(connection, adjustment_id)
    lock_partition(connection, unlocked["property_id"], unlocked["night"])
    row = get_adjustment(connection, adjustment_id, lock=True)
    amount, currency = int(row["amount_minor"]), row["currency"]
    needed = approvals_needed(connection, row["property_id"], amount)
    approved_by = approvers(connection, adjustment_id)
    status = ACTION_STATUS[action]
    if row["status"] == status:
        return AdjustmentOutcome(adjustment_id, status, status, amount, currency, len(approved_by), needed)
    if row["status"] != PROPOSED:
        raise ReviewError(
            f"adjustment {adjustment_id} is {row['status']}; only a proposed one can be {status}"
        )
    if amount_seen is not None and amount_seen != amount:
        raise ReviewError(
            f"adjustment {adjustment_id} now proposes {money(amount, currency)}, not the "
            f"{money(amount_seen, currency)} you saw: look at it again before deciding"
        )
    if action == APPROVE:
        if reviewer in approved_by:
            raise ReviewError(
                f"adjustment {adjustment_id} is already approved by {reviewer}; "
                "a second approver must be someone else"
            )
        approved_by.append(reviewer)
        if len(approved_by) < needed:
            status = PROPOSED  # recorded; the row waits for another approver
    outcome = AdjustmentOutcome(
        adjustment_id, row["status"], status, amount, currency, len(approved_by), needed
    )
    _record_review(connection, row, action, status, reviewer, note, now)
    if status == APPROVED:
        enqueue(connection, adjustment_id, row["idempotency_key"], now)
    return outcome


@dataclass(frozen=True)
class WithdrawalOutcome:
    """What withdrawing one approval did: the approvals left and, when the adjustment had been approved,
    that it went back to ``proposed`` with its posting cancelled (``reopened``)."""

    adjustment_id: str
    reviewer: str
    approvals: int  # live approvals left
    approvals_needed: int
    reopened: bool

    @property
    def summary(self) -> str:
        """One line: "approval by bob withdrawn (1 of 2 approvals)", and "; back to proposed, its posting
        cancelled" when it had approved the adjustment."""
        left = (
            f"approval by {self.reviewer} withdrawn ({self.approvals} of {self.approvals_needed} approvals)"
        )
        return f"{left}; back to proposed, its posting cancelled" if self.reopened else left


def withdraw_approval(
    connection: Connection, adjustment_id: str, reviewer: str, note: str, now: datetime
) -> WithdrawalOutcome:
    """Take ``reviewer``'s live approval of the adjustment back, before its posting begins, recording who,
    when and why (a ``withdraw_approval`` review) in the caller's transaction.

    A proposed adjustment (awaiting another approver) just loses the approval. An approved one goes back to
    ``proposed`` and its outbox row is deleted, only while that row is untouched; once a drainer claimed,
    attempted or looked it up, ReviewError says posting has begun. ReviewError too when the reviewer holds
    no live approval, or the adjustment is in any other status (posted, rejected, withdrawn, superseded)."""
    unlocked = get_adjustment(connection, adjustment_id)
    lock_partition(connection, unlocked["property_id"], unlocked["night"])
    row = get_adjustment(connection, adjustment_id, lock=True)
    if row["status"] not in (PROPOSED, APPROVED):
        raise ReviewError(
            f"adjustment {adjustment_id} is {row['status']}; an approval can be withdrawn only before "
            "posting begins"
        )
    approved_by = approvers(connection, adjustment_id)
    if reviewer not in approved_by:
        raise ReviewError(f"{reviewer} has no approval of adjustment {adjustment_id} to withdraw")
    reopened = row["status"] == APPROVED
    if reopened:
        _cancel_untouched_posting(connection, adjustment_id)
    amount = int(row["amount_minor"])
    _record_review(connection, row, WITHDRAW_APPROVAL, PROPOSED, reviewer, note, now)
    needed = approvals_needed(connection, row["property_id"], amount)
    return WithdrawalOutcome(adjustment_id, reviewer, len(approved_by) - 1, needed, reopened)


def _cancel_untouched_posting(connection: Connection, adjustment_id: str) -> None:
    """Delete the adjustment's outbox row if no drainer has touched it; ReviewError otherwise.

    PostgreSQL: the row is locked first, so a drainer's claim (``FOR UPDATE SKIP LOCKED``) either committed
    before (the row is no longer untouched) or skips it and then finds it gone. SQLite: the conditional
    DELETE runs under the database's single write lock, which a claim (``BEGIN IMMEDIATE``) also takes.
    Either way the DELETE's own condition decides, so no claim slips between the look and the delete."""
    o = posting_outbox.c
    connection.execute(select(o.adjustment_id).where(o.adjustment_id == adjustment_id).with_for_update())
    untouched = (
        o.state == outbox_states.APPROVED,
        o.attempts == 0,
        o.lookups == 0,
        o.claimed_by.is_(None),
        o.adapter.is_(None),
    )
    deleted = connection.execute(delete(posting_outbox).where(o.adjustment_id == adjustment_id, *untouched))
    if deleted.rowcount != 1:
        raise ReviewError(
            f"the posting of adjustment {adjustment_id} has begun; an approval can be withdrawn only before"
        )


def adjustment_states(
    connection: Connection, property_id: str, night: str, format_amount: Callable[[int, str], str]
) -> dict[tuple[str, str], str]:
    """(category, record_key) of each finding of the partition that ever proposed an adjustment → its
    adjustment state (``reconcile.lifecycle.adjustment_state``)."""
    c = adjustments.c
    rows = connection.execute(
        select(c.category, c.record_key, c.revision, c.status, c.amount_minor, c.currency).where(
            c.property_id == property_id, c.night == night, c.category.is_not(None)
        )
    ).mappings()
    by_finding: dict[tuple[str, str], list[RowMapping]] = {}
    for row in rows:
        by_finding.setdefault((row["category"], row["record_key"]), []).append(row)
    return {finding: adjustment_state(found, format_amount) for finding, found in by_finding.items()}


def _record_review(
    connection: Connection,
    row: RowMapping,
    action: str,
    status: str,
    reviewer: str,
    note: str,
    now: datetime,
) -> None:
    """The adjustment's new ``status`` (when it changes) and its review row, with the amount decided on."""
    if status != row["status"]:
        set_status(connection, row["adjustment_id"], status, now)
    connection.execute(
        insert(adjustment_reviews).values(
            adjustment_id=row["adjustment_id"],
            action=action,
            previous_status=row["status"],
            status=status,
            reviewed_by=reviewer,
            note=note,
            amount_minor=int(row["amount_minor"]),
            currency=row["currency"],
            reviewed_at=now,
        )
    )
