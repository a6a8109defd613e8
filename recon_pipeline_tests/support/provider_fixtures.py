"""Test helpers for the provider simulator and client: Stripe-shaped object builders and a fixture that
serves a store over real HTTP on 127.0.0.1 (import ``simulator_fixture`` and ``simulator_server_fixture``
into a test module to use the ``simulator`` fixture).

The same store can be served in either provider's flavour: the ``provider`` fixture runs a test once per
flavour (``Flavour``: its ids, paths and adapter), so one suite tests both adapters against the same data.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from recon_pipeline.providers import PROVIDER_NAMES, build_client
from recon_pipeline.providers.http import ProviderHttp, RetryPolicy
from recon_pipeline.providers.interface import ClientSettings
from recon_pipeline.providers.razorpay import webhook as razorpay_webhook
from recon_pipeline.providers.razorpay.client import RazorpayAdapter
from recon_pipeline.providers.stripe import webhook as stripe_webhook
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.adyen import api as adyen_simulator
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.razorpay.api import render_payment
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.shared_servers import CurrentApp

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
DAY = 86_400
FAST_RETRY = RetryPolicy(
    max_attempts=4, base_delay_s=0.001, max_delay_s=0.005, max_retry_after_s=0.05, timeout_s=5
)


def make_charge(
    charge_id: str,
    created: int,
    *,
    amount: int = 10_000,
    currency: str = "eur",
    property_id: str | None = "prop_a",
    booking_id: str | None = None,
    account: str | None = None,
    fee: int | None = 300,
    status: str = "succeeded",
    captured: bool = True,
    amount_captured: int | None = None,
    payment_intent: str | None = None,
) -> dict[str, Any]:
    """A Stripe charge; ``fee=None`` means no balance transaction (as for pending/failed charges)."""
    metadata = (
        {}
        if property_id is None
        else {"property_id": property_id, "booking_id": booking_id or f"bk_{charge_id}"}
    )
    captured_amount = (amount if captured else 0) if amount_captured is None else amount_captured
    return {
        "id": charge_id,
        "object": "charge",
        "amount": amount,
        "amount_captured": captured_amount,
        "amount_refunded": 0,
        "currency": currency,
        "created": created,
        "status": status,
        "captured": captured,
        "paid": status == "succeeded",
        "refunded": False,
        "payment_intent": payment_intent if payment_intent is not None else f"pi_{charge_id[3:]}",
        "metadata": metadata,
        "balance_transaction": None
        if fee is None
        else {
            "id": f"txn_{charge_id[3:]}",
            "object": "balance_transaction",
            "amount": captured_amount,
            "fee": fee,
            "net": captured_amount - fee,
            "currency": currency,
            "created": created,  # always present on Stripe's (a capture's; captured with the charge here)
        },
        "account": account,
    }


def make_refund(
    refund_id: str, charge: dict[str, Any], created: int, amount: int, status: str = "succeeded"
) -> dict[str, Any]:
    """A Stripe refund of ``charge`` (same currency, payment intent and account)."""
    return {
        "id": refund_id,
        "object": "refund",
        "amount": amount,
        "charge": charge["id"],
        "payment_intent": charge["payment_intent"],
        "currency": charge["currency"],
        "created": created,
        "status": status,
        "metadata": {},
        "account": charge["account"],
    }


def make_payment_intent(charge: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": charge["payment_intent"],
        "object": "payment_intent",
        "amount": charge["amount"],
        "amount_received": charge["amount_captured"],
        "currency": charge["currency"],
        "status": "succeeded" if charge["captured"] else "requires_capture",
        "latest_charge": charge["id"],
        "metadata": dict(charge["metadata"]),
        "created": charge["created"],
        "account": charge["account"],
    }


Adapter = StripeAdapter | RazorpayAdapter
Delivery = tuple[bytes, dict[str, str]]  # a webhook's raw body and headers
DeliveryOf = Callable[[str, dict[str, Any], dict[str, Any], int], Delivery]  # (event id, charge, intent, now)
WEBHOOK_SECRET = "0123456789abcdef" * 4  # hex: Adyen's HMAC key, and any provider's shared secret
# Adyen's settlement batches are published once the simulator's clock passes their close: a world served
# in Adyen's flavour is seen this long after its newest money movement.
SETTLED_AFTER_S = 30 * 86_400


def _stripe_delivery(event_id: str, charge: dict[str, Any], intent: dict[str, Any], now: int) -> Delivery:
    body = json.dumps(
        {
            "id": event_id,
            "object": "event",
            "type": "payment_intent.succeeded",
            "created": now,
            "data": {"object": {k: v for k, v in intent.items() if k != "account"}},
        }
    ).encode()
    return body, {stripe_webhook.HEADER: stripe_webhook.sign(body, WEBHOOK_SECRET, now)}


def _razorpay_delivery(event_id: str, charge: dict[str, Any], intent: dict[str, Any], now: int) -> Delivery:
    body = json.dumps(
        {
            "entity": "event",
            "event": "payment.captured",
            "contains": ["payment"],
            "payload": {"payment": {"entity": render_payment(charge)}},
            "created_at": now,
        }
    ).encode()
    headers = {
        razorpay_webhook.HEADER: hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest(),
        razorpay_webhook.EVENT_ID_HEADER: event_id,
    }
    return body, headers


def notification_body(items: Sequence[dict[str, Any]], live: bool = False) -> bytes:
    """A delivery of ``items`` as Adyen POSTs it (the tests' webhook deliveries)."""
    wrapped = [{"NotificationRequestItem": item} for item in items]
    return json.dumps({"live": "true" if live else "false", "notificationItems": wrapped}).encode()


def _adyen_delivery(event_id: str, charge: dict[str, Any], intent: dict[str, Any], now: int) -> Delivery:
    """A CAPTURE notification of the payment whose modification reference is ``event_id`` (Adyen's event
    id is ``CAPTURE:<event_id>:true``: each ``event_id`` is its own event, a resend is a duplicate)."""
    item = adyen_simulator.notification_item(
        "CAPTURE",
        event_id,
        merchant_account=adyen_simulator.merchant_account_of(charge),
        amount_minor=int(charge["amount"]),
        currency=str(charge["currency"]).upper(),
        original_reference=str(charge["id"]),
        event_date=datetime.fromtimestamp(now, UTC).isoformat(),
    )
    signed = adyen_simulator.signed(item, WEBHOOK_SECRET)
    return notification_body([signed]), {}


@dataclass(frozen=True)
class Flavour:
    """A provider as the tests see it: how its ids look, where its records are, its client and its signed
    webhook deliveries. Every registered provider needs one (``FLAVOURS``): the provider-facing suites run
    once per registered provider, and one without test support fails them."""

    name: str
    charge_prefix: str  # a payment record's id prefix
    refund_prefix: str
    payments_path: str  # the list of payment records ("" for a provider that lists none)
    api_key: str  # a key in the provider's format
    payment_delivery: (
        DeliveryOf  # a webhook about a payment as the provider sends it, signed with WEBHOOK_SECRET
    )
    options: Mapping[str, Any] = field(default_factory=dict)  # the client's provider-specific settings
    property_account: str | None = None  # a property's account where the store's platform charges are
    lists_payments: bool = True  # an API that lists a window's payments (the windowed pull)
    has_events_api: bool = False  # missed webhooks recovered from an events API
    reports_failed_payments: bool = True  # a failed payment's state is readable by id
    intents: bool = False  # payments go through an intent (the order's key)
    aliases: bool = True  # a payment also has an intent or order id a ledger may book it by
    # other lists a night's pull reads, each holding every payment's movement too (Stripe: its balance
    # transactions, of which disputes and captures of earlier charges are kept)
    movement_lists: tuple[str, ...] = ()
    refunds_embed_payment: bool = False  # a refund list carries each refund's payment (no lookup by id)

    def charge_id(self, suffix: str) -> str:
        return f"{self.charge_prefix}{suffix}"

    def refund_id(self, suffix: str) -> str:
        return f"{self.refund_prefix}{suffix}"

    def adapter(self, http: ProviderHttp, api_key: str | None = None) -> Any:
        """The registry's client for this provider, with the flavour's options."""
        return build_client(self.name, http, ClientSettings("", api_key, self.options))

    def served(self, store: SimulatorStore) -> SimulatorStore:
        """``store`` as this provider serves it: for a settlement-report provider, its clock always past the
        batches that settle its movements, as they are now (the simulator's clock is otherwise the wall
        clock)."""
        if not self.lists_payments:
            store.clock = lambda: float(
                max((obj["created"] for obj in (*store.charges, *store.refunds)), default=0) + SETTLED_AFTER_S
            )
        return store


STRIPE = Flavour(
    "stripe",
    "ch_",
    "re_",
    "/v1/charges",
    "sk_test_key",
    _stripe_delivery,
    has_events_api=True,
    intents=True,
    movement_lists=("/v1/balance_transactions",),
    refunds_embed_payment=True,
)
RAZORPAY = Flavour("razorpay", "pay_", "rfnd_", "/v1/payments", "rzp_test_key:secret", _razorpay_delivery)
ADYEN = Flavour(
    "adyen",
    "8815",  # PSP references: 16 characters
    "8816",
    "",
    "ws@Company.Hotels:report-password",
    _adyen_delivery,
    options={"merchant_account": adyen_simulator.SIMULATOR_MERCHANT_ACCOUNT},
    property_account=adyen_simulator.SIMULATOR_MERCHANT_ACCOUNT,  # a property is a merchant account
    lists_payments=False,
    reports_failed_payments=False,
    aliases=False,  # a PSP reference is the payment's only id
)
FLAVOURS = {flavour.name: flavour for flavour in (STRIPE, RAZORPAY, ADYEN)}


def flavour_of(name: str) -> Flavour:
    """The test support of the registered provider ``name``; a provider registered without any fails
    the test that asks (it is never skipped)."""
    if name not in FLAVOURS:
        pytest.fail(f"provider {name!r} is registered but has no test support in provider_fixtures.FLAVOURS")
    return FLAVOURS[name]


@pytest.fixture(params=PROVIDER_NAMES, name="provider")
def provider_fixture(request: pytest.FixtureRequest) -> Flavour:
    """Run the test once against each registered provider's API."""
    return flavour_of(request.param)


# Registered providers whose API lists a window's payments (one without test support is kept: it fails).
LISTING_PROVIDERS = [name for name in PROVIDER_NAMES if name not in FLAVOURS or FLAVOURS[name].lists_payments]


@pytest.fixture(params=LISTING_PROVIDERS, name="listing_provider")
def listing_provider_fixture(request: pytest.FixtureRequest) -> Flavour:
    """Run a paging or list-window test once per provider with a list API (Adyen's settlement reports have
    their own tests: ``test_adyen_client.py``); a module uses it as its ``provider``."""
    return flavour_of(request.param)


@dataclass
class RunningSimulator:
    """A simulator served on 127.0.0.1, with a plain client on it and helpers for its control endpoints."""

    server: ServerThread
    store: SimulatorStore
    client: httpx.Client  # one client: a fresh one per request costs ~40 ms of TLS context setup

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def set_faults(self, **settings: Any) -> dict[str, Any]:
        response = self.client.post("/_simulator/faults", json=settings)
        response.raise_for_status()
        return dict(response.json())

    def stats(self) -> dict[str, Any]:
        return dict(self.client.get("/_simulator/stats").json())


StartSimulator = Callable[..., RunningSimulator]


@pytest.fixture(scope="session", name="simulator_server")
def simulator_server_fixture() -> Iterator[tuple[ServerThread, CurrentApp]]:
    current = CurrentApp()
    with ServerThread(current) as server:
        yield server, current


@pytest.fixture(name="simulator")
def simulator_fixture(simulator_server: tuple[ServerThread, CurrentApp]) -> Iterator[StartSimulator]:
    """``simulator(store, api_key=None, flavour="stripe")`` serves ``store`` on 127.0.0.1 until the test
    ends, speaking ``flavour``'s API."""
    server, current = simulator_server
    clients: list[httpx.Client] = []

    def start(store: SimulatorStore, api_key: str | None = None, flavour: str = "stripe") -> RunningSimulator:
        current.app = build_app(store, api_key=api_key, flavour=flavour)
        clients.append(loopback_client(base_url=server.base_url, timeout=5))
        return RunningSimulator(server=server, store=store, client=clients[-1])

    yield start
    current.app = None
    for client in clients:
        client.close()


@pytest.fixture
def clients() -> Iterator[list[ProviderHttp]]:
    """ProviderHttp instances made by a test, closed at its end."""
    made: list[ProviderHttp] = []
    yield made
    for http in made:
        http.close()
