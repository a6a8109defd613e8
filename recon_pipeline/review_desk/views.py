"""Saved views: a user's named queries of a list (``review_saved_views``), and a list's query as the desk
keeps it (for a saved view, or the way back to a list from a finding or a confirmation).

A view is its owner's alone: every query here takes the user's name, so no one lists, opens or deletes
another's view (another's view id is the same "not found" as an unknown one). A query is only re-encoded
here, never trusted: each list validates its own parameters when the view is opened, as for any URL.
Saving a name again on the same list replaces that view's query. A user keeps at most
``MAX_VIEWS_PER_USER`` views, all of them listed (so every one can be deleted from the desk).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode

from sqlalchemy import Connection, Select, and_, delete, func, select

from recon_pipeline.db.schema import review_saved_views, review_users
from recon_pipeline.db.upsert import upsert

LISTS: Final = ("findings", "adjustments", "payouts", "matches", "nights")
MAX_NAME_LENGTH: Final = 80
MAX_QUERY_LENGTH: Final = 2000
MAX_VIEWS_PER_USER: Final = 50  # every list's together: a bounded table, and a list of links still read


@dataclass(frozen=True)
class SavedView:
    """One of a user's views: ``query`` opens it as ``/<list_name>?<query>``."""

    view_id: int
    list_name: str
    name: str
    query: str


def clean_query(raw: str, leave_out: tuple[str, ...] = ()) -> str:
    """``raw`` (a query string, from a form) re-encoded: blank values and the ``leave_out`` parameters
    dropped, so it can only be a query of the path it is appended to; "" when it is too long to keep."""
    if len(raw) > MAX_QUERY_LENGTH:
        return ""
    return urlencode([(name, value) for name, value in parse_qsl(raw) if name not in leave_out])


def validate_view(list_name: str, name: str) -> tuple[str, str]:
    """The list and the view's name (one line, 1-80 characters, blanks around it dropped); ValueError."""
    if list_name not in LISTS:
        raise ValueError(f"unknown list {list_name!r}: one of {', '.join(LISTS)}")
    cleaned = name.strip()
    if not cleaned or len(cleaned) > MAX_NAME_LENGTH or not cleaned.isprintable():
        raise ValueError(f"name the view in one line of 1-{MAX_NAME_LENGTH} characters")
    return list_name, cleaned


def save_view(
    connection: Connection, user_name: str, list_name: str, name: str, query: str, now: datetime
) -> SavedView:
    """Save (or replace) ``user_name``'s view ``name`` of ``list_name`` as ``query`` (its page left out);
    ValueError for a bad list or name, or a new view beyond the user's ``MAX_VIEWS_PER_USER``."""
    list_name, name = validate_view(list_name, name)
    t = review_saved_views.c
    # The user's row locked (PostgreSQL; SQLite has one writer at a time): two saves at once count in turn.
    connection.execute(select(review_users.c.name).where(review_users.c.name == user_name).with_for_update())
    others = (
        select(func.count())
        .select_from(review_saved_views)
        .where(t.user_name == user_name, ~and_(t.list_name == list_name, t.name == name))
    )
    if connection.execute(others).scalar_one() >= MAX_VIEWS_PER_USER:
        raise ValueError(
            f"you have {MAX_VIEWS_PER_USER} saved views, the most one user keeps: delete one first"
        )
    row = {
        "user_name": user_name,
        "list_name": list_name,
        "name": name,
        "query": clean_query(query, leave_out=("page",)),
        "created_at": now,
    }
    upsert(connection, review_saved_views, [row], ["user_name", "list_name", "name"], ["query", "created_at"])
    found = connection.execute(
        _views().where(t.user_name == user_name, t.list_name == list_name, t.name == name)
    ).one()
    return _view(found)


def saved_views(connection: Connection, user_name: str, list_name: str) -> list[SavedView]:
    """``user_name``'s views of ``list_name``, by name: all of them, so each can be deleted (the cap bounds
    them; a user holding more, saved before it, sees them all too)."""
    t = review_saved_views.c
    query = _views().where(t.user_name == user_name, t.list_name == list_name).order_by(t.name, t.view_id)
    return [_view(row) for row in connection.execute(query)]


def delete_view(connection: Connection, user_name: str, view_id: int) -> SavedView | None:
    """Delete ``user_name``'s view ``view_id``; the view deleted, or None if they have no such view."""
    t = review_saved_views.c
    found = connection.execute(_views().where(t.view_id == view_id, t.user_name == user_name)).first()
    if found is None:
        return None
    connection.execute(delete(review_saved_views).where(t.view_id == view_id, t.user_name == user_name))
    return _view(found)


def _views() -> Select[Any]:
    t = review_saved_views.c
    return select(t.view_id, t.list_name, t.name, t.query)


def _view(row: Any) -> SavedView:
    return SavedView(int(row.view_id), row.list_name, row.name, row.query)
