"""A fleet of properties at chain scale (issue 13: 2,000 a night), and the demo world of one night for it.

The fleet spreads over eight timezones eight different UTC offsets apart (so a night has eight windows,
plus a few for the properties with a later cut-off), most properties on their own connected account and
one in four on the platform account, whose payments the pipeline attributes by metadata. The world is the
demo's (``build_world``: every discrepancy category planted and counted), about 40 provider records per
property-night; ``seed_world`` writes its PMS half and ``seed_thresholds`` the ``fleet_thresholds``.
Deterministic: the same ``n`` and ``seed`` give the same fleet, ids and amounts.
"""

from __future__ import annotations

import random
from datetime import date

from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers import PROVIDER_NAMES
from recon_pipeline.simulation.demo.properties import DEMO_THRESHOLDS_MINOR, demo_properties
from recon_pipeline.simulation.demo.world import World, build_world

# (timezone, currency): eight distinct UTC offsets on 2026-11-30, so eight distinct night windows.
FLEET_ZONES = (
    ("America/Los_Angeles", "USD"),
    ("America/Denver", "USD"),
    ("America/New_York", "USD"),
    ("Europe/Lisbon", "EUR"),
    ("Europe/Berlin", "EUR"),
    ("Asia/Kolkata", "INR"),
    ("Asia/Tokyo", "JPY"),
    ("Australia/Sydney", "AUD"),
)
PLATFORM_SHARE = 0.25  # properties on the platform account (provider_account None)
LATE_CUTOFF_SHARE = 0.1  # properties whose night ends at 04:00 rather than midnight
LATE_CUTOFF = "04:00"
# With the planted discrepancies and timing differences (~29 in-window records) and, on Stripe, two
# disputes' movements and a converted booking (~4-7), four ordinary bookings (a payment, its fee, now and
# then a refund) make a pull of about 40 records.
FLEET_BOOKINGS_PER_NIGHT = 4
# The demo analyst's threshold of each currency of every provider's demo (a demo night's planted findings
# stay under it, so the blocking unexplained-amount check passes: INR's is Razorpay's demo's 50,000,000
# paise); AUD, which no demo property uses, at the default's 1,000,000.
THRESHOLD_BY_CURRENCY = {
    p.currency: DEMO_THRESHOLDS_MINOR[p.property_id]
    for flavour in PROVIDER_NAMES
    for p in demo_properties(flavour)
    if p.property_id in DEMO_THRESHOLDS_MINOR
}
DEFAULT_THRESHOLD_MINOR = 1_000_000


def fleet_properties(
    n: int, seed: int = 13, platform_share: float = PLATFORM_SHARE
) -> tuple[PropertyRow, ...]:
    """``n`` valid properties ``fleet00000``…, round-robin over ``FLEET_ZONES``; which ones share the
    platform account (about ``platform_share`` of them; 0: each on its own connected account) or close
    their night late is drawn from ``seed``."""
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        timezone, currency = FLEET_ZONES[index % len(FLEET_ZONES)]
        property_id = f"fleet{index:05d}"  # no '-': the world's ids are tagged with the part before one
        platform = rng.random() < platform_share
        cutoff = LATE_CUTOFF if rng.random() < LATE_CUTOFF_SHARE else "00:00"
        rows.append(
            PropertyRow(
                property_id,
                f"Fleet property {index}",
                timezone,
                currency,
                cutoff,
                None if platform else f"acct_{property_id}",
            ).validated()
        )
    return tuple(rows)


def fleet_world(
    properties: tuple[PropertyRow, ...],
    night: date,
    bookings_per_night: int = FLEET_BOOKINGS_PER_NIGHT,
    seed: int = 7,
    plant: bool = True,
) -> World:
    """The demo world of ``night`` for every property of the fleet (discrepancies planted; ``plant=False``:
    a clean night, ordinary bookings and timing differences only)."""
    return build_world(
        {p.property_id: night for p in properties}, bookings_per_night, seed, properties, plant=plant
    )


def fleet_thresholds(properties: tuple[PropertyRow, ...]) -> dict[str, int]:
    """Each property's unexplained-amount threshold (``seed_thresholds``), the demo's for its currency."""
    return {p.property_id: THRESHOLD_BY_CURRENCY.get(p.currency, DEFAULT_THRESHOLD_MINOR) for p in properties}
