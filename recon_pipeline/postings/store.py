"""The database side of the outbox beside draining: enqueue on approval, what operators list and show,
and their two hands-on actions (``retry``, ``resolve``), each in the caller's one transaction; and what
the next reconciliation of a night reads back: its posted adjustments with the PMS's entries of them.

A manual resolution records who and why (``resolved_by``, ``resolution_note``) and, when it says the
PMS holds the posting, marks the adjustment ``posted`` in the same transaction, as the drainer does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, RowMapping, func, select, update

from recon_pipeline.db.outbox_states import APPROVED, FAILED, OPEN_STATES, OUTBOX_STATES, POSTED, UNKNOWN
from recon_pipeline.db.schema import adjustments, ledger_entries
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.db.upsert import insert_new
from recon_pipeline.errors import ReviewError
from recon_pipeline.ledger.queries import in_chunks
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.postings.sql_adapter import entry_id_for
from recon_pipeline.reconcile.lifecycle import POSTED as ADJUSTMENT_POSTED
from recon_pipeline.reconcile.posted import PostedAdjustment
from recon_pipeline.storage.adjustments import set_status


class UnknownPostingError(LookupError):
    """No outbox row for this adjustment (it was never approved)."""


def enqueue(connection: Connection, adjustment_id: str, idempotency_key: str, now: datetime) -> bool:
    """The outbox row of a just-approved adjustment, due now; in the approval's transaction, so an
    approval and its posting exist together or not at all. False when the row was already there."""
    row = {
        "adjustment_id": adjustment_id,
        "idempotency_key": idempotency_key,
        "state": APPROVED,
        "attempts": 0,
        "lookups": 0,
        "next_attempt_at": now,
        "created_at": now,
        "updated_at": now,
    }
    return insert_new(connection, outbox, [row], ["adjustment_id"]) == 1


def mark_adjustment_posted(connection: Connection, adjustment_id: str, now: datetime) -> None:
    """The adjustment's contract status once the PMS holds it; in the outbox write's transaction."""
    set_status(connection, adjustment_id, ADJUSTMENT_POSTED, now)


def read_posted_adjustments(
    connection: Connection, property_ids: Sequence[str], night: str
) -> dict[str, list[PostedAdjustment]]:
    """Per property (each of ``property_ids``, maybe with none), the ``posted`` adjustments of ``night``
    whose entry the PMS holds, with that entry, whatever night the PMS posted it in: one statement for the
    adjustments and one for their entries per :data:`IN_CLAUSE_CHUNK` properties or entries, as a batch
    reads its ledger (``batches/read.py``); none when nothing is posted.

    The entry is the one under the PMS's own reference of the posting (``posting_outbox.pms_reference``:
    what an ``http`` PMS such as Apaleo names its charge, and so its ledger row) or, failing that, under
    ``entry_id_for`` the key (the ``sql`` adapter's row, and a posting resolved by hand without a
    reference)."""
    found: dict[str, list[PostedAdjustment]] = {property_id: [] for property_id in property_ids}
    rows: list[RowMapping] = []
    for chunk in in_chunks(sorted(found)):
        query = (
            select(adjustments, outbox.c.pms_reference)
            .join(outbox, outbox.c.adjustment_id == adjustments.c.adjustment_id, isouter=True)
            .where(
                adjustments.c.property_id.in_(chunk),
                adjustments.c.night == night,
                adjustments.c.status == ADJUSTMENT_POSTED,
            )
            .order_by(adjustments.c.adjustment_id)
        )
        rows.extend(connection.execute(query).mappings())
    candidates = {
        row["adjustment_id"]: [i for i in (row["pms_reference"], entry_id_for(row["idempotency_key"])) if i]
        for row in rows
    }
    # the entry's own columns (its booking's group_id is no concern of a posted correction)
    columns = [ledger_entries.c[name] for name in LEDGER_RECORD_COLUMNS if name in ledger_entries.c]
    entries: dict[str, dict[str, Any]] = {}
    for chunk in in_chunks(sorted({i for ids in candidates.values() for i in ids})):
        query = select(*columns).where(ledger_entries.c.entry_id.in_(chunk))
        entries.update({entry["entry_id"]: dict(entry) for entry in connection.execute(query).mappings()})
    for row in rows:
        entry = next((entries[i] for i in candidates[row["adjustment_id"]] if i in entries), None)
        if entry is not None:
            found[row["property_id"]].append(PostedAdjustment.of(row, entry))
    return found


def validate_state(state: str | None) -> str | None:
    if state is not None and state not in OUTBOX_STATES:
        raise ValueError(f"unknown posting state {state!r}: use one of {', '.join(OUTBOX_STATES)}")
    return state


def list_postings(connection: Connection, state: str | None, limit: int) -> list[RowMapping]:
    """Outbox rows (of ``state``, if given), oldest first: the head of the queue is what is late."""
    query = select(outbox).order_by(outbox.c.created_at, outbox.c.adjustment_id).limit(limit)
    if validate_state(state) is not None:
        query = query.where(outbox.c.state == state)
    return list(connection.execute(query).mappings())


def get_posting(connection: Connection, adjustment_id: str, *, lock: bool = False) -> RowMapping:
    """The adjustment's outbox row, or UnknownPostingError; ``lock`` holds it until the transaction ends."""
    query = select(outbox).where(outbox.c.adjustment_id == adjustment_id)
    row = connection.execute(query.with_for_update() if lock else query).mappings().first()
    if row is None:
        raise UnknownPostingError(f"adjustment {adjustment_id} has no posting (it was never approved)")
    return row


