"""Razorpay simulated: ``api.py`` (Razorpay's API subset over the simulator's store: the store's charges
and refunds as payments, refunds and settlements) and the demo's Razorpay property. ``SIMULATION`` is what
the simulation registry maps ``razorpay`` to.
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.razorpay.holds import DEFAULT_CAPTURE_TIMEOUT
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.host.wire import ApiWrapper
from recon_pipeline.simulation.interface import DemoWorld, ProviderSimulation
from recon_pipeline.simulation.razorpay.api import razorpay_routes

# One Indian property: INR in paise, attributed by notes.property_id.
DEMO_PROPERTIES = (
    PropertyRow("mumbai-marine", "Mumbai Marine Drive Hotel", "Asia/Kolkata", "INR", "00:00", None),
)


class RazorpaySimulation:
    """Razorpay behind the ``ProviderSimulation`` protocol."""

    name: str = "razorpay"

    def simulator_routes(self, store: SimulatorStore, api: ApiWrapper) -> list[BaseRoute]:
        return razorpay_routes(store, api)

    def demo_world(self) -> DemoWorld:
        return DemoWorld(
            DEMO_PROPERTIES,
            charge_prefix="pay",
            refund_prefix="rfnd",
            payment_intents=False,
            authorization_period=DEFAULT_CAPTURE_TIMEOUT,
            settled_payouts=True,
        )


SIMULATION: ProviderSimulation = RazorpaySimulation()  # typed: mypy checks the protocol is implemented
