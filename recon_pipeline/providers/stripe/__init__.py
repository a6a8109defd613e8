"""Stripe as a provider: charges, refunds and disputes (with their balance transactions) for money
movements, events for recovery, signed webhooks.

Everything Stripe-specific lives in this folder: ``client.py`` (the API: a night's pull, lookups by id,
current payment state, events since a cursor), ``balance.py`` (balance transactions: conversion figures),
``disputes.py`` (a dispute's withdrawal, reversal and fees as rows), ``state.py`` (PaymentIntent /
charge → ``PaymentState``), ``dashboard.py`` (a record's page in the Dashboard) and ``webhook.py``
(``Stripe-Signature`` and the event parser); its simulator is in the simulated world (``simulation/stripe/``).
``PROVIDER`` is what the registry maps ``stripe`` to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import (
    ClientSettings,
    Provider,
    ReceivedEvent,
    StoreOutcome,
    json_acknowledgement,
)
from recon_pipeline.providers.stripe import webhook
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.providers.stripe.dashboard import StripeDashboard


class StripeProvider:
    """Stripe behind the ``Provider`` protocol: ``RECON_PROVIDER_API_KEY`` is the secret key (Bearer),
    ``RECON_WEBHOOK_SECRET`` the endpoint's signing secret(s)."""

    name: str = "stripe"
    public_api_root: str = "https://api.stripe.com"
    default_max_rps: float = 100.0  # Stripe's documented live-mode rate limit (25 in test mode)

    def check_api_key(self, api_key: str) -> str | None:
        return None  # any printable key: Stripe's restricted and secret keys change shape over time

    def client(self, http: ProviderHttp, settings: ClientSettings) -> StripeAdapter:
        own_api = settings.base_url.rstrip("/") == self.public_api_root
        return StripeAdapter(http, dashboard=StripeDashboard.for_key(settings.api_key) if own_api else None)

    def read_delivery(
        self, raw_body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: int
    ) -> list[ReceivedEvent]:
        """One event per delivery, signed with a timestamp within ``DEFAULT_TOLERANCE_S`` of ``now``."""
        webhook.verify(raw_body, headers.get(webhook.HEADER), secrets, now=now)
        payload = raw_body.decode("utf-8")
        return [ReceivedEvent(webhook.parse_event(payload), payload)]

    def acknowledgement(self, outcomes: Sequence[StoreOutcome]) -> tuple[str, str]:
        return json_acknowledgement(outcomes)


PROVIDER: Provider = StripeProvider()  # typed: mypy checks the protocol is implemented
