"""Demo worlds at benchmark sizes: many properties, many nights, a night of a given number of records.

The worlds are the demo's own (``recon_pipeline/simulation/demo/world.py``: every discrepancy category
planted, counted in ``World.expected``), so the benchmarks run the pipeline on the data its tests check.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

from recon_pipeline.nights import night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.world import World, build_world, unix

LAST_NIGHT = date(2026, 11, 30)
# An ordinary booking yields a payment and a fee row, and one in eight or so gets a refund.
RECORDS_PER_BOOKING = 2.12
CALIBRATION_ROUNDS = 3


def bench_properties(count: int) -> tuple[PropertyRow, ...]:
    """``count`` properties shaped like the demo's in turn (timezones, currencies, cutoffs, attribution)."""
    rows = []
    for index in range(count):
        shape = DEMO_PROPERTIES[index % len(DEMO_PROPERTIES)]
        account = f"acct_bench{index:02d}" if shape.provider_account else None
        rows.append(
            PropertyRow(
                f"bench{index:02d}",
                f"Benchmark property {index}",
                shape.timezone,
                shape.currency,
                shape.night_cutoff,
                account,
            )
        )
    return tuple(rows)


def nights_ending(last: date, count: int) -> list[date]:
    """``count`` consecutive nights, the last one ``last``."""
    return [last - timedelta(days=offset) for offset in reversed(range(count))]


def build_nights(
    properties: Sequence[PropertyRow], nights: Sequence[date], bookings_per_night: int, seed: int = 7
) -> World:
    """One demo world holding every night of every property (ids carry property and night: no clashes)."""
    world = World(properties=[prop.row() for prop in properties])
    for night in nights:
        part = build_world(
            {prop.property_id: night for prop in properties}, bookings_per_night, seed, tuple(properties)
        )
        world.bookings += part.bookings
        world.payment_orders += part.payment_orders
        world.ledger_entries += part.ledger_entries
        world.store.absorb(part.store)
        world.expected.update(part.expected)
    world.store.reindex()
    return world


def _moved_at(charge: dict[str, Any]) -> int:
    """When the charge's money moved: its balance transaction's creation (the capture), else its own."""
    return int((charge["balance_transaction"] or {}).get("created", charge["created"]))


def night_record_count(world: World, prop: PropertyRow, night: date) -> int:
    """The rows a pull of the property's night yields: a payment per charge, a fee per charge with a fee,
    a row per refund, a row per dispute movement and its fee, of the property's objects created in the
    night's window (a charge's and a dispute's movements: their balance transactions, so a charge counts
    on the night it was captured, as ``providers/stripe/captures.py`` places it)."""
    window = night_window(night, prop.timezone, prop.night_cutoff)
    low, high = unix(window.start), unix(window.end)

    def owned(charge: dict[str, Any]) -> bool:
        if charge["account"] != prop.provider_account:
            return False
        return prop.provider_account is not None or charge["metadata"].get("property_id") == prop.property_id

    by_id = {charge["id"]: charge for charge in world.store.charges}
    charges = [c for c in world.store.charges if low <= _moved_at(c) < high and owned(c)]
    fees = sum(bool((charge["balance_transaction"] or {}).get("fee")) for charge in charges)
    refunds = sum(low <= r["created"] < high and owned(by_id[r["charge"]]) for r in world.store.refunds)
    disputes = sum(  # a dispute movement's row, and its fee's (Stripe's worlds hold disputes)
        1 + bool(transaction["fee"])
        for dispute in world.store.disputes
        if owned(by_id[dispute["charge"]])
        for transaction in dispute["balance_transactions"]
        if low <= transaction["created"] < high
    )
    return len(charges) + fees + refunds + disputes


def bookings_for_records(prop: PropertyRow, night: date, records: int, seed: int = 7) -> int:
    """The ordinary bookings of a night whose pull yields as close to ``records`` rows as they can get
    (a few rounds of proportional correction)."""
    bookings = max(1, round(records / RECORDS_PER_BOOKING))
    best: tuple[int, int] | None = None  # (distance to the target, bookings)
    for _ in range(CALIBRATION_ROUNDS):
        count = night_record_count(build_nights([prop], [night], bookings, seed), prop, night)
        if best is None or abs(count - records) < best[0]:
            best = (abs(count - records), bookings)
        if count == records:
            break
        bookings = max(1, bookings + round((records - count) / RECORDS_PER_BOOKING))
    assert best is not None
    return best[1]
