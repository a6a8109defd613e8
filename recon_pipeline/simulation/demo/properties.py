"""The demo's properties: each provider's simulation names its own (``ProviderSimulation.demo_world``);
the analyst thresholds of all of them live here."""

from __future__ import annotations

from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR
from recon_pipeline.simulation.registry import simulation_named


def demo_properties(flavour: str) -> tuple[PropertyRow, ...]:
    """The properties `recon demo` seeds for the provider called ``flavour`` (its simulation says which):
    its keyed ones, then its hotel-style ones (``demo/hotel_night.py``, ``HotelNightBuilder``)."""
    world = simulation_named(flavour).demo_world()
    return (*world.properties, *world.hotel_properties)


# The default demo's keyed properties, which the tests build worlds of (without the hotel-style one, so
# that their figures and counts stay as they were).
DEMO_PROPERTIES = simulation_named(DEFAULT_FLAVOUR).demo_world().properties

# The demo analyst's unexplained-amount thresholds (``recon discrepancies threshold``), in minor units and
# of a similar size in money, about US$6,000-11,000 a night: the default of 1,000,000 minor units suits
# cents and yen, but is only ₹10,000 in paise, well below one demo night's planted findings (≈ ₹2,00,000).
# ``recon demo`` inserts them once; a threshold an analyst set since is kept.
DEMO_THRESHOLDS_MINOR = {
    "lisbon-riverside": 1_000_000,  # €10,000
    "kyoto-gion": 1_000_000,  # ¥1,000,000
    "denver-lodge": 1_000_000,  # $10,000
    "mumbai-marine": 50_000_000,  # ₹5,00,000
    "amsterdam-canal": 1_000_000,  # €10,000
    "london-borough": 1_000_000,  # £10,000
    "rome-trastevere": 1_000_000,  # €10,000
    "edinburgh-royalmile": 1_000_000,  # £10,000
    "newyork-midtown": 1_000_000,  # $10,000
    "osaka-namba": 1_000_000,  # ¥1,000,000
}
