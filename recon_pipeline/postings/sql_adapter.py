"""The ``sql`` posting adapter: the PMS books an adjustment as a ``ledger_entries`` row of kind
``adjustment`` in its own database.

The row's ``entry_id`` is derived from the adjustment's idempotency key and inserted only if absent, so a
re-post (after an unknown outcome, or by a second drainer) is a no-op by construction and is reported
``POSTED`` with the same reference; a lookup is a read of that one row. A database error after the insert
was sent leaves the outcome unknown (the commit may have landed): the outbox then looks the key up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Engine, select
from sqlalchemy.exc import SQLAlchemyError

from recon_pipeline.checkpoints import POSTING_PMS_ACCEPTED, reached
from recon_pipeline.db.schema import ledger_entries
from recon_pipeline.db.upsert import insert_new
from recon_pipeline.postings.adapter import LookupUnavailableError, Posting, PostingOutcome, PostingResult

ADJUSTMENT_KIND = "adjustment"


def entry_id_for(idempotency_key: str) -> str:
    """The ledger entry id of the posting of ``idempotency_key``: the same key always names one entry."""
    return "recon_adj_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:32]


class SqlPostingAdapter:
    """Posts into the PMS database's ``ledger_entries`` (``engine``); ``clock`` stamps ``posted_at``."""

    name = "sql"

    def __init__(self, engine: Engine, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._engine = engine
        self._clock = clock

    def post(self, posting: Posting) -> PostingResult:
        entry_id = entry_id_for(posting.idempotency_key)
        row = {
            "entry_id": entry_id,
            "property_id": posting.property_id,
            "booking_id": posting.booking_id,
            "provider_record_id": posting.provider_record_id,
            "kind": ADJUSTMENT_KIND,
            "amount_minor": posting.amount_minor,
            "currency": posting.currency,
            "posted_at": self._clock(),
        }
        try:
            with self._engine.begin() as connection:
                inserted = insert_new(connection, ledger_entries, [row], ["entry_id"])
        except SQLAlchemyError as error:
            return PostingResult(PostingOutcome.UNKNOWN, reason=_first_line(error))
        reached(POSTING_PMS_ACCEPTED)  # the PMS holds the posting; the poster has not heard yet
        return PostingResult(PostingOutcome.POSTED, pms_reference=entry_id, already_posted=inserted == 0)

    def lookup(self, idempotency_key: str) -> PostingResult | None:
        entry_id = entry_id_for(idempotency_key)
        try:
            with self._engine.connect() as connection:
                found = connection.execute(
                    select(ledger_entries.c.entry_id).where(ledger_entries.c.entry_id == entry_id)
                ).scalar_one_or_none()
        except SQLAlchemyError as error:
            raise LookupUnavailableError(_first_line(error)) from error
        return None if found is None else PostingResult(PostingOutcome.POSTED, pms_reference=entry_id)


def _first_line(error: SQLAlchemyError) -> str:
    text = str(getattr(error, "orig", None) or error).strip()
    return (text.splitlines() or [type(error).__name__])[0]
