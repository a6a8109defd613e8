"""Every request a provider client sends is one its provider documents (issue 24): the rule of each provider
(``providers/stripe/documented.py`` from Stripe's published OpenAPI description, Razorpay's and Adyen's
tables), the simulators refusing by it in the provider's error shape, and every request each client
sends, recorded on the server side of a real loopback connection, held to it."""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import ExitStack
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl

import dagster as dg
import httpx
import pytest
from sqlalchemy import func, select

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies, night_reconciliations
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.batches import batch_run_config
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.nights import night_window
from recon_pipeline.providers import PROVIDER_NAMES
from recon_pipeline.providers import documented as provider_rule
from recon_pipeline.providers.adyen import documented as adyen_documented
from recon_pipeline.providers.documented import Refusal
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.razorpay import documented as razorpay_documented
from recon_pipeline.providers.stripe import documented as stripe_documented
from recon_pipeline.providers.stripe.api_version import API_VERSION, VERSION_HEADER
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.fleet import fleet_properties, fleet_thresholds, fleet_world
from recon_pipeline.simulation.demo.properties import demo_properties
from recon_pipeline.simulation.demo.seed import seed_thresholds, seed_world
from recon_pipeline.simulation.demo.world import World, build_world
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline_tests.support.provider_fixtures import FAST_RETRY, flavour_of

NIGHT = date(2026, 11, 30)
PINNED = {VERSION_HEADER: API_VERSION}
Recorded = tuple[str, list[tuple[str, str]]]  # a request's path and its query items in the order sent
Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class Recording:
    """An ASGI app in front of the simulator keeping every API request's path and query as it arrived."""

    def __init__(self, app: Asgi) -> None:
        self.app = app
        self.requests: list[Recorded] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/_simulator"):
            query = parse_qsl(scope["query_string"].decode("ascii"), keep_blank_values=True)
            self.requests.append((scope["path"], query))
        await self.app(scope, receive, send)


def judged(flavour: str, path: str, query: list[tuple[str, str]]) -> Refusal | None:
    """The provider's rule on one request (ValueError for a path it documents no GET endpoint at)."""
    if flavour == "stripe":
        return stripe_documented.refusal(stripe_documented.endpoint_of(path), query)
    table = {"razorpay": razorpay_documented, "adyen": adyen_documented}[flavour]
    return table.refusal(provider_rule.endpoint_of(table.ENDPOINTS, path, flavour), query)


def endpoints_of(flavour: str, recorded: list[Recorded]) -> set[str]:
    if flavour == "stripe":
        return {stripe_documented.endpoint_of(path) for path, _ in recorded}
    table = {"razorpay": razorpay_documented, "adyen": adyen_documented}[flavour]
    return {provider_rule.endpoint_of(table.ENDPOINTS, path, flavour) for path, _ in recorded}


# --- the rule itself ---------------------------------------------------------------------------------------


def test_a_nested_path_through_a_polymorphic_source_is_refused_and_the_source_itself_documented() -> None:
    table = json.loads(stripe_documented.TABLE_PATH.read_text(encoding="utf-8"))
    sources = table["expandable"]["balance_transaction"]["source"]
    assert {"charge", "refund", "dispute", "payout"} <= set(sources) and len(sources) == 16
    assert "charge" not in table["expandable"]["charge"] and "charge" in table["expandable"]["dispute"]
    listed, one = "/v1/balance_transactions", "/v1/balance_transactions/{id}"
    assert stripe_documented.refusal(listed, [("expand[]", "data.source")]) is None
    assert stripe_documented.refusal(
        listed, [("expand[]", "data.source"), ("expand[]", "data.source.charge")]
    ) == (Refusal("This property cannot be expanded (charge).", "expand[1]"))
    assert stripe_documented.refusal(one, [("expand[0]", "source.charge")]) == Refusal(
        "This property cannot be expanded (charge).", "expand[0]"
    )
    assert stripe_documented.refusal(one, [("expand[]", "source")]) is None
    # a list's paths apply to its items under ``data.``; a retrieve's to the object
    assert stripe_documented.refusal(listed, [("expand[]", "source")]) == Refusal(
        "This property cannot be expanded (source).", "expand[0]"
    )
    assert stripe_documented.unexpandable("balance_transaction", True, "data") == "data"


