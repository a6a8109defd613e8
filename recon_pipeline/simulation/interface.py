"""What the simulated world knows of one provider: the routes that simulate its API and the world
``recon demo`` seeds for it (``ProviderSimulation``); ``registry.py`` maps provider names to them.

Kept apart from ``providers/interface.py`` so that production providers carry nothing of the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from recon_pipeline.properties import PropertyRow
    from recon_pipeline.simulation.host.store import SimulatorStore
    from recon_pipeline.simulation.host.wire import ApiWrapper


@dataclass(frozen=True)
class DemoWorld:
    """How the demo seeds a world for a provider: its demo properties, the prefixes of its charge and
    refund ids, whether payments go through an intent (``payment_orders`` keyed by the intent) or the
    payment is the order's key itself, which money movements beyond payments and refunds it serves, and
    how long an authorization lasts before its capture deadline (None: the provider's API shows no holds,
    so the demo plants none)."""

    properties: tuple[PropertyRow, ...]
    charge_prefix: str
    refund_prefix: str
    payment_intents: bool
    # Whether its API reads disputes and currency conversion from balance transactions (Stripe): the world
    # then also holds disputes and converted charges (``demo/night.py``).
    balance_transactions: bool = False
    authorization_period: timedelta | None = None
    # Whether its payouts are daily settlements of earlier days' payments (Razorpay): the world then holds
    # payments settling on the night, one in a settlement the bank refuses (``demo/night.py``).
    settled_payouts: bool = False
    # How long after a night ends the provider has published all of its money (Adyen: the settlement
    # batches that may hold it); the demo reconciles each property's newest night published by now, as a
    # later one fails as an incomplete pull.
    published_after: timedelta = timedelta(0)
    # Whether its records show a failed payment (Adyen's settlement reports list only settled money): if
    # not, the ledger's booking of one is money missing at the provider, not a status mismatch.
    reports_failed_payments: bool = True
    # Properties whose PMS keeps a hotel-style ledger (``demo/hotel_night.py``, ``HotelNightBuilder``): most
    # payments posted per booking with the card's brand, last four and approval code but not the
    # provider's id, so the matcher pairs them. Seeded by ``recon demo`` beside ``properties``, which the
    # tests' worlds are built of alone.
    hotel_properties: tuple[PropertyRow, ...] = ()
    # Hotel properties whose PMS is a named one (``demo/pms_ledgers.py``: ``apaleo``, ``opera``, ``mews``),
    # property id → PMS: their ledgers are written as that PMS records money (tenders, card-type spellings,
    # refunds as negative payments, reversals, group folios).
    pms_styles: Mapping[str, str] = field(default_factory=dict)


class ProviderSimulation(Protocol):
    """One provider's simulated side: the simulator's routes for its API and the demo's world for it."""

    name: str  # the provider's registry name (``providers/__init__.py``)

    def simulator_routes(self, store: SimulatorStore, api: ApiWrapper) -> list[BaseRoute]:
        """The simulator's routes for this provider's API subset over the shared seeded store; ``api``
        wraps a JSON handler with the host's counting, faults, auth and account scoping in the provider's
        ``Dialect``."""
        ...

    def demo_world(self) -> DemoWorld:
        """What ``recon demo`` seeds for this provider."""
        ...
