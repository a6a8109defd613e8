"""Draining the outbox (the I/O around ``outbox.py``): claim due rows, post or look each up through the
adapter with bounded concurrency, and commit what the PMS said, one row per transaction.

Claiming is one short transaction that marks due rows held (``claimed_by`` = this claim's token,
``locked_until`` = now + lease; an approved row becomes ``posting``), committed before anything is sent:

- PostgreSQL: ``SELECT … FOR UPDATE SKIP LOCKED``, so concurrent drainers never wait on each other and
  never claim the same row.
- SQLite has no row locks: the same statements run under ``BEGIN IMMEDIATE``, which takes the database's
  single write lock before the read, so two drainers are serialised instead of reading the same rows.

Before a post is sent, its attempt is committed under the claim (``count_attempt``), so ``attempts`` counts
every post the PMS may have received even when the drainer dies before recording the answer. Each answer
is committed on its own (the durable result first): the outbox row's new state and, when
``posted``, the adjustment's status, in one transaction, and only while the claim is still ours (a
drainer whose lease expired and was taken over writes nothing). A claim whose lease ran out before its
turn is not sent: the row is then an expired ``posting`` claim, which the next drain looks up.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import Engine, RowMapping, Update, and_, case, select, update

from recon_pipeline.checkpoints import POSTING_ANSWERED, POSTING_BEFORE_SEND, POSTING_COMMITTED, reached
from recon_pipeline.db.outbox_states import APPROVED, POSTED, POSTING, UNKNOWN
from recon_pipeline.db.schema import adjustments, discrepancies
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.metrics.instruments import (
    ACKNOWLEDGEMENTS,
    DUPLICATES_SUPPRESSED,
    LOST,
    PROCESSING_SECONDS,
    UNKNOWN_TRANSITIONS,
)
from recon_pipeline.metrics.queues import POSTINGS
from recon_pipeline.postings.adapter import (
    LookupUnavailableError,
    Posting,
    PostingAdapter,
    PostingOutcome,
    PostingResult,
)
from recon_pipeline.postings.outbox import (
    Claimed,
    PostingPolicy,
    Settlement,
    after_lookup,
    after_post,
    due,
    unreachable,
)
from recon_pipeline.postings.store import mark_adjustment_posted

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]
_RNG = random.Random()


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class DrainCounts:
    """What one drain did: rows claimed to post and to look up, and the state each ended in (``lost``: the
    claim was taken over or ran out before its turn, nothing written)."""

    claimed: int = 0
    to_post: int = 0
    to_look_up: int = 0
    by_state: dict[str, int] = field(default_factory=dict)
    lost: int = 0

    def add(self, state: str | None) -> None:
        if state is None:
            self.lost += 1
        else:
            self.by_state[state] = self.by_state.get(state, 0) + 1


def claim_due(
    engine: Engine, worker_id: str, limit: int, lease_until: datetime, now: datetime
) -> list[Claimed]:
    """Claim up to ``limit`` due rows, oldest first, until ``lease_until``; committed before returning."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    token = f"{worker_id}:{uuid.uuid4().hex[:12]}"
    with engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        rows = connection.execute(
            select(
                outbox.c.adjustment_id,
                outbox.c.idempotency_key,
                outbox.c.state,
                outbox.c.attempts,
                outbox.c.lookups,
            )
            .where(due(now))
            .order_by(outbox.c.next_attempt_at, outbox.c.adjustment_id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        ).all()
        if not rows:
            connection.rollback()
            return []
        connection.execute(
            update(outbox)
            .where(outbox.c.adjustment_id.in_([row.adjustment_id for row in rows]))
            .values(
                state=case((outbox.c.state == APPROVED, POSTING), else_=outbox.c.state),
                claimed_by=token,
                locked_until=lease_until,
                updated_at=now,
            )
        )
        connection.commit()
    return [
        Claimed(
            row.adjustment_id, row.idempotency_key, row.state, row.attempts, row.lookups, token, lease_until
        )
        for row in rows
    ]


def posting_of(engine: Engine, claimed: Claimed) -> Posting:
    """The adjustment as the PMS books it; the booking is the one its finding names, if any."""
    finding = and_(
        discrepancies.c.property_id == adjustments.c.property_id,
        discrepancies.c.night == adjustments.c.night,
        discrepancies.c.category == adjustments.c.category,
        discrepancies.c.record_key == adjustments.c.record_key,
    )
    with engine.connect() as connection:
        row: RowMapping = (
            connection.execute(
                select(adjustments, discrepancies.c.booking_id)
                .select_from(adjustments.outerjoin(discrepancies, finding))
                .where(adjustments.c.adjustment_id == claimed.adjustment_id)
            )
            .mappings()
            .one()
        )
    return Posting(
        idempotency_key=claimed.idempotency_key,
        adjustment_id=claimed.adjustment_id,
        property_id=row["property_id"],
        night=row["night"],
        booking_id=row["booking_id"],
        provider_record_id=row["provider_record_id"],
        amount_minor=int(row["amount_minor"]),
        currency=row["currency"],
        description=f"{row['kind']}: {row['reason']}",
    )


def settle(
    engine: Engine, claimed: Claimed, settlement: Settlement, adapter_name: str, now: datetime
) -> bool:
    """Write the row's new state (and, once posted, the adjustment's) in one transaction, if the claim is
    still ours; False when it is not (nothing written)."""
    with engine.begin() as connection:
        result = connection.execute(
            _held(claimed).values(
                state=settlement.state,
                attempts=settlement.attempts,
                lookups=settlement.lookups,
                next_attempt_at=settlement.next_attempt_at,
                pms_reference=settlement.pms_reference,
                last_error=settlement.last_error,
                adapter=adapter_name,
                locked_until=None,
                updated_at=now,
            )
        )
        if result.rowcount != 1:  # the claim is no longer ours: nothing was written
            return False
        if settlement.state == POSTED:
            mark_adjustment_posted(connection, claimed.adjustment_id, now)
    return True


def count_attempt(engine: Engine, claimed: Claimed, now: datetime) -> bool:
    """Commit one more post to the row while the claim is still ours, before the request leaves: a
    drainer that dies after sending (the PMS may hold the charge) has spent the attempt, so ``attempts`` is
    the posts the PMS may have received whatever dies when, and a drainer that keeps dying after sending
    still runs out of its budget. False (nothing written, nothing to send) when the claim is not ours."""
    with engine.begin() as connection:
        result = connection.execute(_held(claimed).values(attempts=outbox.c.attempts + 1, updated_at=now))
    return result.rowcount == 1


def _held(claimed: Claimed) -> Update:
    """An update of the claimed row that touches it only while the claim is still ours, in the state the
    claim left it in."""
    return update(outbox).where(
        outbox.c.adjustment_id == claimed.adjustment_id,
        outbox.c.claimed_by == claimed.claim,
        outbox.c.state == claimed.held_state,
    )


def _ask(adapter: PostingAdapter, claimed: Claimed, posting: Callable[[], Posting]) -> PostingResult | None:
    """Post or look up; an adapter that raises instead of answering leaves the outcome unknown."""
    if claimed.needs_lookup:
        return adapter.lookup(claimed.idempotency_key)
    try:
        return adapter.post(posting())
    except Exception as error:  # the request may have been sent: never treat it as not posted
        log.warning("posting %s raised: %s", claimed.adjustment_id, error)
        return PostingResult(PostingOutcome.UNKNOWN, reason=f"{type(error).__name__}: {error}")


def process_one(
    engine: Engine,
    adapter: PostingAdapter,
    claimed: Claimed,
    policy: PostingPolicy,
    clock: Clock = _utc_now,
    rng: random.Random = _RNG,
) -> str | None:
    """Post or look up one claimed row and commit the answer; the state written, None if the claim was
    lost or ran out before its turn (then nothing was sent)."""
    if clock() >= claimed.locked_until:
        return None
    reached(POSTING_BEFORE_SEND)
    if not claimed.needs_lookup and not count_attempt(engine, claimed, clock()):
        return None  # the claim was taken over: someone else owns the row now, nothing is sent
    try:
        answer = _ask(adapter, claimed, lambda: posting_of(engine, claimed))
    except LookupUnavailableError as error:
        settlement = unreachable(claimed, f"lookup unavailable: {error}", clock(), policy, rng)
    except Exception as error:  # a lookup that failed some other way answered nothing either
        log.warning("lookup of %s raised: %s", claimed.adjustment_id, error)
        settlement = unreachable(
            claimed, f"lookup failed: {type(error).__name__}: {error}", clock(), policy, rng
        )
    else:
        if answer is not None and answer.already_posted:
            DUPLICATES_SUPPRESSED.labels(POSTINGS).inc()
        now = clock()
        settlement = (
            after_lookup(claimed, answer, now, policy, rng)
            if claimed.needs_lookup
            else after_post(claimed, answer or PostingResult(PostingOutcome.UNKNOWN), now, policy, rng)
        )
    reached(POSTING_ANSWERED)  # a death here leaves the row claimed: the next drain looks it up
    settled = settle(engine, claimed, settlement, adapter.name, clock())
    reached(POSTING_COMMITTED)
    return settlement.state if settled else None


def drain(
    engine: Engine,
    adapter: PostingAdapter,
    worker_id: str,
    *,
    policy: PostingPolicy,
    batch_size: int = 50,
    max_batches: int = 20,
    concurrency: int = 4,
    clock: Clock = _utc_now,
    rng: random.Random = _RNG,
) -> DrainCounts:
    """Claim and settle due rows, at most ``concurrency`` posts in flight, until none is due or
    ``max_batches`` batches were claimed."""
    counts = DrainCounts()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="poster") as pool:
        for _ in range(max_batches):
            now = clock()
            batch = claim_due(engine, worker_id, batch_size, now + policy.lease, now)
            if not batch:
                break
            counts.claimed += len(batch)
            counts.to_look_up += sum(claimed.needs_lookup for claimed in batch)
            counts.to_post += sum(not claimed.needs_lookup for claimed in batch)
            for state in pool.map(
                lambda claimed: _counted(engine, adapter, claimed, policy, clock, rng), batch
            ):
                counts.add(state)
    return counts


def _counted(
    engine: Engine,
    adapter: PostingAdapter,
    claimed: Claimed,
    policy: PostingPolicy,
    clock: Clock,
    rng: random.Random,
) -> str | None:
    """``process_one``, its duration, its outcome and a move into ``unknown`` counted (metrics)."""
    with PROCESSING_SECONDS.labels(POSTINGS).time():
        state = process_one(engine, adapter, claimed, policy, clock, rng)
    ACKNOWLEDGEMENTS.labels(POSTINGS, state or LOST).inc()
    if state == UNKNOWN and claimed.state != UNKNOWN:
        UNKNOWN_TRANSITIONS.labels(POSTINGS).inc()
    return state
