"""Adyen simulated: ``api.py`` (the shared store served as Settlement details reports, and signed standard
notification items) and the demo's Adyen properties. ``SIMULATION`` is what the simulation registry maps
``adyen`` to.
"""

from __future__ import annotations

from datetime import timedelta

from starlette.routing import BaseRoute

from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.adyen.client import DEFAULT_SETTLEMENT_DAYS
from recon_pipeline.simulation.adyen.api import report_routes
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.host.wire import ApiWrapper
from recon_pipeline.simulation.interface import DemoWorld, ProviderSimulation

# Two European properties, each its own merchant account (its provider_account): the report names no
# property, so each night is attributed by the merchant account and the ledger.
DEMO_PROPERTIES = (
    PropertyRow(
        "amsterdam-canal", "Amsterdam Canal House", "Europe/Amsterdam", "EUR", "00:00", "AmsterdamCanalECOM"
    ),
    PropertyRow("london-borough", "London Borough Inn", "Europe/London", "GBP", "00:00", "LondonBoroughECOM"),
)


class AdyenSimulation:
    """Adyen behind the ``ProviderSimulation`` protocol."""

    name: str = "adyen"

    def simulator_routes(self, store: SimulatorStore, api: ApiWrapper) -> list[BaseRoute]:
        """The report download (CSV, so not wrapped in the JSON ``api``); it reads ``app.state.store``,
        ``app.state.api_key`` and ``app.state.faults``, which the host sets."""
        return list(report_routes())

    def demo_world(self) -> DemoWorld:
        """PSP references for payments and modification references for refunds; no payment intents. A
        night's money is all published once the batch closing ``settlement_days`` after it is: batches
        close daily, so one day later at the latest."""
        return DemoWorld(
            DEMO_PROPERTIES,
            charge_prefix="psp",
            refund_prefix="mod",
            payment_intents=False,
            published_after=timedelta(days=DEFAULT_SETTLEMENT_DAYS + 1),
            reports_failed_payments=False,
        )


SIMULATION: ProviderSimulation = AdyenSimulation()  # typed: mypy checks the protocol is implemented
