"""The night's takings, kept: ``night_takings`` rows of a property-night (``reconcile/takings.py``),
written in the property-night's transaction (``batches/write.py``), so the review desk's night page and
the HTML report show what the night's run counted without the run.

The rows are made equal to the night's lines: a line found with the same figures is not written (a re-run
with no change modifies no row), one with other figures is updated with the run that changed it, a new one
is inserted and one no longer found (the PMS moved its only entry to another night) is deleted: a bucket
that is gone has no figure to keep. Under the partition's lock (``storage/partition.py``), as the
night's other writers, so two runs of one night at once write each line once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, bindparam, delete, insert, select, update

from recon_pipeline.db.schema import night_takings
from recon_pipeline.ledger.queries import in_chunks
from recon_pipeline.reconcile.takings import NightTakings
from recon_pipeline.storage.partition import lock_partitions

_KEY = ("side", "grouped_by", "name", "currency")


@dataclass(frozen=True)
class TakingsSaveCounts:
    """What ``save_takings`` did to a property-night's lines."""

    new: int
    unchanged: int
    updated: int
    removed: int


def save_takings(
    connection: Connection,
    property_id: str,
    night: str,
    takings: NightTakings,
    run_id: str | None,
    now: datetime,
) -> TakingsSaveCounts:
    """``save_batch_takings`` of one property-night: its counts."""
    return save_batch_takings(connection, night, {property_id: takings}, run_id, now)[property_id]


def save_batch_takings(
    connection: Connection,
    night: str,
    takings: Mapping[str, NightTakings],
    run_id: str | None,
    now: datetime,
) -> dict[str, TakingsSaveCounts]:
    """Make each property-night's ``night_takings`` rows equal its ``takings`` (see the module's rule); the
    counts per property. One read of every partition's lines, then one insert, one (executemany) update
    and one (executemany) delete for the batch."""
    lock_partitions(connection, night, takings)
    t = night_takings.c
    stored: dict[str, dict[tuple[str, ...], tuple[int, int]]] = {property_id: {} for property_id in takings}
    for chunk in in_chunks(sorted(takings)):
        for row in connection.execute(
            select(night_takings).where(t.night == night, t.property_id.in_(chunk))
        ).mappings():
            stored[row["property_id"]][tuple(row[name] for name in _KEY)] = (
                row["movements"],
                row["amount_minor"],
            )
    new: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    gone: list[dict[str, Any]] = []
    counts: dict[str, TakingsSaveCounts] = {}
    for property_id, night_lines in takings.items():
        there = stored[property_id]
        found = {line.key: line for line in night_lines.lines}
        fresh = [
            {
                "property_id": property_id,
                "night": night,
                **dict(zip(_KEY, key, strict=True)),
                "movements": line.movements,
                "amount_minor": line.amount_minor,
                "run_id": run_id,
                "recorded_at": now,
            }
            for key, line in found.items()
            if key not in there
        ]
        other = [
            {
                **_line_of(property_id, key),
                "new_movements": line.movements,
                "new_amount_minor": line.amount_minor,
            }
            for key, line in found.items()
            if key in there and there[key] != (line.movements, line.amount_minor)
        ]
        removed = [_line_of(property_id, key) for key in there if key not in found]
        new += fresh
        changed += other
        gone += removed
        counts[property_id] = TakingsSaveCounts(
            len(fresh), len(found) - len(fresh) - len(other), len(other), len(removed)
        )
    if new:
        connection.execute(insert(night_takings), new)
    if changed:
        connection.execute(
            update(night_takings)
            .where(*_line_is(night))
            .values(
                movements=bindparam("new_movements"),
                amount_minor=bindparam("new_amount_minor"),
                run_id=run_id,
                recorded_at=now,
            ),
            changed,
        )
    if gone:
        connection.execute(delete(night_takings).where(*_line_is(night)), gone)
    return counts


def _line_of(property_id: str, key: tuple[str, ...]) -> dict[str, str]:
    """The bound values that name one line of a property-night (``_line_is``)."""
    return {
        "line_property_id": property_id,
        **{f"line_{name}": value for name, value in zip(_KEY, key, strict=True)},
    }


def _line_is(night: str) -> list[ColumnElement[bool]]:
    """One line of ``night``, named by bound values (``_line_of``): the statement runs once per line."""
    return [
        night_takings.c.night == night,
        *(night_takings.c[name] == bindparam(f"line_{name}") for name in ("property_id", *_KEY)),
    ]
