"""The outbox's state machine (pure: no database, no adapter): which rows are due, and what a post's or a
lookup's answer makes of a claimed row.

    approved ──claim──▶ posting ──post──▶ posted | failed (permanent, with reason) | unknown
    posting whose claim expired (the poster died) ─┐
    unknown (sent, no answer) ─────────────────────┴─lookup──▶ posted (found) | approved (not found:
                                                               a fresh post) | unknown (PMS unreachable)

Nothing is ever re-posted blind: a row that may have been sent goes back to ``approved`` only after the
PMS said, from its own records, that it holds no posting under the key. ``attempts`` counts real posts,
each committed just before it is sent (a claim or a lookup counts nothing), so a poster that died before
sending spends none of the budget and one that died after sending has spent it; once ``max_attempts``
posts were made and the PMS still holds nothing, the row is ``failed``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, or_

from recon_pipeline import config
from recon_pipeline.db.outbox_states import APPROVED, FAILED, POSTED, POSTING, UNKNOWN
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.postings.adapter import PostingOutcome, PostingResult
from recon_pipeline.retry import RetrySchedule


def _default_backoff() -> RetrySchedule:
    return RetrySchedule(base_delay=timedelta(seconds=30), max_delay=timedelta(minutes=30))


@dataclass(frozen=True)
class PostingPolicy:
    """How often a posting is tried (``max_attempts`` real posts), how long to wait between posts and
    lookups (exponential with jitter, ``backoff``), and how long a claim holds a row (``lease``: longer
    than the adapter's timeout, or a slow post would be looked up while still in flight)."""

    max_attempts: int = 5
    backoff: RetrySchedule = field(default_factory=_default_backoff)
    lease: timedelta = timedelta(minutes=5)

    @classmethod
    def configured(cls) -> PostingPolicy:
        """RECON_POSTING_MAX_ATTEMPTS (5), RECON_POSTING_BASE_DELAY_S (30), RECON_POSTING_MAX_DELAY_S
        (1800) and RECON_POSTING_LEASE_S (300), read now (never at import)."""
        return cls(
            max_attempts=config.positive_int_from_env("RECON_POSTING_MAX_ATTEMPTS", 5),
            backoff=RetrySchedule(
                base_delay=timedelta(seconds=config.positive_int_from_env("RECON_POSTING_BASE_DELAY_S", 30)),
                max_delay=timedelta(seconds=config.positive_int_from_env("RECON_POSTING_MAX_DELAY_S", 1800)),
            ),
            lease=timedelta(seconds=config.positive_int_from_env("RECON_POSTING_LEASE_S", 300)),
        )


def due(now: datetime) -> ColumnElement[bool]:
    """Rows a drainer may claim at ``now``: approved and due; unknown, due and not held; posting with an
    expired claim (its poster died or stalled)."""
    unheld = or_(outbox.c.locked_until.is_(None), outbox.c.locked_until < now)
    return or_(
        and_(outbox.c.state == APPROVED, outbox.c.next_attempt_at <= now),
        and_(outbox.c.state == UNKNOWN, outbox.c.next_attempt_at <= now, unheld),
        and_(outbox.c.state == POSTING, outbox.c.locked_until < now),
    )


@dataclass(frozen=True)
class Claimed:
    """A row one drainer holds until ``locked_until``; ``state`` is the state it was claimed in."""

    adjustment_id: str
    idempotency_key: str
    state: str
    attempts: int
    lookups: int
    claim: str  # the claim's own token, written to claimed_by: the settling write's proof of ownership
    locked_until: datetime

    @property
    def needs_lookup(self) -> bool:
        """A row that may have been sent (unknown, or posting under an expired claim) is only looked up."""
        return self.state != APPROVED

    @property
    def held_state(self) -> str:
        """The state the claim left the row in: an approved row is ``posting`` while held."""
        return POSTING if self.state == APPROVED else self.state


@dataclass(frozen=True)
class Settlement:
    """What the row becomes; ``next_attempt_at`` matters for ``approved`` and ``unknown`` only."""

    state: str
    attempts: int
    lookups: int
    next_attempt_at: datetime
    pms_reference: str | None = None
    last_error: str | None = None


def after_post(
    row: Claimed, result: PostingResult, now: datetime, policy: PostingPolicy, rng: random.Random
) -> Settlement:
    """A real post was made: it counts, whatever the answer (the drainer committed it before sending,
    ``drain.count_attempt``; this writes the same number with the answer)."""
    attempts = row.attempts + 1
    if result.outcome is PostingOutcome.POSTED:
        return Settlement(POSTED, attempts, row.lookups, now, result.pms_reference)
    if result.outcome is PostingOutcome.REJECTED:
        return Settlement(
            FAILED, attempts, row.lookups, now, last_error=result.reason or "rejected by the PMS"
        )
    return Settlement(
        UNKNOWN,
        attempts,
        row.lookups,
        now + policy.backoff.delay(row.lookups + 1, rng),
        last_error=result.reason or "sent, no answer",
    )


def after_lookup(
    row: Claimed, found: PostingResult | None, now: datetime, policy: PostingPolicy, rng: random.Random
) -> Settlement:
    """The PMS answered a lookup of the key: found → posted; nothing under the key → approved for a fresh
    post after the backoff (at once if no post was ever made), or failed once the budget is spent."""
    lookups = row.lookups + 1
    if found is not None and found.outcome is PostingOutcome.POSTED:
        return Settlement(POSTED, row.attempts, lookups, now, found.pms_reference)
    if found is not None and found.outcome is PostingOutcome.REJECTED:
        return Settlement(
            FAILED, row.attempts, lookups, now, last_error=found.reason or "rejected by the PMS"
        )
    if found is not None:  # the PMS knows the key but not yet its outcome: ask again later
        return unreachable(row, found.reason or "the PMS has no outcome for the key yet", now, policy, rng)
    if row.attempts >= policy.max_attempts:
        reason = (
            f"the PMS holds no posting after {row.attempts} posts (the retry budget is {policy.max_attempts})"
        )
        return Settlement(FAILED, row.attempts, lookups, now, last_error=reason)
    wait = policy.backoff.delay(row.attempts, rng) if row.attempts else timedelta(0)
    return Settlement(APPROVED, row.attempts, lookups, now + wait, last_error=None)


def unreachable(
    row: Claimed, reason: str, now: datetime, policy: PostingPolicy, rng: random.Random
) -> Settlement:
    """The PMS could not be asked: the outcome stays unknown, to be looked up again after the backoff."""
    lookups = row.lookups + 1
    return Settlement(
        UNKNOWN, row.attempts, lookups, now + policy.backoff.delay(lookups, rng), last_error=reason
    )
