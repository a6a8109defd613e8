"""What every list's filters share: a query parameter's value, and the property filter, which may only
name one of the user's properties (another is refused like an unknown one, so nothing tells them apart).

A value with a control character is refused here, once for every filter and search: SQLite ends a LIKE
pattern at a NUL (``q=%00`` matched every row) and PostgreSQL refuses NUL in text (an error, not a list).
"""

from __future__ import annotations

import unicodedata
from typing import Any

from recon_pipeline.review_desk.users import ReviewUser


def optional_param(params: Any, name: str) -> str | None:
    """A query parameter's value without surrounding blanks; None when absent or blank; ValueError naming
    it when it holds a control character (NUL, a line break, a tab inside it)."""
    value = params.get(name, "").strip()
    if holds_control_character(value):
        raise ValueError(f"{'search' if name == 'q' else name} must not hold control characters")
    return value or None


def holds_control_character(text: str) -> bool:
    """Whether ``text`` holds a control character (Unicode's Cc: NUL, a line break, a tab, escape...)."""
    return any(unicodedata.category(character) == "Cc" for character in text)


def users_property(params: Any, user: ReviewUser) -> str | None:
    """The ``property`` filter: None for all of the user's properties, else one of them (ValueError)."""
    property_id = optional_param(params, "property")
    if property_id is not None and property_id not in user.properties:
        raise ValueError(f"unknown property {property_id!r}")
    return property_id