def test_the_clients_paths_are_documented_on_their_one_type_fields() -> None:
    # latest_charge holds only a charge, in the pinned version (not in the 2020 description's)
    intent = "/v1/payment_intents/{intent}"
    both = [("expand[]", "latest_charge"), ("expand[]", "latest_charge.balance_transaction")]
    assert stripe_documented.refusal(intent, both) is None
    assert stripe_documented.refusal(intent, [("expand[]", "charges")]) is not None
    refunds = [("expand[]", "data.balance_transaction"), ("expand[]", "data.charge")]
    assert stripe_documented.refusal("/v1/refunds", refunds) is None
    assert (
        stripe_documented.refusal("/v1/disputes", [("expand[]", "data.charge.balance_transaction")]) is None
    )
    # Stripe's own deepest example, four levels; a fifth is refused whatever the types say
    deepest = [("expand[]", "data.invoice.subscription.default_source")]
    assert stripe_documented.refusal("/v1/charges", deepest) is None
    too_deep = [("expand[]", "data.refunds.x.y.z")]
    refused = stripe_documented.refusal("/v1/charges", too_deep)
    assert refused is not None and refused.message.startswith("You cannot expand more than 4 levels")


def test_a_nested_path_every_type_of_a_polymorphic_field_has_is_accepted() -> None:
    # Stripe's description holds no such path among the served objects; the rule on a table that does
    table = {
        "movement": {"source": ["payment", "return"]},
        "payment": {"booking": ["booking"], "card": []},
        "return": {"booking": ["booking"]},
        "booking": {"guest": ["guest"]},
        "guest": {},
    }
    assert stripe_documented.unexpandable("movement", True, "data.source.booking.guest", table) is None
    assert stripe_documented.unexpandable("movement", True, "data.source.card", table) == "card"
    # an always-inline field (no expansion resources) has nothing under it
    assert stripe_documented.unexpandable("payment", False, "card.number", table) == "number"


def test_parameters_are_published_names_as_spelled_on_the_wire() -> None:
    charges = stripe_documented.parameters("/v1/charges")
    assert {"created", "created[gte]", "created[lt]", "expand[]", "limit", "starting_after"} <= charges
    assert "created_after" not in charges
    assert (
        stripe_documented.refusal("/v1/charges", [("created[gte]", "1"), ("expand[3]", "data.customer")])
        is None
    )
    assert stripe_documented.refusal("/v1/charges", [("created_after", "1")]) == Refusal(
        "Received unknown parameter: created_after", "created_after", "parameter_unknown"
    )
    with pytest.raises(ValueError, match="no documented Stripe GET endpoint is '/v1/customers'"):
        stripe_documented.endpoint_of("/v1/customers")
    assert stripe_documented.endpoint_of("/v1/charges/ch_1") == "/v1/charges/{charge}"


def test_razorpay_and_adyen_tables() -> None:
    payments = [("from", "1"), ("to", "2"), ("count", "100"), ("skip", "0"), ("expand[]", "card")]
    assert razorpay_documented.refusal("/v1/payments", payments) is None
    refused = razorpay_documented.refusal("/v1/payments/{id}", [("expand[]", "card"), ("expand[]", "notes")])
    assert refused is not None and refused.param == "expand.1"
    assert refused.message.startswith("Value of each expand must be one of following types: card, emi")
    assert razorpay_documented.refusal("/v1/refunds", [("expand[]", "card")]) == Refusal(
        "expand[] is/are not required and should not be sent", "expand[]"
    )
    report = adyen_documented.REPORT_DOWNLOAD
    assert adyen_documented.refusal(report, []) is None
    assert adyen_documented.refusal(report, [("batch", "2")]) is not None


# --- the simulators refuse by the rule, in each provider's words -----------------------------------------


@dataclasses.dataclass
class Served:
    """A demo world served on loopback behind a ``Recording``."""

    flavour: str
    world: World
    recording: Recording
    base_url: str


@pytest.fixture(name="serve")
def serve_fixture() -> Iterator[Callable[[str], Served]]:
    """``serve(flavour)``: the demo world of ``flavour`` served on loopback behind a ``Recording``."""
    with ExitStack() as stack:

        def serve(flavour: str) -> Served:
            properties = demo_properties(flavour)
            nights = {p.property_id: NIGHT for p in properties}
            world = build_world(nights, 6, properties=properties, flavour=flavour)
            recording = Recording(build_app(flavour_of(flavour).served(world.store), flavour=flavour))
            server = stack.enter_context(ServerThread(recording))
            return Served(flavour, world, recording, server.base_url)

        yield serve


