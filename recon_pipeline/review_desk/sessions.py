"""The review desk's sessions, kept in the database (``review_sessions``) so that they can end.

The signed cookie carries only a random session id; the row keyed by its SHA-256 says whose session it is.
A session ends when its row is gone: at sign-out, when its user's password or role changes or the user is
removed, ``idle_s`` after its last request, and ``lifetime_s`` after sign-in whatever happened since. A
copy of the cookie taken before any of those signs no one in.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Connection, delete, insert, or_, select, update

from recon_pipeline.db.schema import review_sessions

TOUCH_EVERY = timedelta(minutes=1)  # a request records its time at most this often: not a write per page


@dataclass(frozen=True)
class SessionLimits:
    """How long a session lasts: ``idle_s`` since its last request, ``lifetime_s`` since sign-in."""

    idle_s: float = 8 * 3600  # one working day of inactivity
    lifetime_s: float = 12 * 3600  # never longer than a long working day, however busy


def start_session(connection: Connection, user_name: str, now: datetime, limits: SessionLimits) -> str:
    """A new session of ``user_name``: its id, for the cookie. Sessions that already ended are removed
    on the way, so the table holds live sessions only."""
    connection.execute(delete(review_sessions).where(_ended(now, limits)))
    session_id = secrets.token_urlsafe(32)
    connection.execute(
        insert(review_sessions).values(
            session_hash=_hash(session_id), user_name=user_name, signed_in_at=now, last_seen_at=now
        )
    )
    return session_id


def session_user(connection: Connection, session_id: str, now: datetime, limits: SessionLimits) -> str | None:
    """The user name of a live session, its last request moved to ``now``; None for a session that ended
    (its row is removed) or never existed."""
    key = review_sessions.c.session_hash == _hash(session_id)
    row = connection.execute(select(review_sessions, _ended(now, limits).label("ended")).where(key)).first()
    if row is None:
        return None
    if row.ended:
        connection.execute(delete(review_sessions).where(key))
        return None
    if now - row.last_seen_at >= TOUCH_EVERY:
        connection.execute(update(review_sessions).where(key).values(last_seen_at=now))
    return str(row.user_name)


def end_session(connection: Connection, session_id: str) -> None:
    """Sign-out: this session only; the user's other sessions go on."""
    connection.execute(delete(review_sessions).where(review_sessions.c.session_hash == _hash(session_id)))


def end_user_sessions(connection: Connection, user_name: str) -> int:
    """End every session of ``user_name`` (a changed password or role, a removed user); how many."""
    return int(
        connection.execute(delete(review_sessions).where(review_sessions.c.user_name == user_name)).rowcount
    )


def _ended(now: datetime, limits: SessionLimits) -> ColumnElement[bool]:
    """Whether a session is past its absolute lifetime or idle for too long, as SQL."""
    c = review_sessions.c
    return or_(
        c.signed_in_at <= now - timedelta(seconds=limits.lifetime_s),
        c.last_seen_at <= now - timedelta(seconds=limits.idle_s),
    )


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()
