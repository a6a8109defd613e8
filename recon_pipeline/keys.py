"""Validated keys: property ids, nights and the business keys that make side effects idempotent.

Property ids end up in Dagster partition keys (where ``|`` and ``,`` are separators) and in file paths,
so they are restricted to a safe alphabet here, once, before anything uses them.
"""

from __future__ import annotations

import hashlib
import re
from datetime import date
from typing import Final

# The nights a window can be computed for: a year inside the calendar at either end, so that a night's
# window in any time zone, the nights beside it and a report's nights before it are dates too (a window of
# 9999-12-31 would end in year 10000, one of 0001-01-01 in Europe/Paris start in year 0).
FIRST_NIGHT: Final = date(2, 1, 1)
LAST_NIGHT: Final = date(9998, 12, 31)

_PROPERTY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_NIGHT = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def validate_property_id(property_id: str) -> str:
    """Return the id unchanged if it is safe for partition keys and paths, else raise ValueError."""
    if not isinstance(property_id, str) or not _PROPERTY_ID.match(property_id) or ".." in property_id:
        raise ValueError(
            f"invalid property_id {property_id!r}: use 1-64 characters of A-Z a-z 0-9 _ . - "
            "starting with a letter or digit"
        )
    return property_id


def parse_night(night: str) -> date:
    """'YYYY-MM-DD' → date, rejecting anything that is not a real calendar date or not a night
    (``night_in_range``)."""
    if not isinstance(night, str) or not _NIGHT.match(night):
        raise ValueError(f"night must be 'YYYY-MM-DD', not {night!r}")
    try:
        day = date.fromisoformat(night)
    except ValueError:
        raise ValueError(f"night {night!r} is not a calendar date") from None
    return night_in_range(day)


def night_in_range(day: date) -> date:
    """``day`` unchanged when it is from ``FIRST_NIGHT`` to ``LAST_NIGHT``, else a ValueError naming it."""
    if not FIRST_NIGHT <= day <= LAST_NIGHT:
        raise ValueError(
            f"night '{day.isoformat()}' is not from {FIRST_NIGHT.isoformat()} to {LAST_NIGHT.isoformat()}"
        )
    return day


def adjustment_idempotency_key(property_id: str, night: str, kind: str, record_id: str) -> str:
    """The business key of an adjustment: the operation, never the run or the attempt."""
    return "/".join((validate_property_id(property_id), night, kind, record_id))


def adjustment_id(idempotency_key: str) -> str:
    """A stable primary key derived from the business key, so a replay can never mint a second row."""
    return "adj_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]
