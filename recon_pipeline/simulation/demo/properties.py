"""The demo's properties: each provider's simulation names its own (``ProviderSimulation.demo_world``);
the analyst thresholds of all of them live here."""

from __future__ import annotations

from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR
from recon_pipeline.simulation.registry import simulation_named


def demo_properties(flavour: str) -> tuple[PropertyRow, ...]:
    """The demo properties of the provider called ``flavour`` (its simulation says which)."""
    return simulation_named(flavour).demo_world().properties


DEMO_PROPERTIES = demo_properties(DEFAULT_FLAVOUR)  # the default demo's, which the tests build worlds of

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
}
