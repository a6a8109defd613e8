"""Write the PMS half of a demo world into the database, once per row id (a re-seed adds nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import Engine

from recon_pipeline.db.schema import (
    bookings,
    discrepancy_thresholds,
    ledger_entries,
    payment_orders,
    properties,
)
from recon_pipeline.db.upsert import insert_new
from recon_pipeline.ledger.records import LEDGER_MATCH_KEY_COLUMNS
from recon_pipeline.simulation.demo.world import World

SEED_BATCH = 2_000


def seed_world(engine: Engine, world: World) -> dict[str, int]:
    """Insert the world's PMS rows; returns rows newly inserted per table."""
    # A hotel-style property's entries carry the card keys and reference (``HotelNightBuilder``), the
    # others none: every row names every column, as one batched insert needs.
    optional = [name for name in LEDGER_MATCH_KEY_COLUMNS if name in ledger_entries.c]
    entries = [dict.fromkeys(optional) | entry for entry in world.ledger_entries]
    stays = [{"group_id": None} | booking for booking in world.bookings]  # a group's members name it
    plan = (
        (properties, world.properties, "property_id"),
        (bookings, stays, "booking_id"),
        (payment_orders, world.payment_orders, "provider_payment_id"),
        (ledger_entries, entries, "entry_id"),
    )
    inserted: dict[str, int] = {}
    with engine.begin() as connection:
        for table, rows, key in plan:
            inserted[table.name] = sum(
                insert_new(connection, table, rows[start : start + SEED_BATCH], [key])
                for start in range(0, len(rows), SEED_BATCH)
            )
    return inserted


def seed_thresholds(engine: Engine, thresholds: Mapping[str, int], now: datetime) -> int:
    """Insert the demo analyst's threshold of each property that has none (one set since is kept);
    returns how many were inserted."""
    rows = [
        {"property_id": property_id, "unexplained_threshold_minor": minor, "updated_at": now}
        for property_id, minor in thresholds.items()
    ]
    with engine.begin() as connection:
        return insert_new(connection, discrepancy_thresholds, rows, ["property_id"])
