"""The night's takings, kept: ``night_takings`` rows of a property-night (``reconcile/takings.py``),
written in the property-night's transaction (``work.py``), so the review desk's night page and the HTML
report show what the night's run counted without the run.

The rows are made equal to the night's lines: a line found with the same figures is not written (a re-run
with no change modifies no row), one with other figures is updated with the run that changed it, a new one
is inserted and one no longer found (the PMS moved its only entry to another night) is deleted: a bucket
that is gone has no figure to keep. Under the partition's lock (``storage/partition.py``), as the
night's other writers, so two runs of one night at once write each line once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Connection, delete, insert, select, update

from recon_pipeline.db.schema import night_takings
from recon_pipeline.reconcile.takings import NightTakings
from recon_pipeline.storage.partition import lock_partition

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
    """Make the property-night's ``night_takings`` rows equal ``takings`` (see the module's rule)."""
    lock_partition(connection, property_id, night)
    t = night_takings.c
    here = (t.property_id == property_id, t.night == night)
    stored = {
        tuple(row[name] for name in _KEY): (row["movements"], row["amount_minor"])
        for row in connection.execute(select(night_takings).where(*here)).mappings()
    }
    found = {line.key: line for line in takings.lines}
    new = [
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
        if key not in stored
    ]
    if new:
        connection.execute(insert(night_takings), new)
    changed = [
        line
        for key, line in found.items()
        if key in stored and stored[key] != (line.movements, line.amount_minor)
    ]
    for line in changed:
        connection.execute(
            update(night_takings)
            .where(*here, *_line_is(line.key))
            .values(movements=line.movements, amount_minor=line.amount_minor, run_id=run_id, recorded_at=now)
        )
    gone = [key for key in stored if key not in found]
    for key in gone:
        connection.execute(delete(night_takings).where(*here, *_line_is(key)))
    return TakingsSaveCounts(len(new), len(found) - len(new) - len(changed), len(changed), len(gone))


def _line_is(key: tuple[str, ...]) -> list[ColumnElement[bool]]:
    return [night_takings.c[name] == value for name, value in zip(_KEY, key, strict=True)]
