"""The simulated world's registry: a provider's name -> its ``ProviderSimulation`` (``interface.py``).

It mirrors the production registry (``providers/__init__.py``), which knows nothing of it: a provider
added there is simulated by one folder here and one line below.
"""

from __future__ import annotations

from recon_pipeline.providers import provider_named
from recon_pipeline.simulation.adyen import SIMULATION as ADYEN
from recon_pipeline.simulation.interface import ProviderSimulation
from recon_pipeline.simulation.razorpay import SIMULATION as RAZORPAY
from recon_pipeline.simulation.stripe import SIMULATION as STRIPE

SIMULATIONS: dict[str, ProviderSimulation] = {
    STRIPE.name: STRIPE,
    RAZORPAY.name: RAZORPAY,
    ADYEN.name: ADYEN,
}


def simulation_named(name: str) -> ProviderSimulation:
    """The simulation of the registered provider called ``name``, else the production registry's
    ConfigError naming the value and the choices."""
    return SIMULATIONS[provider_named(name).name]
