"""The one interface every payment provider implements, and the only one the rest of the code sees.

A provider package (``providers/<name>/``) holds everything specific to that provider and exports one
``Provider``; the registry (``providers/__init__.py``) maps names to them. Outside ``providers/`` nothing
imports a provider package or asks which provider it is talking to: the pipeline pulls a night's money
movements and looks records up by id through ``ProviderClient``, the event processor reads a payment's
current state through it, recovery asks it for missed events, the webhook receiver verifies and parses
deliveries through ``Provider.read_delivery``; a stored record's link to the provider's dashboard is the one
``ProviderClient.dashboard_url`` gave. The simulated world (``simulation/``) is not a provider's concern:
nothing here knows of it.

Types here are provider-neutral: ``PropertyAccount`` (where a property's money lives at the provider),
the provider-record frame (``records.py``: one row per money movement), ``PaymentState`` (one payment's
current state in the contract's terms), ``ProviderEvent`` (the ids of one delivered event) and the error
family (``errors.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import pandas as pd

    from recon_pipeline.providers.events import PaymentState, ProviderEvent
    from recon_pipeline.providers.holds import AuthorizationHold
    from recon_pipeline.providers.http import ProviderHttp
    from recon_pipeline.providers.objects import PropertyAccount
    from recon_pipeline.providers.payouts import Payout, PayoutTransaction


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
class ClientSettings:
    """What a provider client is built from: the base URL, the secret key (None for a keyless simulator),
    and provider-specific options by name (e.g. a settlement lag), already read from configuration."""

    base_url: str
    api_key: str | None
    options: Mapping[str, Any]


@dataclass(frozen=True)
class RecordAddress:
    """What names one money movement at its provider, for a link to it: its id and kind, the charge it
    belongs to (its own id for a payment), and the account it lives in (None: the platform's own)."""

    provider_record_id: str
    kind: str
    charge_id: str | None
    provider_account: str | None


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

    def dashboard_url(self, record: RecordAddress) -> str | None:
        """The record's page in the provider's dashboard, in the URL shape the provider documents; None
        when this client talks to something with no dashboard (a simulator) or the record has no page."""
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
    """A payment provider: its name, defaults, client factory and webhook reader."""

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


def json_acknowledgement(outcomes: Sequence[StoreOutcome]) -> tuple[str, str]:
    """The receiver's JSON answer to a one-event delivery, for providers that only need a 2xx: whether it
    was a duplicate, and ``conflict`` when a stored id came with another body."""
    body: dict[str, bool] = {"received": True, "duplicate": any(outcome != "new" for outcome in outcomes)}
    if "conflict" in outcomes:
        body["conflict"] = True
    return json.dumps(body), "application/json"
