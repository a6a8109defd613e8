"""The review desk's audit log (``review_audit``): who did what, when, to which target, at what amount.

An action's audit row is written in the action's own transaction (pass its connection), so the log never
shows an action that did not happen, nor misses one that did.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection, insert

from recon_pipeline.db.schema import review_audit


def record_audit(
    connection: Connection,
    user: str,
    action: str,
    target: str | None = None,
    amount_seen: int | None = None,
    detail: str | None = None,
) -> None:
    """Append one audit row, stamped now (UTC)."""
    connection.execute(
        insert(review_audit).values(
            at=datetime.now(UTC),
            user_name=user,
            action=action,
            target=target,
            amount_seen=amount_seen,
            detail=detail,
        )
    )
