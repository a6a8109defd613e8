"""Stripe as a provider: charges, refunds and disputes (with their balance transactions) for money
movements, events for recovery, signed webhooks.

Everything Stripe-specific lives in this folder: ``client.py`` (the API: a night's pull, lookups by id,
current payment state, events since a cursor), ``balance.py`` (balance transactions: conversion figures),
``disputes.py`` (a dispute's withdrawal, reversal and fees as rows), ``state.py`` (PaymentIntent /
charge → ``PaymentState``), ``webhook.py`` (``Stripe-Signature`` and the event parser) and
``simulator.py`` (Stripe's API subset over the simulator's store). ``PROVIDER`` is what the registry maps
``stripe`` to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from starlette.routing import BaseRoute

from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import (
    ClientSettings,
    DemoWorld,
    Provider,
    ReceivedEvent,
    StoreOutcome,
    json_acknowledgement,
)
from recon_pipeline.providers.simulator.store import SimulatorStore
from recon_pipeline.providers.simulator.wire import ApiWrapper
from recon_pipeline.providers.stripe import webhook
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.providers.stripe.holds import STANDARD_AUTHORIZATION
from recon_pipeline.providers.stripe.simulator import stripe_routes

# Three timezones, three currencies (one zero-decimal), both attributions (metadata, connected account).
DEMO_PROPERTIES = (
    PropertyRow("lisbon-riverside", "Lisbon Riverside Suites", "Europe/Lisbon", "EUR", "00:00", None),
    PropertyRow("kyoto-gion", "Kyoto Gion Ryokan", "Asia/Tokyo", "JPY", "00:00", "acct_1KyotoGion"),
    PropertyRow("denver-lodge", "Denver Mountain Lodge", "America/Denver", "USD", "03:00", None),
)


class StripeProvider:
    """Stripe behind the ``Provider`` protocol: ``RECON_PROVIDER_API_KEY`` is the secret key (Bearer),
    ``RECON_WEBHOOK_SECRET`` the endpoint's signing secret(s)."""

    name: str = "stripe"
    public_api_root: str = "https://api.stripe.com"
    default_max_rps: float = 100.0  # Stripe's documented live-mode rate limit (25 in test mode)

    def check_api_key(self, api_key: str) -> str | None:
        return None  # any printable key: Stripe's restricted and secret keys change shape over time

    def client(self, http: ProviderHttp, settings: ClientSettings) -> StripeAdapter:
        return StripeAdapter(http)

    def read_delivery(
        self, raw_body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: int
    ) -> list[ReceivedEvent]:
        """One event per delivery, signed with a timestamp within ``DEFAULT_TOLERANCE_S`` of ``now``."""
        webhook.verify(raw_body, headers.get(webhook.HEADER), secrets, now=now)
        payload = raw_body.decode("utf-8")
        return [ReceivedEvent(webhook.parse_event(payload), payload)]

    def acknowledgement(self, outcomes: Sequence[StoreOutcome]) -> tuple[str, str]:
        return json_acknowledgement(outcomes)

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
        )


PROVIDER: Provider = StripeProvider()  # typed: mypy checks the protocol is implemented
