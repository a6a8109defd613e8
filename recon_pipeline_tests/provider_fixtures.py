"""Test helpers for the provider simulator and client: Stripe-shaped object builders and a fixture that
serves a store over real HTTP on 127.0.0.1 (import ``simulator_fixture`` and ``simulator_server_fixture``
into a test module to use the ``simulator`` fixture).

The same store can be served in either provider's flavour: the ``provider`` fixture runs a test once per
flavour (``Flavour``: its ids, paths and adapter), so one suite tests both adapters against the same data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from recon_pipeline.providers import build_client
from recon_pipeline.providers.http import ProviderHttp, RetryPolicy
from recon_pipeline.providers.interface import ClientSettings
from recon_pipeline.providers.razorpay.client import RazorpayAdapter
from recon_pipeline.providers.simulator.app import build_app
from recon_pipeline.providers.simulator.store import SimulatorStore
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.serving import ServerThread

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


@dataclass(frozen=True)
class Flavour:
    """A provider API as the tests see it: how its ids look, where its records are, its adapter."""

    name: str
    charge_prefix: str  # a payment record's id prefix
    refund_prefix: str
    payments_path: str  # the list of payment records
    api_key: str  # a key in the provider's format

    def charge_id(self, suffix: str) -> str:
        return f"{self.charge_prefix}{suffix}"

    def refund_id(self, suffix: str) -> str:
        return f"{self.refund_prefix}{suffix}"

    def adapter(self, http: ProviderHttp, api_key: str | None = None) -> Adapter:
        """The registry's client for this provider (the tests also read its own pull_night)."""
        client = build_client(self.name, http, ClientSettings("", api_key, {}))
        assert isinstance(client, StripeAdapter | RazorpayAdapter)
        return client


STRIPE = Flavour("stripe", "ch_", "re_", "/v1/charges", "sk_test_key")
RAZORPAY = Flavour("razorpay", "pay_", "rfnd_", "/v1/payments", "rzp_test_key:secret")
FLAVOURS = {flavour.name: flavour for flavour in (STRIPE, RAZORPAY)}


@pytest.fixture(params=list(FLAVOURS), name="provider")
def provider_fixture(request: pytest.FixtureRequest) -> Flavour:
    """Run the test once against each provider's API."""
    return FLAVOURS[request.param]


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


class _CurrentApp:
    """Forwards to the app the current test installed: one server serves the whole session (a uvicorn
    stop costs ~0.1 s), while every test still gets a fresh app with fresh faults and counters."""

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # the simulator has no startup work: acknowledge it here
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if self.app is None:
            raise RuntimeError("no simulator installed")
        await self.app(scope, receive, send)


@pytest.fixture(scope="session", name="simulator_server")
def simulator_server_fixture() -> Iterator[tuple[ServerThread, _CurrentApp]]:
    current = _CurrentApp()
    with ServerThread(current) as server:
        yield server, current


@pytest.fixture(name="simulator")
def simulator_fixture(simulator_server: tuple[ServerThread, _CurrentApp]) -> Iterator[StartSimulator]:
    """``simulator(store, api_key=None, flavour="stripe")`` serves ``store`` on 127.0.0.1 until the test
    ends, speaking ``flavour``'s API."""
    server, current = simulator_server
    clients: list[httpx.Client] = []

    def start(store: SimulatorStore, api_key: str | None = None, flavour: str = "stripe") -> RunningSimulator:
        current.app = build_app(store, api_key=api_key, flavour=flavour)
        clients.append(httpx.Client(base_url=server.base_url, timeout=5))
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
