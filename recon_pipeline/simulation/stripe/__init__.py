"""Stripe simulated: ``api.py`` (Stripe's API subset over the simulator's store, with Stripe's wire
semantics), ``rendering.py`` (store objects as Stripe sends them, per API version) and the demo's Stripe
properties. ``SIMULATION`` is what the simulation registry maps ``stripe`` to.
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from recon_pipeline.properties import FEE_NONE, FEE_PER_PAYOUT, PropertyRow
from recon_pipeline.providers.stripe.holds import STANDARD_AUTHORIZATION
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.host.wire import ApiWrapper
from recon_pipeline.simulation.interface import DemoWorld, ProviderSimulation
from recon_pipeline.simulation.stripe.api import stripe_routes

# Three timezones, three currencies (one zero-decimal), both attributions (metadata, connected account).
DEMO_PROPERTIES = (
    PropertyRow("lisbon-riverside", "Lisbon Riverside Suites", "Europe/Lisbon", "EUR", "00:00", None),
    PropertyRow("kyoto-gion", "Kyoto Gion Ryokan", "Asia/Tokyo", "JPY", "00:00", "acct_1KyotoGion"),
    PropertyRow("denver-lodge", "Denver Mountain Lodge", "America/Denver", "USD", "03:00", None),
)
# Hotels whose PMS is a named one, each ledger written as that PMS records money (``demo/pms_ledgers.py``),
# each on a connected account of its own: Apaleo in GBP booking fees gross, OPERA in USD closing its night
# at 02:00 and booking fees per payout, Mews in JPY (zero-decimal) booking fees gross.
PMS_PROPERTIES = (
    PropertyRow(
        "edinburgh-royalmile",
        "Edinburgh Royal Mile Hotel",
        "Europe/London",
        "GBP",
        "00:00",
        "acct_1EdinburghRoyalMile",
        fee_booking=FEE_NONE,
    ),
    PropertyRow(
        "newyork-midtown",
        "New York Midtown Hotel",
        "America/New_York",
        "USD",
        "02:00",
        "acct_1NewYorkMidtown",
        fee_booking=FEE_PER_PAYOUT,
    ),
    PropertyRow(
        "osaka-namba",
        "Osaka Namba Hotel",
        "Asia/Tokyo",
        "JPY",
        "00:00",
        "acct_1OsakaNamba",
        fee_booking=FEE_NONE,
    ),
)
PMS_STYLES = {"edinburgh-royalmile": "apaleo", "newyork-midtown": "opera", "osaka-namba": "mews"}
# A hotel whose PMS posts most payments per booking without Stripe's id and books fees per payout, on a
# connected account of its own: the demo's hotel-style property (``demo/hotel_night.py``).
HOTEL_PROPERTIES = (
    PropertyRow(
        "rome-trastevere",
        "Rome Trastevere Hotel",
        "Europe/Rome",
        "EUR",
        "00:00",
        "acct_1RomeTrastevere",
        fee_booking=FEE_PER_PAYOUT,
    ),
    *PMS_PROPERTIES,
)


class StripeSimulation:
    """Stripe behind the ``ProviderSimulation`` protocol."""

    name: str = "stripe"

    def simulator_routes(self, store: SimulatorStore, api: ApiWrapper) -> list[BaseRoute]:
        return stripe_routes(store, api)

    def demo_world(self) -> DemoWorld:
        return DemoWorld(
            DEMO_PROPERTIES,
            charge_prefix="ch",
            refund_prefix="re",
            payment_intents=True,
            balance_transactions=True,
            authorization_period=STANDARD_AUTHORIZATION,
            hotel_properties=HOTEL_PROPERTIES,
            pms_styles=PMS_STYLES,
        )


SIMULATION: ProviderSimulation = StripeSimulation()  # typed: mypy checks the protocol is implemented
