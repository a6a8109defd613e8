"""Who may do what on the review desk (pure): each role's permissions.

An analyst reads and reviews findings; an approver also decides adjustments; an admin may do all of it.
Every action's endpoint names the permission it needs (``Desk.requires``), so a role is checked on the
server whatever the page showed.
"""

from __future__ import annotations

from typing import Final

VIEW: Final = "view"  # pages and exports of the user's own properties
REVIEW_FINDINGS: Final = "review_findings"  # acknowledge, resolve, reopen a finding
DECIDE_ADJUSTMENTS: Final = "decide_adjustments"  # approve, reject an adjustment

ROLE_PERMISSIONS: Final[dict[str, frozenset[str]]] = {
    "analyst": frozenset({VIEW, REVIEW_FINDINGS}),
    "approver": frozenset({VIEW, REVIEW_FINDINGS, DECIDE_ADJUSTMENTS}),
    "admin": frozenset({VIEW, REVIEW_FINDINGS, DECIDE_ADJUSTMENTS}),
}


def may(role: str, permission: str) -> bool:
    """Whether ``role`` holds ``permission`` (an unknown role holds none)."""
    return permission in ROLE_PERMISSIONS.get(role, frozenset())
