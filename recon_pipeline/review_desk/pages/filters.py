"""What every list's filters share: a query parameter's value, and the property filter, which may only
name one of the user's properties (another is refused like an unknown one, so nothing tells them apart)."""

from __future__ import annotations

from typing import Any

from recon_pipeline.review_desk.users import ReviewUser


def optional_param(params: Any, name: str) -> str | None:
    """A query parameter's value without surrounding blanks; None when absent or blank."""
    value = params.get(name, "").strip()
    return value or None


def users_property(params: Any, user: ReviewUser) -> str | None:
    """The ``property`` filter: None for all of the user's properties, else one of them (ValueError)."""
    property_id = optional_param(params, "property")
    if property_id is not None and property_id not in user.properties:
        raise ValueError(f"unknown property {property_id!r}")
    return property_id