def test_the_simulators_refuse_an_undocumented_expansion_in_the_providers_shape(serve: Any) -> None:
    stripe_url = serve("stripe").base_url
    expand: list[tuple[str, str | int | float | bool | None]] = [
        ("expand[]", "data.source"),
        ("expand[]", "data.source.charge"),
    ]
    refused = httpx.get(f"{stripe_url}/v1/balance_transactions", params=expand, headers=PINNED, timeout=5)
    assert refused.status_code == 400
    assert refused.json() == {
        "error": {
            "type": "invalid_request_error",
            "message": "This property cannot be expanded (charge).",
            "param": "expand[1]",
        }
    }
    documented = httpx.get(
        f"{stripe_url}/v1/balance_transactions", params=expand[:1], headers=PINNED, timeout=5
    )
    assert documented.status_code == 200 and documented.json()["data"]

    razorpay_url = serve("razorpay").base_url
    refused = httpx.get(f"{razorpay_url}/v1/payments", params={"expand[]": "customer"}, timeout=5)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "BAD_REQUEST_ERROR"
    assert refused.json()["error"]["field"] == "expand.0"
    assert httpx.get(f"{razorpay_url}/v1/payments", params={"expand[]": "card"}, timeout=5).status_code == 200

    adyen_url = serve("adyen").base_url
    path = "/reports/download/MerchantAccount/HotelsECOM/settlement_detail_report_batch_1.csv"
    refused = httpx.get(f"{adyen_url}{path}", params={"format": "csv"}, timeout=5)
    assert (refused.status_code, refused.text) == (400, "HTTP Status 400 - Unknown parameter format")


# --- every request the clients send ------------------------------------------------------------------------


def walk(served: Served) -> list[Recorded]:
    """Drive every method of the client over the served demo world (each property's night pull, lookups by
    id of every kind of record, payment states, holds, events, payouts and their transactions) and return
    what the server received."""
    store = served.world.store
    with ProviderHttp(served.base_url, retry=FAST_RETRY, max_rps=math.inf) as http:
        adapter = flavour_of(served.flavour).adapter(http)
        for prop in demo_properties(served.flavour):
            scope = prop.provider_account
            account = PropertyAccount(prop.property_id, scope)
            window = night_window(NIGHT, prop.timezone, prop.night_cutoff)
            adapter.pull_claimed(account, window.start, window.end)
            charges = [c for c in store.charges if c.get("account") == scope]
            intents = sorted({str(c["payment_intent"]) for c in charges if c.get("payment_intent")})
            disputes = [d for d in store.disputes if d.get("account") == scope]
            movements = [t["id"] for d in disputes for t in d.get("balance_transactions", [])]
            refunds = [r["id"] for r in store.refunds if r.get("account") == scope]
            payments = [c["id"] for c in charges]
            unknown = UNKNOWN_IDS.get(served.flavour, [])  # kinds the demo world lacks, looked up anyway
            for ids in (payments, refunds, intents, [d["id"] for d in disputes], movements, unknown):
                _tolerating_other_ids(adapter.fetch_records_by_id, account, ids[:6])
            for payment_id in (*payments[:3], *intents[:3]):
                _tolerating_other_ids(adapter.payment_state, scope, payment_id)
            adapter.authorization_holds(account, [*payments[:3], *intents[:3]])
            adapter.events_since(scope, int(window.start.timestamp()) - 2 * 86_400)
            arrival = datetime.combine(NIGHT - timedelta(days=10), datetime.min.time(), UTC)
            for payout in adapter.payouts_arriving(scope, arrival, arrival + timedelta(days=20)):
                adapter.payout_transactions(payout)
    return served.recording.requests


def _tolerating_other_ids(lookup: Callable[..., Any], *args: Any) -> None:
    """``lookup(*args)``, where a ValueError says the ids are of a kind this provider does not look up."""
    try:
        lookup(*args)
    except ValueError as error:
        assert "not" in str(error), error


