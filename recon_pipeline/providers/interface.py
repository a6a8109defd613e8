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

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import pandas as pd
    from starlette.routing import BaseRoute

    from recon_pipeline.properties import PropertyRow
    from recon_pipeline.providers.events import PaymentState, ProviderEvent
    from recon_pipeline.providers.holds import AuthorizationHold
    from recon_pipeline.providers.http import ProviderHttp
    from recon_pipeline.providers.objects import PropertyAccount
    from recon_pipeline.providers.payouts import Payout, PayoutTransaction
    from recon_pipeline.providers.simulator.store import SimulatorStore
    from recon_pipeline.providers.simulator.wire import ApiWrapper


@dataclass(frozen=True)
class ReceivedEvent:
    """One event of a webhook delivery: its ids and the raw JSON text stored in ``payment_events``."""

    event: ProviderEvent
    payload: str


# What storing one event of a delivery came to: new, a duplicate of a stored event, or a stored event id
# with another body (kept as evidence; the stored event is unchanged).
StoreOutcome = Literal["new", "duplicate", "conflict"]


@dataclass(frozen=True)
class ListedEvents:
    """What a provider's events API listed since a cursor: the well-formed events, and how many it listed
    that are not well-formed (skipped, logged by id: failing on them would pin the cursor forever)."""

    events: list[ReceivedEvent]
    malformed: int = 0


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
    # then also holds disputes and converted charges (``demo/world.py``).
    balance_transactions: bool = False
    authorization_period: timedelta | None = None
    # Whether its payouts are daily settlements of earlier days' payments (Razorpay): the world then holds
    # payments settling on the night, one in a settlement the bank refuses (``demo/world.py``).
    settled_payouts: bool = False
    # How long after a night ends the provider has published all of its money (Adyen: the settlement
    # batches that may hold it); the demo reconciles each property's newest night published by now, as a
    # later one fails as an incomplete pull.
    published_after: timedelta = timedelta(0)
    # Whether its records show a failed payment (Adyen's settlement reports list only settled money): if
    # not, the ledger's booking of one is money missing at the provider, not a status mismatch.
    reports_failed_payments: bool = True


@dataclass(frozen=True)
class ClientSettings:
    """What a provider client is built from: the base URL, the secret key (None for a keyless simulator),
    and provider-specific options by name (e.g. a settlement lag), already read from configuration."""

    base_url: str
    api_key: str | None
    options: Mapping[str, Any]


class ProviderClient(Protocol):
    """One provider's API over a shared, rate-bounded ``ProviderHttp``."""

    name: str  # the provider's registry name: what its events are stored under

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

    def payment_state(self, provider_account: str | None, payment_id: str) -> PaymentState | None:
        """The payment's current state, read by id (None: the provider does not know it)."""
        ...

    def events_since(self, provider_account: str | None, created_gte: int) -> ListedEvents | None:
        """Events created since ``created_gte`` (unix seconds) for recovery of missed webhooks; None when
        the provider has no events API (missed deliveries are then covered by the nightly pull)."""
        ...

    def payouts_arriving(
        self, provider_account: str | None, arrival_gte: datetime, arrival_lt: datetime
    ) -> list[Payout] | None:
        """The account's payouts expected at the bank in ``[arrival_gte, arrival_lt)``, whatever their
        status; None when this provider's payouts are not read through its API. Raises
        IncompletePullError rather than return part of the list."""
        ...

    def payout_transactions(self, payout: Payout) -> list[PayoutTransaction] | None:
        """The balance transactions the payout carried (its own withdrawal excluded); None when the
        provider cannot break this payout down (it is then untraceable, not an error)."""
        ...

    def authorization_holds(
        self, account: PropertyAccount, payment_ids: Sequence[str]
    ) -> list[AuthorizationHold]:
        """The current state of those payments that are or were authorizations awaiting capture (ids the
        provider does not know, and payments that never were a hold, are absent); empty for a provider
        whose API shows no uncaptured authorization. Raises IncompletePullError when the provider cannot be
        read: an unreachable provider never makes a hold look captured."""
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

    def acknowledgement(self, outcomes: Sequence[StoreOutcome]) -> tuple[str, str]:
        """The 2xx body and media type the provider expects once the delivery is stored (``outcomes[i]``:
        what storing event i came to)."""
        ...

    def simulator_routes(self, store: SimulatorStore, api: ApiWrapper) -> list[BaseRoute]:
        """The simulator's routes for this provider's API subset over the shared seeded store; ``api``
        wraps a JSON handler with the host's counting, faults, auth and account scoping in the provider's
        ``Dialect``."""
        ...

    def demo_world(self) -> DemoWorld:
        """What ``recon demo`` seeds for this provider."""
        ...


def json_acknowledgement(outcomes: Sequence[StoreOutcome]) -> tuple[str, str]:
    """The receiver's JSON answer to a one-event delivery, for providers that only need a 2xx: whether it
    was a duplicate, and ``conflict`` when a stored id came with another body."""
    body: dict[str, bool] = {"received": True, "duplicate": any(outcome != "new" for outcome in outcomes)}
    if "conflict" in outcomes:
        body["conflict"] = True
    return json.dumps(body), "application/json"
