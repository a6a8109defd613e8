"""What a reviewer may do to a finding (pure); the statuses and actions are the values the findings' table
holds (``storage/findings.py``).

``open`` → ``acknowledged`` (someone knows and is on it) → ``resolved`` (dealt with); ``open`` →
``resolved`` directly too. A person may ``reopen`` an acknowledged or resolved finding (back to ``open``:
the review was wrong or is no longer true). Acting again on a finding already in the target status
changes nothing, so a repeated command is harmless; a resolved finding cannot be acknowledged (reopen it
first, saying why). Either reviewed status also goes back to ``open`` when the pipeline re-detects the
finding with a difference other than the one the reviewer saw (``reviewed_difference_minor``): the review
was about that amount; that automatic re-open is recorded as ``PIPELINE_REVIEWER``. A ``note`` adds a
comment to a finding's history and leaves its status as it is.
"""

from __future__ import annotations

from typing import Final

from recon_pipeline.errors import ReviewError
from recon_pipeline.storage.findings import (
    ACKNOWLEDGE,
    ACKNOWLEDGED,
    NOTE,
    OPEN,
    REOPEN,
    RESOLVE,
    RESOLVED,
)

# The review actions and the status each leads to: a person's (all three) and the pipeline's (REOPEN).
ACTION_STATUS: Final = {ACKNOWLEDGE: ACKNOWLEDGED, RESOLVE: RESOLVED, REOPEN: OPEN}
RESULTING_STATUS: Final = ACTION_STATUS

MAX_REVIEWER_LENGTH = 200
MAX_NOTE_LENGTH = 2000


def next_status(action: str, current: str) -> str | None:
    """The status ``action`` moves a finding in ``current`` to; None when it is already there."""
    target = ACTION_STATUS[action]
    if current == target:
        return None
    if current == RESOLVED and target == ACKNOWLEDGED:
        raise ReviewError(f"it is already resolved; a resolved finding cannot be {target}")
    return target


def status_after(action: str, previous_status: str) -> str:
    """The status a history row left its finding in: a review action's target, a note's status unchanged."""
    return previous_status if action == NOTE else RESULTING_STATUS[action]


def validate_reviewer(reviewer: str | None) -> str:
    """The reviewer's name: one line, 1-200 characters."""
    cleaned = (reviewer or "").strip()
    if not cleaned:
        raise ReviewError("name the reviewer with --by (or set $USER)")
    if len(cleaned) > MAX_REVIEWER_LENGTH or "\n" in cleaned or "\r" in cleaned:
        raise ReviewError(f"--by must be one line of at most {MAX_REVIEWER_LENGTH} characters")
    return cleaned


def validate_note(note: str | None, field: str = "--note") -> str:
    """Why the reviewer acts: required, at most 2000 characters; errors name ``field`` (the CLI's option,
    or the desk's form field)."""
    cleaned = (note or "").strip()
    if not cleaned:
        raise ReviewError(f"say why with {field}")
    if len(cleaned) > MAX_NOTE_LENGTH:
        raise ReviewError(f"{field} must be at most {MAX_NOTE_LENGTH} characters")
    return cleaned
