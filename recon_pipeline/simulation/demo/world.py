"""A deterministic demo world: the provider's records and the PMS's tables for some property-nights.

The same seed and nights always give the same ids, amounts and times, so the simulator can serve the
provider half while the PMS half is written to the database, and a second demo run changes nothing.
A world is built for one provider (``flavour``): its ids are that provider's
(``ProviderSimulation.demo_world``: the charge and refund id prefixes, and whether payments go through an
intent or the payment is itself the payment order), and the simulator serves it in that flavour.
Known discrepancies of every category are planted and counted in ``World.expected`` so that the demo
(and the tests) can check that the pipeline finds exactly what was planted. Each property-night is written
by its builder: ``night.py`` (a keyed PMS), ``hotel_night.py`` (a hotel-style one), ``pms_ledgers.py`` (a
named PMS).
"""

from __future__ import annotations

import random
from datetime import date

from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR
from recon_pipeline.simulation.demo.hotel_night import HotelNightBuilder
from recon_pipeline.simulation.demo.night import NightBuilder, World, order_key, unix
from recon_pipeline.simulation.demo.pms_ledgers import pms_night_builder
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.registry import simulation_named

__all__ = ["World", "build_world", "order_key", "unix"]  # World and its keys, as the tests read them


def build_world(
    nights: dict[str, date],
    bookings_per_night: int = 1000,
    seed: int = 7,
    properties: tuple[PropertyRow, ...] = DEMO_PROPERTIES,
    flavour: str = DEFAULT_FLAVOUR,
    plant: bool = True,
) -> World:
    """The demo world for ``nights`` (property_id → night) of ``properties``, in ``flavour``'s ids; with
    ``plant=False`` a clean night (ordinary bookings and timing differences only: nothing to find). A
    property among the flavour's ``hotel_properties`` keeps a hotel-style ledger (``hotel_night.py``),
    as its PMS records it where ``pms_styles`` names one (``pms_ledgers.py``)."""
    world, ids = World(), simulation_named(flavour).demo_world()
    hotel_style = {p.property_id for p in ids.hotel_properties}
    for prop in properties:
        world.properties.append(prop.row())
        night = nights[prop.property_id]
        rng = random.Random(f"{seed}/{prop.property_id}/{night}")
        builder: NightBuilder
        if prop.property_id in ids.pms_styles:
            builder = pms_night_builder(ids.pms_styles[prop.property_id], world, prop, night, rng, ids)
        elif prop.property_id in hotel_style:
            builder = HotelNightBuilder(world, prop, night, rng, ids)
        else:
            builder = NightBuilder(world, prop, night, rng, ids)
        builder.build(bookings_per_night, plant)
    world.store.reindex()
    return world
