"""Adjustments proposed and approved as the pipeline and the desk write them, the posting drain's clock and a
PMS behind switchable faults: the builders of the posting tests (outbox, drain, metrics, the desk)."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, select

from recon_pipeline.db.schema import adjustment_reviews, adjustments
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.keys import adjustment_id, adjustment_idempotency_key
from recon_pipeline.postings.adapter import LookupUnavailableError, Posting, PostingOutcome, PostingResult
from recon_pipeline.postings.outbox import PostingPolicy
from recon_pipeline.postings.sql_adapter import SqlPostingAdapter
from recon_pipeline.review.adjustments import APPROVE, review_adjustment

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


POLICY = PostingPolicy(max_attempts=3, lease=timedelta(minutes=5))


class Clock:
    """The drain's clock, moved by the test."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


class FaultyPms:
    """The real ``sql`` adapter behind switchable faults: ``accept_then_silence`` books the posting and
    answers nothing (a timeout after accept); ``silence`` answers nothing without booking; ``reject``
    refuses; ``lookup_down`` makes the PMS unreachable for lookups. Counts posts per key."""

    name = "sql"

    def __init__(self, engine: Engine) -> None:
        self.real = SqlPostingAdapter(engine, clock=lambda: NOW)
        self.mode = "ok"
        self.lookup_down = False
        self.posts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def post(self, posting: Posting) -> PostingResult:
        with self._lock:
            self.posts[posting.idempotency_key] += 1
        if self.mode == "reject":
            return PostingResult(PostingOutcome.REJECTED, reason="folio closed")
        if self.mode == "silence":
            return PostingResult(PostingOutcome.UNKNOWN, reason="timed out")
        result = self.real.post(posting)
        if self.mode == "accept_then_silence":
            return PostingResult(PostingOutcome.UNKNOWN, reason="timed out after sending")
        return result

    def lookup(self, idempotency_key: str) -> PostingResult | None:
        if self.lookup_down:
            raise LookupUnavailableError("connection refused")
        return self.real.lookup(idempotency_key)


def propose(
    engine: Engine,
    record: str,
    amount_minor: int = 1250,
    currency: str = "EUR",
    property_id: str = "P1",
    night: str = "2026-12-01",
) -> str:
    """A proposed adjustment, as the pipeline writes it."""
    key = adjustment_idempotency_key(property_id, night, "post_missing_payment", record)
    row = {
        "adjustment_id": adjustment_id(key),
        "idempotency_key": key,
        "property_id": property_id,
        "night": night,
        "kind": "post_missing_payment",
        "provider_record_id": record,
        "amount_minor": amount_minor,
        "currency": currency,
        "reason": "missing_in_ledger: not booked",
        "status": "proposed",
        "created_at": NOW,
        "category": "missing_in_ledger",
        "record_key": record,
    }
    with engine.begin() as connection:
        connection.execute(adjustments.insert().values(**row))
    return str(row["adjustment_id"])


def approve(engine: Engine, record: str, amount_minor: int = 1250, currency: str = "EUR") -> str:
    adjustment = propose(engine, record, amount_minor, currency)
    with engine.begin() as connection:
        review_adjustment(connection, adjustment, APPROVE, "ana", "checked the folio", amount_minor, NOW)
    return adjustment


def posting(engine: Engine, adjustment: str) -> dict[str, Any]:
    with engine.connect() as connection:
        row = connection.execute(select(outbox).where(outbox.c.adjustment_id == adjustment)).mappings().one()
        status = connection.execute(
            select(adjustments.c.status).where(adjustments.c.adjustment_id == adjustment)
        ).scalar_one()
    return {**row, "adjustment_status": status}


def state(engine: Engine, adjustment: str) -> tuple[str, int, list[tuple[str, str, str, str]]]:
    """The adjustment's status, its outbox rows, and its review rows (who, action, previous → status)."""
    with engine.connect() as connection:
        status = connection.execute(
            select(adjustments.c.status).where(adjustments.c.adjustment_id == adjustment)
        ).scalar_one()
        postings = connection.execute(
            select(func.count()).select_from(outbox).where(outbox.c.adjustment_id == adjustment)
        ).scalar_one()
        reviews = connection.execute(
            select(
                adjustment_reviews.c.reviewed_by,
                adjustment_reviews.c.action,
                adjustment_reviews.c.previous_status,
                adjustment_reviews.c.status,
            )
            .where(adjustment_reviews.c.adjustment_id == adjustment)
            .order_by(adjustment_reviews.c.review_id)
        ).all()
    return status, int(postings), [tuple(row) for row in reviews]
