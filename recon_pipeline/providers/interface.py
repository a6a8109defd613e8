"""The one interface every payment provider implements, and the only one the rest of the code sees.

A provider package (``providers/<name>/``) holds everything specific to that provider and exports one
``Provider``; the registry (``providers/__init__.py``) maps names to them. Outside ``providers/`` nothing
imports a provider package or asks which provider it is talking to: the pipeline pulls a night's money
movements and looks records up by id through ``ProviderClient``, the event processor reads a payment's
current state through it, recovery asks it for missed events, the webhook receiver verifies and parses
deliveries through ``Provider.read_delivery`` and the simulator mounts ``Provider.simulator_routes``.

Types here are provider-neutral: ``PropertyAccount`` (where a property's money lives at the provider),
the provider-record frame (``records.py``: one row per money movement), ``PaymentState`` (one payment's
current state in the contract's terms), ``ProviderEvent`` (the ids of one delivered event) and the error
family (``errors.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd
    from starlette.routing import BaseRoute

    from recon_pipeline.events.parse import ProviderEvent
    from recon_pipeline.events.payment_state import PaymentState
    from recon_pipeline.provider.http import ProviderHttp
    from recon_pipeline.provider.objects import PropertyAccount


@dataclass(frozen=True)
class ReceivedEvent:
    """One event of a webhook delivery: its ids and the raw JSON text stored in ``payment_events``."""

    event: ProviderEvent
    payload: str


@dataclass(frozen=True)
class ClientSettings:
    """What a provider client is built from: the base URL, the secret key (None for a keyless simulator),
    and provider-specific options by name (e.g. a settlement lag), already read from configuration."""

    base_url: str
    api_key: str | None
    options: Mapping[str, Any]


class ProviderClient(Protocol):
    """One provider's API over a shared, rate-bounded ``ProviderHttp``."""

    def pull_claimed(
        self, account: PropertyAccount, window_start: datetime, window_end: datetime
    ) -> pd.DataFrame:
        """Every money movement of the account's scope in ``[window_start, window_end)`` that names no
        other property, as the provider-record frame (``property_id`` = the property it claims, or None).
        Raises IncompletePullError on any failure: a partial frame is never returned."""
        ...

    def fetch_records_by_id(self, account: PropertyAccount, record_ids: Sequence[str]) -> pd.DataFrame:
        """The frame for explicit ids of any kind the provider issues (unknown ids are absent)."""
        ...

    def owns_record_id(self, record_id: str) -> bool:
        """Whether ``record_id`` has the shape of an id this provider issues (lookups are asked only for
        those)."""
        ...

    def payment_state(self, provider_account: str | None, payment_id: str) -> PaymentState | None:
        """The payment's current state, read by id (None: the provider does not know it)."""
        ...

    def events_since(self, provider_account: str | None, created_gte: int) -> list[ReceivedEvent] | None:
        """Events created since ``created_gte`` (unix seconds) for recovery of missed webhooks; None when
        the provider has no events API (missed deliveries are then covered by the nightly pull)."""
        ...


class Provider(Protocol):
    """A payment provider: its name, defaults, client factory, webhook reader and simulator."""

    name: str  # the registry key and the value of RECON_PROVIDER
    public_api_root: str  # RECON_PROVIDER_BASE_URL's default
    default_max_rps: float  # the documented request rate limit (RECON_PROVIDER_MAX_RPS's default)

    def check_api_key(self, api_key: str) -> str | None:
        """Why ``api_key`` cannot be this provider's key (a one-line reason that never repeats it), or
        None when it has the right shape."""
        ...

    def client(self, http: ProviderHttp, settings: ClientSettings) -> ProviderClient: ...

    def read_delivery(
        self, raw_body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: int
    ) -> list[ReceivedEvent]:
        """Verify a webhook delivery's signature (raises SignatureError) and read its events (raises
        EventFormatError). A delivery may hold several events (Adyen batches notification items)."""
        ...

    def acknowledgement(self, stored: Sequence[bool]) -> tuple[str, str]:
        """The 2xx body and media type the provider expects once the delivery is stored (``stored[i]``:
        event i was new)."""
        ...

    def simulator_routes(self, store: Any, api: Any) -> list[BaseRoute]:
        """The simulator's routes for this provider's API subset over the shared seeded store."""
        ...
