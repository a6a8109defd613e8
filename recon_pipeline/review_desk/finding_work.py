"""Working a finding on the desk: reviewing it (acknowledge, resolve, reopen) after checking the difference
its reader saw, giving it to someone, writing a note on it; each with the desk's audit row in the caller's
one transaction. Giving and noting never change the review status.

A finding may be given only to a desk user who may see its property and review findings, so no one is
handed work they cannot open. The callers narrow the finding first: the desk to the signed-in user's
properties (another property's finding is its 404), the CLI to none (it holds the database's keys).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, RowMapping, select

from recon_pipeline.db.schema import review_users
from recon_pipeline.errors import ReviewError
from recon_pipeline.review import store
from recon_pipeline.review.render import money
from recon_pipeline.review_desk.access import REVIEW_FINDINGS, may
from recon_pipeline.review_desk.audit import record_audit
from recon_pipeline.storage.findings import NOTE, get_finding
from recon_pipeline.words import REVIEW_STATE_WORDS

ASSIGN = "assign"
UNASSIGN = "unassign"


def review_finding(
    connection: Connection,
    actor: str,
    finding_id: int,
    action: str,
    note: str,
    seen: int | None,
    now: datetime,
) -> str:
    """``action`` on the finding (already narrowed by the caller) by ``actor`` with ``note``, audited (the
    audit row in codes); what changed, in words. ReviewError, with nothing written, when its difference is
    no longer the ``seen`` one (None: not said) or its status forbids the action."""
    current = get_finding(connection, finding_id, lock=True)
    difference = int(current["difference_minor"])
    if seen is not None and seen != difference:
        raise ReviewError(
            f"the difference is now {money(difference, current['currency'])}, not the "
            f"{money(seen, current['currency'])} you saw: look again before reviewing"
        )
    (outcome,) = store.review(connection, [finding_id], action, actor, note, now)
    change = (
        f"{outcome.previous_status} -> {outcome.status}"
        if outcome.changed
        else f"already {outcome.status}, unchanged"
    )
    record_audit(connection, actor, action, str(finding_id), outcome.difference_minor, change)
    was, now_is = (REVIEW_STATE_WORDS.get(s, s) for s in (outcome.previous_status, outcome.status))
    return f"{was} → {now_is}" if outcome.changed else f"already {now_is.lower()}, unchanged"


def assignees(connection: Connection, property_id: str) -> list[str]:
    """The names of the desk users who may see ``property_id`` and review findings, sorted."""
    query = select(review_users.c.name, review_users.c.role, review_users.c.properties).order_by(
        review_users.c.name
    )
    return [
        name
        for name, role, properties in connection.execute(query).tuples()
        if property_id in properties.split(",") and may(role, REVIEW_FINDINGS)
    ]


def assign_finding(
    connection: Connection, actor: str, finding: RowMapping, assignee: str | None, now: datetime
) -> str:
    """Give ``finding`` to ``assignee`` (None: to no one), audited as ``actor``; what changed, in words.
    ReviewError (nothing written) when ``assignee`` may not review the finding's property."""
    property_id = finding["property_id"]
    if assignee is not None and assignee not in assignees(connection, property_id):
        raise ReviewError(f"{assignee} is not a desk user who may review {property_id}'s findings")
    before = store.assign(connection, finding["discrepancy_id"], assignee, now)
    previous = before["assigned_to"]
    change = f"assigned to {assignee}" if assignee is not None else "unassigned"
    if previous is not None and previous != assignee:
        change += f" (was {previous})"
    record_audit(
        connection,
        actor,
        UNASSIGN if assignee is None else ASSIGN,
        str(finding["discrepancy_id"]),
        int(before["difference_minor"]),
        change,
    )
    return change


def note_finding(connection: Connection, actor: str, finding: RowMapping, note: str, now: datetime) -> str:
    """A note (already validated) in ``finding``'s history by ``actor``, audited; its status, unchanged."""
    row = store.add_note(connection, finding["discrepancy_id"], actor, note, now)
    change = f"note; still {row['review_status']}"
    record_audit(connection, actor, NOTE, str(row["discrepancy_id"]), int(row["difference_minor"]), change)
    return change