@dataclass(frozen=True)
class OutboxDepth:
    """The outbox as the sensor and operators see it: rows still open, and since when the oldest waits."""

    open: int
    oldest_created_at: datetime | None

    def oldest_age_s(self, now: datetime) -> float:
        return (now - self.oldest_created_at).total_seconds() if self.oldest_created_at else 0.0


def outbox_depth(connection: Connection) -> OutboxDepth:
    count, oldest = connection.execute(
        select(func.count(), func.min(outbox.c.created_at)).where(outbox.c.state.in_(OPEN_STATES))
    ).one()
    return OutboxDepth(int(count), oldest)


def retry(connection: Connection, adjustment_id: str, who: str, now: datetime) -> str:
    """Bring a row back to the drainer now, never as a blind re-post: a ``failed`` one goes back to
    ``approved`` with a fresh budget (its ``last_error`` kept); an ``unknown`` one is looked up at the next
    drain. Returns the state written; any other state raises ReviewError."""
    row = get_posting(connection, adjustment_id, lock=True)
    if row["state"] not in (FAILED, UNKNOWN):
        raise ReviewError(
            f"posting of {adjustment_id} is {row['state']}; only a failed or unknown one is retried"
        )
    values: dict[str, object] = {"next_attempt_at": now, "updated_at": now, "resolved_by": who}
    if row["state"] == FAILED:
        values.update(state=APPROVED, attempts=0, resolution_note="retried by hand")
    else:
        values.update(resolution_note="lookup requested by hand")
    connection.execute(update(outbox).where(outbox.c.adjustment_id == adjustment_id).values(**values))
    return str(values.get("state", row["state"]))


def resolve(
    connection: Connection,
    adjustment_id: str,
    pms_reference: str | None,
    who: str,
    note: str,
    now: datetime,
) -> str:
    """Settle an ``unknown`` or ``failed`` posting by hand: ``posted`` under ``pms_reference`` (the
    adjustment becomes ``posted`` too), or ``failed`` for good when ``pms_reference`` is None; records who
    and why. Returns the state written."""
    row = get_posting(connection, adjustment_id, lock=True)
    if row["state"] not in (UNKNOWN, FAILED):
        raise ReviewError(
            f"posting of {adjustment_id} is {row['state']}; only an unknown or failed one is resolved by hand"
        )
    state = FAILED if pms_reference is None else POSTED
    connection.execute(
        update(outbox)
        .where(outbox.c.adjustment_id == adjustment_id)
        .values(
            state=state,
            pms_reference=pms_reference if pms_reference is not None else row["pms_reference"],
            resolved_by=who,
            resolution_note=note,
            locked_until=None,
            updated_at=now,
        )
    )
    if state == POSTED:
        mark_adjustment_posted(connection, adjustment_id, now)
    return state
