"""The one interface every posting adapter (``sql``, ``http``) speaks, and the outcomes it reports.

A post either lands, is refused for good, or has an outcome nobody knows (sent, no answer). The last is
never retried blind: the outbox resolves it by ``lookup`` of the same idempotency key, which the PMS
answers from its own records. A PMS that reports the key as already used (HTTP 409) is also answered by a
lookup, never by a second post.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class PostingOutcome(enum.Enum):
    """What one attempt to post learned about the PMS."""

    POSTED = "posted"  # the PMS holds the posting (now or from an earlier attempt)
    REJECTED = "rejected"  # the PMS refused it for good (validation); ``reason`` says why
    UNKNOWN = "unknown"  # sent, no answer (timeout, connection lost after sending, 5xx after accept)


@dataclass(frozen=True)
class Posting:
    """One approved adjustment as the PMS books it: an ``adjustment`` ledger entry of the property.

    ``idempotency_key`` is the adjustment's own (property, night, kind, record), so a re-post of the same
    adjustment is recognisable by the PMS whatever attempt sends it."""

    idempotency_key: str
    adjustment_id: str
    property_id: str
    night: str
    booking_id: str | None
    provider_record_id: str | None
    amount_minor: int
    currency: str
    description: str


@dataclass(frozen=True)
class PostingResult:
    """The PMS's answer: ``pms_reference`` names the posting in the PMS when ``POSTED``; ``reason`` says
    why when ``REJECTED`` or ``UNKNOWN``; ``already_posted`` when a post found the key already booked
    (a 409, an existing entry), which the metrics count as a duplicate suppressed."""

    outcome: PostingOutcome
    pms_reference: str | None = None
    reason: str | None = None
    already_posted: bool = False


class PostingAdapter(Protocol):
    """Posts to one PMS. ``post`` never raises for a PMS answer (it returns the outcome); ``lookup``
    returns None when the PMS holds no posting under the key, and raises ``LookupUnavailableError``
    when the PMS cannot be asked (the outcome stays unknown)."""

    name: str

    def post(self, posting: Posting) -> PostingResult: ...

    def lookup(self, idempotency_key: str) -> PostingResult | None: ...


class LookupUnavailableError(RuntimeError):
    """The PMS could not be asked whether it holds a posting; the outcome stays ``unknown``."""
