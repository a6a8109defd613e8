"""Razorpay as a provider: payments, refunds and the settlement recon for money movements, signed webhooks.

Everything Razorpay-specific lives in this folder: ``client.py`` (the API: a night's pull, lookups by id,
current payment state; Razorpay has no events API), ``settlement.py`` (settlement calendar, fee and GST),
``state.py`` (payment → ``PaymentState``), ``dashboard.py`` (a record's page in the Dashboard) and
``webhook.py`` (``X-Razorpay-Signature`` and the event parser); its simulator is in the simulated world
(``simulation/razorpay/``). ``PROVIDER`` is what the registry maps ``razorpay`` to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from recon_pipeline.config import positive_int_from_env, text_from_env
from recon_pipeline.errors import ConfigError
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import (
    ClientSettings,
    Provider,
    ReceivedEvent,
    StoreOutcome,
    json_acknowledgement,
)
from recon_pipeline.providers.razorpay import webhook
from recon_pipeline.providers.razorpay.client import RazorpayAdapter
from recon_pipeline.providers.razorpay.holds import DEFAULT_CAPTURE_TIMEOUT
from recon_pipeline.providers.razorpay.settlement import (
    DEFAULT_SETTLEMENT_DAYS,
    SettlementCalendar,
    parse_holidays,
)

SETTLEMENT_DAYS_ENV = "RECON_RAZORPAY_SETTLEMENT_DAYS"
CAPTURE_TIMEOUT_ENV = "RECON_RAZORPAY_CAPTURE_TIMEOUT_HOURS"  # the account's payment capture setting
HOLIDAYS_ENV = "RECON_RAZORPAY_HOLIDAYS"


class RazorpayProvider:
    """Razorpay behind the ``Provider`` protocol: ``RECON_PROVIDER_API_KEY`` is ``key_id:key_secret``
    (Basic auth), ``RECON_WEBHOOK_SECRET`` the webhook secret(s). Client option ``settlement_days``
    (else ``RECON_RAZORPAY_SETTLEMENT_DAYS``, 3): through how many working days after a payment's day its
    settled fee is looked for; ``holidays`` (else ``RECON_RAZORPAY_HOLIDAYS``, ISO dates separated by
    commas): bank holidays besides India's public and NSE holidays, which are never working days;
    ``capture_timeout_hours`` (else ``RECON_RAZORPAY_CAPTURE_TIMEOUT_HOURS``, 72): the account's
    manual-capture timeout, after which Razorpay auto-refunds an authorized payment."""

    name: str = "razorpay"
    public_api_root: str = "https://api.razorpay.com"
    # Razorpay publishes no fixed rate; it answers 429 above a per-merchant limit. A cautious bound.
    default_max_rps: float = 25.0

    def check_api_key(self, api_key: str) -> str | None:
        if ":" not in api_key:
            return "RECON_PROVIDER_API_KEY for Razorpay is key_id:key_secret"
        return None

    def client(self, http: ProviderHttp, settings: ClientSettings) -> RazorpayAdapter:
        days = settings.options.get("settlement_days")
        if days is None:
            days = positive_int_from_env(SETTLEMENT_DAYS_ENV, DEFAULT_SETTLEMENT_DAYS)
        hours = settings.options.get("capture_timeout_hours")
        if hours is None:
            hours = positive_int_from_env(CAPTURE_TIMEOUT_ENV, DEFAULT_CAPTURE_TIMEOUT // timedelta(hours=1))
        extra = settings.options.get("holidays")
        try:
            calendar = SettlementCalendar(parse_holidays(extra or text_from_env(HOLIDAYS_ENV, "")))
        except ValueError as error:
            raise ConfigError(f"{HOLIDAYS_ENV}: {error}") from None
        try:
            return RazorpayAdapter(
                http,
                settings.api_key,
                settlement_days=int(days),
                calendar=calendar,
                capture_timeout=timedelta(hours=int(hours)),
                dashboard=settings.base_url.rstrip("/") == self.public_api_root,
            )
        except ValueError as error:
            raise ConfigError(f"{SETTLEMENT_DAYS_ENV}: {error}") from None

    def read_delivery(
        self, raw_body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: int
    ) -> list[ReceivedEvent]:
        """One event per delivery; the body has no id, ``x-razorpay-event-id`` is the event's. No
        timestamp is signed: a replay is stored once and changes nothing."""
        webhook.verify(raw_body, headers.get(webhook.HEADER), secrets)
        payload = raw_body.decode("utf-8")
        return [ReceivedEvent(webhook.parse_event(payload, headers.get(webhook.EVENT_ID_HEADER)), payload)]

    def acknowledgement(self, outcomes: Sequence[StoreOutcome]) -> tuple[str, str]:
        return json_acknowledgement(outcomes)


PROVIDER: Provider = RazorpayProvider()  # typed: mypy checks the protocol is implemented
