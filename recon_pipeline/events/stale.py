"""Late events re-open nights: a night touched after it closed is marked stale for re-reconciliation."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, select

from recon_pipeline.db.schema import stale_nights
from recon_pipeline.db.upsert import dialect_insert


def mark_night_stale(
    connection: Connection, property_id: str, night: str, reason: str, now: datetime
) -> None:
    """Record that (property, night) changed; each mark bumps ``generation`` so the sensor asks again."""
    insert = dialect_insert(connection, stale_nights)
    statement = insert.values(
        property_id=property_id, night=night, reason=reason, marked_at=now, generation=1
    ).on_conflict_do_update(
        index_elements=["property_id", "night"],
        set_={
            "generation": stale_nights.c.generation + 1,
            "reason": insert.excluded.reason,
            "marked_at": insert.excluded.marked_at,
        },
    )
    connection.execute(statement)


def recent_stale_nights(connection: Connection, since: datetime) -> list[tuple[str, str, int, datetime]]:
    """(property_id, night, generation, marked_at) of nights marked stale since ``since``."""
    query = select(
        stale_nights.c.property_id, stale_nights.c.night, stale_nights.c.generation, stale_nights.c.marked_at
    ).where(stale_nights.c.marked_at >= since)
    return [
        (property_id, night, int(generation), marked_at)
        for property_id, night, generation, marked_at in connection.execute(query)
    ]
