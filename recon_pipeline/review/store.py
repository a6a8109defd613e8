"""A person's review of findings: acknowledging, resolving and reopening them, their assignee and notes,
their review history, and the unexplained-amount thresholds the checks judge by (the ``discrepancies``
table and its queries are ``storage/findings.py``'s).

A review locks its findings (``FOR UPDATE`` on PostgreSQL, in id order so two reviewers cannot deadlock;
SQLite serialises writers anyway) before it decides, and writes the status and its audit row in the
caller's one transaction, so two reviewers at once leave one consistent history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, RowMapping, delete, select

from recon_pipeline.db.schema import FINDING_KEY, discrepancy_reviews, discrepancy_thresholds
from recon_pipeline.db.upsert import upsert
from recon_pipeline.errors import ReviewError
from recon_pipeline.review.limits import default_threshold_minor
from recon_pipeline.review.rules import next_status
from recon_pipeline.storage.findings import (
    NOTE,
    get_finding,
    history_row,
    record_reviews,
    write_assignee,
    write_review,
)


@dataclass(frozen=True)
class ReviewOutcome:
    """What one acknowledge/resolve/reopen did to one finding; ``changed`` is False when it was already so."""

    finding_id: int
    previous_status: str
    status: str
    difference_minor: int
    currency: str

    @property
    def changed(self) -> bool:
        return self.previous_status != self.status


def review_history(connection: Connection, finding: RowMapping) -> list[RowMapping]:
    """Every review action on the finding's business key, oldest first."""
    query = (
        select(discrepancy_reviews)
        .where(*(discrepancy_reviews.c[name] == finding[name] for name in FINDING_KEY))
        .order_by(discrepancy_reviews.c.reviewed_at, discrepancy_reviews.c.review_id)
    )
    return list(connection.execute(query).mappings())


def review(
    connection: Connection,
    finding_ids: Sequence[int],
    action: str,
    reviewer: str,
    note: str,
    now: datetime,
) -> list[ReviewOutcome]:
    """Acknowledge, resolve or reopen the findings (each once, in the order given), recording who, why and the
    difference they saw.

    All or nothing: an unknown id or a transition the status forbids raises before anything is written
    (the caller's transaction rolls back). A finding already in the target status is left as it is.
    """
    locked = {
        finding_id: get_finding(connection, finding_id, lock=True) for finding_id in sorted(set(finding_ids))
    }
    rows = [locked[finding_id] for finding_id in dict.fromkeys(finding_ids)]
    outcomes = [_decide(row, action) for row in rows]
    changed = [(row, outcome) for row, outcome in zip(rows, outcomes, strict=True) if outcome.changed]
    for _row, outcome in changed:
        write_review(
            connection, outcome.finding_id, outcome.status, reviewer, note, outcome.difference_minor, now
        )
    record_reviews(
        connection,
        [history_row(row, action, outcome.previous_status, reviewer, note, now) for row, outcome in changed],
    )
    return outcomes


def assign(connection: Connection, finding_id: int, assignee: str | None, now: datetime) -> RowMapping:
    """Give the finding to ``assignee`` (None: to no one) from ``now``, its status untouched; the finding as
    it was before (UnknownFindingError for an unknown id). Who may be given it is the caller's rule."""
    before = get_finding(connection, finding_id, lock=True)
    write_assignee(connection, finding_id, assignee, now)
    return before


def add_note(connection: Connection, finding_id: int, reviewer: str, note: str, now: datetime) -> RowMapping:
    """A ``note`` row in the finding's history (who, what, the difference as it is now) that leaves its
    status as it is; the finding (UnknownFindingError for an unknown id)."""
    row = get_finding(connection, finding_id, lock=True)
    record_reviews(connection, [history_row(row, NOTE, row["review_status"], reviewer, note, now)])
    return row


def _decide(row: RowMapping, action: str) -> ReviewOutcome:
    try:
        status = next_status(action, row["review_status"])
    except ReviewError as error:
        raise ReviewError(f"finding {row['discrepancy_id']}: {error}") from None
    return ReviewOutcome(
        finding_id=row["discrepancy_id"],
        previous_status=row["review_status"],
        status=status or row["review_status"],
        difference_minor=int(row["difference_minor"]),
        currency=row["currency"],
    )


@dataclass(frozen=True)
class Threshold:
    """The unexplained-amount threshold in force for a property, and where it comes from."""

    minor: int
    source: str  # "property" (discrepancy_thresholds) or "default" (RECON_UNEXPLAINED_THRESHOLD_MINOR)


def threshold_for(connection: Connection, property_id: str) -> Threshold:
    """The property's own threshold, else the environment's default."""
    query = select(discrepancy_thresholds.c.unexplained_threshold_minor).where(
        discrepancy_thresholds.c.property_id == property_id
    )
    own = connection.execute(query).scalar_one_or_none()
    if own is None:
        return Threshold(default_threshold_minor(), "default")
    return Threshold(int(own), "property")


def set_threshold(connection: Connection, property_id: str, minor: int | None, now: datetime) -> None:
    """Set the property's threshold (minor units), or drop it back to the default with ``None``."""
    if minor is None:
        connection.execute(
            delete(discrepancy_thresholds).where(discrepancy_thresholds.c.property_id == property_id)
        )
        return
    row = {"property_id": property_id, "unexplained_threshold_minor": minor, "updated_at": now}
    facts = ["unexplained_threshold_minor", "updated_at"]
    upsert(connection, discrepancy_thresholds, [row], ["property_id"], facts)