# Ids of kinds a provider's demo world has none of (Razorpay's: orders, disputes), looked up all the same.
UNKNOWN_IDS = {"razorpay": ["order_NotInTheWorld", "disp_NotInTheWorld"]}
# The endpoints each client reaches in the walk: a method that stops being driven shows here.
WALKED = {
    "razorpay": {
        "/v1/payments",
        "/v1/payments/{id}",
        "/v1/refunds",
        "/v1/refunds/{id}",
        "/v1/orders/{id}/payments",
        "/v1/disputes/{id}",
        "/v1/settlements",
        "/v1/settlements/recon/combined",
    },
    "adyen": {adyen_documented.REPORT_DOWNLOAD},
    "stripe": {
        "/v1/charges",
        "/v1/charges/{charge}",
        "/v1/refunds",
        "/v1/payment_intents/{intent}",
        "/v1/events",
        "/v1/disputes",
        "/v1/disputes/{dispute}",
        "/v1/payouts",
        "/v1/balance_transactions",
        "/v1/balance_transactions/{id}",
    },
}


@pytest.mark.parametrize("flavour", PROVIDER_NAMES)
def test_every_request_a_client_sends_is_one_its_provider_documents(flavour: str, serve: Any) -> None:
    recorded = walk(serve(flavour))
    assert recorded
    refused = [(path, query, why) for path, query in recorded if (why := judged(flavour, path, query))]
    assert refused == []
    walked = endpoints_of(flavour, recorded)
    print(f"{flavour}: {len(recorded)} requests to {sorted(walked)}")
    assert WALKED[flavour] <= walked


# --- acceptance: a night of 50 connected accounts through the strict simulator -----------------------------

FLEET_SIZE = 50


@pytest.mark.slow
def test_a_night_of_fifty_connected_accounts_sends_only_documented_requests(sqlite_url: str) -> None:
    """One ``provider_account`` per property, eight timezones, every category planted, reconciled through
    Dagster: every request the Stripe client sent is documented, every property-night succeeded, and the
    findings are what was planted. (On a client expanding ``data.source.charge`` every property-night
    fails: the simulator refuses that request as Stripe does.)"""
    fleet = fleet_properties(FLEET_SIZE, platform_share=0)
    assert len({p.provider_account for p in fleet}) == FLEET_SIZE and None not in {
        p.provider_account for p in fleet
    }
    world = fleet_world(fleet, NIGHT)
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    seed_world(engine, world)
    seed_thresholds(engine, fleet_thresholds(fleet), datetime.now(UTC))
    recording = Recording(build_app(world.store))
    with ServerThread(recording) as simulator, dg.instance_for_test() as instance:
        resources = {
            "recon_db": ReconDatabase(database_url=sqlite_url),
            "provider": ProviderResource(
                provider="simulator", flavour="stripe", base_url=simulator.base_url, max_concurrency=4
            ),
        }
        result = dg.materialize(
            reconciliation_assets,
            partition_key=NIGHT.isoformat(),
            instance=instance,
            resources=resources,
            run_config=batch_run_config([p.property_id for p in fleet]),
            raise_on_error=False,
        )
    refused = [
        (path, query, why) for path, query in recording.requests if (why := judged("stripe", path, query))
    ]
    assert refused == [], refused[:3]
    with engine.connect() as connection:
        outcomes: dict[str, int] = dict(
            connection.execute(
                select(night_reconciliations.c.status, func.count()).group_by(night_reconciliations.c.status)
            ).all()
        )
        found: dict[str, int] = dict(
            connection.execute(
                select(discrepancies.c.property_id, func.count()).group_by(discrepancies.c.property_id)
            ).all()
        )
    engine.dispose()
    assert outcomes == {"succeeded": FLEET_SIZE}
    assert result.success
    planted: dict[str, int] = {}
    for (property_id, _night, _category), n in world.expected.items():
        planted[property_id] = planted.get(property_id, 0) + n
    assert found == planted and sum(planted.values()) > FLEET_SIZE
    per_night = len(recording.requests) / FLEET_SIZE
    by_endpoint = Counter(stripe_documented.endpoint_of(path) for path, _ in recording.requests)
    print(f"{len(recording.requests)} requests, {per_night:.2f} per property-night: {dict(by_endpoint)}")
    # three lists and one of the disputes (whose charges are earlier nights'), as many lookups by id as the
    # client sent before (holds and payment states): 10 a property-night expanding data.source.charge
    assert by_endpoint["/v1/disputes"] == FLEET_SIZE and per_night <= 10 * 1.1
