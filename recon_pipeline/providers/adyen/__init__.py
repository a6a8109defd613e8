"""Adyen as a provider: Settlement details reports for money movements, standard notifications for events.

Everything Adyen-specific lives in this folder: ``report.py`` (the CSV into the provider-record frame),
``client.py`` (downloads, settlement calendar, state by id), ``dashboard.py`` (a record's page in the
Customer Area) and ``webhook.py`` (HMAC and items); its simulator is in the simulated world
(``simulation/adyen/``). ``PROVIDER`` is what the registry maps ``adyen`` to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recon_pipeline.providers.adyen.client import DEFAULT_LOOKUP_BATCHES, DEFAULT_SETTLEMENT_DAYS, AdyenClient
from recon_pipeline.providers.adyen.dashboard import customer_area
from recon_pipeline.providers.adyen.webhook import ACKNOWLEDGEMENT, read_delivery
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import (
    ClientSettings,
    Provider,
    ReceivedEvent,
    StoreOutcome,
)


class AdyenProvider:
    """Adyen behind the ``Provider`` protocol.

    ``RECON_PROVIDER_API_KEY`` is the report user's ``user:password``; ``RECON_WEBHOOK_SECRET`` the hex
    HMAC key(s) of the notification webhook. Client options: ``merchant_account`` (for properties without
    a ``provider_account``), ``settlement_days`` and ``lookup_batches`` (see ``client.py``).
    """

    name: str = "adyen"
    public_api_root: str = "https://ca-live.adyen.com"  # the live reports root (test: ca-test.adyen.com)
    # Adyen publishes no rate for report downloads; a conservative bound, a night reads a handful of files.
    default_max_rps: float = 10.0

    def check_api_key(self, api_key: str) -> str | None:
        user, _, password = api_key.partition(":")
        if not user or not password:
            return "an Adyen report credential is 'user:password' (the report user, e.g. ws@Company.X)"
        return None

    def client(self, http: ProviderHttp, settings: ClientSettings) -> AdyenClient:
        options = settings.options
        return AdyenClient(
            http,
            settings.api_key,
            merchant_account=options.get("merchant_account"),
            settlement_days=int(options.get("settlement_days", DEFAULT_SETTLEMENT_DAYS)),
            lookup_batches=int(options.get("lookup_batches", DEFAULT_LOOKUP_BATCHES)),
            customer_area=customer_area(settings.base_url),
        )

    def read_delivery(
        self, raw_body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: int
    ) -> list[ReceivedEvent]:
        """Every item verified by its own HMAC (no timestamp check: Adyen retries a delivery for days,
        and a replay is stored once and changes nothing, since workers read current state)."""
        return read_delivery(raw_body, secrets)

    def acknowledgement(self, outcomes: Sequence[StoreOutcome]) -> tuple[str, str]:
        """Adyen needs ``[accepted]`` whether or not an item was new, else it retries the delivery."""
        return ACKNOWLEDGEMENT, "text/plain"


PROVIDER: Provider = AdyenProvider()  # typed: mypy checks the protocol is implemented
