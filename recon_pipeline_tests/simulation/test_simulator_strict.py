"""The simulators are as strict as the providers: the account's default API version when none is pinned,
400 for a parameter an endpoint does not take (in each provider's error shape), every response valid
against Stripe's published OpenAPI description (``data/stripe_openapi_subset.json``), and the real
stripe and razorpay SDKs reading them over loopback."""

from __future__ import annotations

import contextlib
import json
import math
import re
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import razorpay
import stripe
from openapi_schema_validator import OAS30Validator
from starlette.requests import Request
from starlette.routing import Route

from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.stripe.api_version import API_VERSION, VERSION_HEADER
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline.simulation.host.cards import card_of
from recon_pipeline.simulation.host.money import DISPUTE_FEE_MINOR, convert, dispute, settle_refund
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.host.wire import Accepts, array_param
from recon_pipeline.simulation.stripe import rendering
from recon_pipeline.simulation.stripe.api import balance_transaction_object, payout_object
from recon_pipeline_tests.support.pipeline_fixtures import seeded
from recon_pipeline_tests.support.provider_fixtures import (
    DAY,
    FAST_RETRY,
    T0,
    RunningSimulator,
    StartSimulator,
    make_charge,
    make_payment_intent,
    make_refund,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)
from recon_pipeline_tests.support.stripe_openapi_subset import SUBSET_PATH

PINNED = {VERSION_HEADER: API_VERSION}
NIGHT_START, NIGHT_END = T0 + DAY, T0 + 2 * DAY
# How a published parameter is spelled on the wire: deep objects and arrays take brackets.
_WIRE_NAMES = {
    "created": ["created", "created[gte]", "created[gt]", "created[lte]", "created[lt]"],
    "expand": ["expand[]", "expand[0]"],
    "types": ["types[]"],
}


def _world() -> SimulatorStore:
    """A night of the platform and a connected account: succeeded (with fee), refunded, uncaptured, failed
    and pending charges, a refund of an earlier night's charge, a charge presented in USD and settled in EUR
    (and its refund), a dispute lost tonight and one won tonight, an automatic payout with its balance
    transactions and a manual one, PaymentIntents and events."""
    earlier = make_charge("ch_earlier", T0 + 100, booking_id="bk_e")
    paid = make_charge("ch_paid", NIGHT_START + 10)
    held = make_charge("ch_held", NIGHT_START + 20, captured=False)
    failed = make_charge("ch_failed", NIGHT_START + 30, status="failed", fee=None)
    pending = make_charge("ch_pending", NIGHT_START + 40, status="pending", fee=None)
    connected = make_charge("ch_conn", NIGHT_START + 50, account="acct_1Conn", property_id="prop_b")
    usd = convert(make_charge("ch_usd", NIGHT_START + 80, currency="usd"), "eur", 0.92)
    charges = [earlier, paid, held, failed, pending, connected, usd]
    refunds = [
        make_refund("re_paid", paid, NIGHT_START + 60, 2_500),
        make_refund("re_earlier", earlier, NIGHT_START + 70, 10_000),
        settle_refund(make_refund("re_usd", usd, NIGHT_START + 90, 2_000), usd),
    ]
    paid["amount_refunded"] = 2_500
    earlier.update(amount_refunded=10_000, refunded=True)
    usd["amount_refunded"] = 2_000
    event = {
        "id": "evt_paid",
        "object": "event",
        "type": "payment_intent.succeeded",
        "created": NIGHT_START + 11,
        "data": {"object": {"id": "pi_paid", "object": "payment_intent"}},
        "account": None,
    }
    disputes = [
        dispute("du_lost", paid, NIGHT_START + 100),
        dispute("du_won", earlier, T0 + 200, won_at=NIGHT_START + 110, returned_fee=DISPUTE_FEE_MINOR),
    ]
    arrival = NIGHT_END + 2 * DAY
    payouts = [
        payout_object("po_auto", 9_700, "eur", arrival, NIGHT_END, None),
        payout_object("po_manual", 5_000, "eur", arrival, NIGHT_END, None, automatic=False),
    ]
    carried = [  # the paid charge's balance transaction (served as stored) and the payout's withdrawal
        balance_transaction_object("txn_paid", "po_auto", "ch_paid", "charge", 10_000, 300, "eur", 0, None),
        balance_transaction_object("txn_po_auto", "po_auto", "po_auto", "payout", -9_700, 0, "eur", 0, None),
    ]
    carried[0]["created"], carried[1]["created"] = paid["created"], NIGHT_END
    return SimulatorStore(
        charges=charges,
        refunds=refunds,
        payment_intents=[make_payment_intent(c) for c in charges],
        events=[event],
        disputes=disputes,
        payouts=payouts,
        balance_transactions=carried,
    )


@pytest.fixture(scope="module", name="subset")
def subset_fixture() -> dict[str, Any]:
    return dict(json.loads(SUBSET_PATH.read_text(encoding="utf-8")))


def _adapter(sim: RunningSimulator) -> contextlib.AbstractContextManager[ProviderHttp]:
    return ProviderHttp(sim.base_url, retry=FAST_RETRY, max_rps=math.inf)


def _stripe_routes() -> list[str]:
    """The paths of the Stripe flavour's API routes."""
    routes = build_app(SimulatorStore()).routes
    return [r.path for r in routes if isinstance(r, Route) and r.path.startswith("/v1/")]


def _assert_pinned_and_published(log: list[dict[str, Any]], subset: dict[str, Any]) -> None:
    """Every logged request pins the client's version and sends only parameters Stripe publishes for its
    endpoint."""
    routes = _stripe_routes()
    for request in log:
        assert request["version"] == API_VERSION, request
        route = next(r for r in routes if re.fullmatch(re.sub(r"\{[a-z_]+\}", "[^/]+", r), request["path"]))
        published = subset["paths"][_spec_path(subset, route)]["get"]["parameters"]
        wire = {w for p in published for w in _WIRE_NAMES.get(p["name"], [p["name"]])}
        assert set(request["params"]) <= wire, request


def _spec_path(subset: dict[str, Any], route: str) -> str:
    """The published path of a simulator route (``/v1/charges/{object_id}`` is ``/v1/charges/{charge}``)."""
    pattern = re.escape(route).replace(re.escape("{object_id}"), r"\{[a-z_]+\}")
    matches = [path for path in subset["paths"] if re.fullmatch(pattern, path)]
    if len(matches) != 1:
        pytest.fail(f"route {route} is not in {SUBSET_PATH.name}: add it to SERVED_PATHS and regenerate")
    return matches[0]


def _nullable_alternatives(node: Any) -> Any:
    """Stripe's nullable fields as the validator reads them: ``{"anyOf": [...], "nullable": true}`` (an
    expandable field that may be null) gets null as one more alternative, since openapi-schema-validator
    honours ``nullable`` only next to a ``type``, and a nullable ``enum`` gets null among its values (OAS
    3.0.3 asks for it to be listed; Stripe's description does not list it)."""
    if isinstance(node, list):
        return [_nullable_alternatives(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _nullable_alternatives(value) for key, value in node.items()}
    if out.get("nullable") is not True:
        return out
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    if "type" not in out:
        for combinator in ("anyOf", "oneOf"):
            if combinator in out:
                out[combinator] = [*out[combinator], {"enum": [None]}]
    return out


def _validate(subset: dict[str, Any], spec_path: str, response: httpx.Response) -> None:
    """The body against the published schema of its status (200, else the error response)."""
    responses = subset["paths"][spec_path]["get"]["responses"]
    declared = responses["200" if response.status_code == 200 else "default"]
    schema = _nullable_alternatives(
        {**declared["content"]["application/json"]["schema"], "components": subset["components"]}
    )
    errors = sorted(OAS30Validator(schema).iter_errors(response.json()), key=lambda e: list(e.absolute_path))
    assert not errors, f"{response.request.url}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors[:5]
    )


# --- the API version ---------------------------------------------------------------------------------


def test_unpinned_requests_get_the_account_default_shape_and_the_client_never_does(
    simulator: StartSimulator,
) -> None:
    sim = simulator(_world())
    old = sim.client.get("/v1/payment_intents/pi_paid").json()
    assert "latest_charge" not in old
    assert [c["id"] for c in old["charges"]["data"]] == ["ch_paid"]
    assert [r["id"] for r in old["charges"]["data"][0]["refunds"]["data"]] == ["re_paid"]
    assert "refunds" in sim.client.get("/v1/charges/ch_paid").json()

    pinned = sim.client.get("/v1/payment_intents/pi_paid", headers=PINNED).json()
    assert pinned["latest_charge"] == "ch_paid" and "charges" not in pinned
    assert "refunds" not in sim.client.get("/v1/charges/ch_paid", headers=PINNED).json()

    refused = sim.client.get("/v1/charges", headers={VERSION_HEADER: "last-tuesday"})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "Invalid Stripe API version: last-tuesday"

    with _adapter(sim) as http:
        adapter = StripeAdapter(http)
        intent = adapter.fetch_payment_intent(PropertyAccount("prop_a"), "pi_paid")
        assert intent is not None and "charges" not in intent
        assert intent["latest_charge"]["id"] == "ch_paid"  # expanded: one request for the intent and charge
        assert isinstance(intent["latest_charge"]["balance_transaction"], dict)
        state = adapter.payment_state(None, "pi_paid")
        assert state is not None and state.status == "partially_refunded"
    versions = {r["version"] for r in sim.client.get("/_simulator/requests").json()["requests"]}
    assert versions == {None, "last-tuesday", API_VERSION}  # the client's requests all pinned
    assert rendering.ACCOUNT_DEFAULT_VERSION < API_VERSION


def test_a_nights_pull_pins_the_version_and_sends_only_published_parameters(
    simulator: StartSimulator, subset: dict[str, Any]
) -> None:
    """The request log of a whole night (both accounts' pulls, a lookup by id, the payment state, the
    events recovery): every request pins the version and sends only parameters Stripe publishes for
    its endpoint, and none is refused."""
    sim = simulator(_world())
    start, end = (datetime.fromtimestamp(t, UTC) for t in (NIGHT_START, NIGHT_END))
    with _adapter(sim) as http:
        adapter = StripeAdapter(http)
        platform = adapter.pull_night(PropertyAccount("prop_a"), start, end)
        connected = adapter.pull_night(PropertyAccount("prop_b", "acct_1Conn"), start, end)
        by_id = adapter.fetch_records_by_id(
            PropertyAccount("prop_a"), ["pi_paid", "re_earlier", "ch_missing", "du_lost", "txn_wonr"]
        )
        adapter.payment_state(None, "pi_held")
        adapter.events_since(None, NIGHT_START)
    assert {"re_earlier", "ch_paid", "du_lost", "du_won", "re_usd"} <= set(platform["provider_record_id"])
    assert {"ch_paid", "re_earlier", "du_lost", "txn_wonr"} <= set(by_id["provider_record_id"])
    assert set(connected["provider_record_id"]) >= {"ch_conn"}
    log = sim.client.get("/_simulator/requests").json()["requests"]
    assert len(log) >= 8
    _assert_pinned_and_published(log, subset)
    assert set(sim.stats()["responses_by_status"]) <= {"200", "404"}


def test_a_reconciled_night_of_the_demo_world_pins_every_request(
    sqlite_url: str, subset: dict[str, Any]
) -> None:
    """The same of every request of a Dagster run reconciling the Stripe demo world's night (every
    property, planted discrepancies included)."""
    with seeded(sqlite_url) as pipeline:
        assert pipeline.materialize().success
        base_url = pipeline.simulator.base_url
        log = httpx.get(f"{base_url}/_simulator/requests", timeout=10).json()["requests"]
        statuses = httpx.get(f"{base_url}/_simulator/stats", timeout=10).json()["responses_by_status"]
    assert {r["path"] for r in log} >= {"/v1/charges", "/v1/refunds"}
    _assert_pinned_and_published(log, subset)
    assert set(statuses) <= {"200", "404"}


# --- parameters ---------------------------------------------------------------------------------------


def test_every_stripe_route_takes_exactly_its_published_parameters(
    simulator: StartSimulator, subset: dict[str, Any]
) -> None:
    sim = simulator(_world())
    routes = _stripe_routes()
    assert len(routes) >= 6
    for route in routes:
        spec_path = _spec_path(subset, route)
        path = route.replace("{object_id}", "ch_paid" if route.startswith("/v1/charges") else "x")
        for published in subset["paths"][spec_path]["get"]["parameters"]:
            for name in _WIRE_NAMES.get(published["name"], [published["name"]]):
                response = sim.client.get(path, params={name: "1"}, headers=PINNED)
                code = response.json().get("error", {}).get("code")
                assert code != "parameter_unknown", f"{route} refuses the published {name}"
        refused = sim.client.get(path, params={"created_after": "1"}, headers=PINNED)
        assert refused.status_code == 400, route
        assert refused.json() == {
            "error": {
                "type": "invalid_request_error",
                "message": "Received unknown parameter: created_after",
                "param": "created_after",
                "code": "parameter_unknown",
            }
        }


@pytest.mark.parametrize(
    ("limit", "message", "code"),
    [
        ("0", "This value must be greater than or equal to 1.", "parameter_invalid_integer"),
        ("101", "This value must be less than or equal to 100.", "parameter_invalid_integer"),
        ("ten", "Invalid integer: ten", "parameter_invalid_integer"),
    ],
)
def test_limit_outside_1_to_100_is_stripes_400(
    simulator: StartSimulator, limit: str, message: str, code: str
) -> None:
    sim = simulator(_world())
    response = sim.client.get("/v1/charges", params={"limit": limit}, headers=PINNED)
    assert response.status_code == 400
    assert response.json()["error"] == {
        "type": "invalid_request_error",
        "message": message,
        "param": "limit",
        "code": code,
    }
    assert sim.client.get("/v1/charges", params={"limit": "100"}, headers=PINNED).status_code == 200


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/payments", {"from": "1", "to": "2", "count": "5", "skip": "0", "expand[]": "card"}),
        ("/v1/payments/pay_1", {"expand[]": "card"}),
        ("/v1/refunds", {"from": "1", "count": "5"}),
        ("/v1/settlements/recon/combined", {"year": "2026", "month": "1", "day": "2", "count": "5"}),
    ],
)
def test_razorpay_refuses_what_its_endpoints_do_not_take(
    simulator: StartSimulator, path: str, params: dict[str, str]
) -> None:
    charge = make_charge("pay_1", T0 + 5, currency="inr")
    sim = simulator(SimulatorStore(charges=[charge]), flavour="razorpay")
    assert sim.client.get(path, params=params).status_code == 200
    refused = sim.client.get(path, params={**params, "limit": "5"})
    assert refused.status_code == 400
    assert refused.json() == {
        "error": {
            "code": "BAD_REQUEST_ERROR",
            "description": "limit is/are not required and should not be sent",
            "source": "NA",
            "step": "NA",
            "reason": "NA",
            "metadata": {},
            "field": "limit",
        }
    }


# --- published schema and the SDKs ---------------------------------------------------------------------


def test_every_stripe_response_is_valid_against_the_published_description(
    simulator: StartSimulator, subset: dict[str, Any]
) -> None:
    sim = simulator(_world())
    assert subset["info"]["version"] == API_VERSION
    expand = {"expand[]": "data.balance_transaction"}
    requests: list[tuple[str, str, dict[str, str | list[str]], dict[str, str]]] = [
        ("/v1/charges", "/v1/charges", {"limit": "100"}, PINNED),
        ("/v1/charges", "/v1/charges", {"limit": "100", **expand}, PINNED),
        ("/v1/charges", "/v1/charges", {}, {**PINNED, "Stripe-Account": "acct_1Conn"}),
        ("/v1/charges", "/v1/charges", {"limit": "0"}, PINNED),
        ("/v1/charges", "/v1/charges", {"starting_after": "ch_nope"}, PINNED),
        ("/v1/refunds", "/v1/refunds", {"charge": "ch_paid"}, PINNED),
        ("/v1/refunds", "/v1/refunds", {"limit": "100"}, PINNED),
        ("/v1/events", "/v1/events", {"type": "payment_intent.succeeded"}, PINNED),
        ("/v1/events", "/v1/events", {"bogus": "1"}, PINNED),
    ]
    for charge in ("ch_paid", "ch_held", "ch_failed", "ch_pending", "ch_earlier", "ch_unknown"):
        requests.append(("/v1/charges/{charge}", f"/v1/charges/{charge}", {}, PINNED))
        requests.append(
            ("/v1/charges/{charge}", f"/v1/charges/{charge}", {"expand[]": "balance_transaction"}, PINNED)
        )
        intent = f"pi_{charge[3:]}"
        requests.append(("/v1/payment_intents/{intent}", f"/v1/payment_intents/{intent}", {}, PINNED))
    for refund in ("re_paid", "re_earlier", "re_usd", "re_unknown"):
        requests.append(("/v1/refunds/{refund}", f"/v1/refunds/{refund}", {}, PINNED))
        requests.append(
            ("/v1/refunds/{refund}", f"/v1/refunds/{refund}", {"expand[]": "balance_transaction"}, PINNED)
        )
    with_charge = {"expand[]": ["data.balance_transaction", "data.charge", "data.charge.balance_transaction"]}
    sources = {"expand[]": "data.source"}
    transaction = "/v1/balance_transactions/{id}"
    sources_of_one = {"expand[]": ["source", "source.charge"]}  # refused: a source may be a charge
    requests += [
        ("/v1/refunds", "/v1/refunds", {"limit": "100", **with_charge}, PINNED),
        ("/v1/disputes", "/v1/disputes", {}, PINNED),
        ("/v1/disputes", "/v1/disputes", {"charge": "ch_paid", "expand[]": "data.charge"}, PINNED),
        ("/v1/disputes/{dispute}", "/v1/disputes/du_won", {"expand[]": "charge"}, PINNED),
        ("/v1/disputes/{dispute}", "/v1/disputes/du_unknown", {}, PINNED),
        ("/v1/balance_transactions", "/v1/balance_transactions", {"limit": "100"}, PINNED),
        ("/v1/balance_transactions", "/v1/balance_transactions", {"type": "adjustment", **sources}, PINNED),
        ("/v1/balance_transactions", "/v1/balance_transactions", {"source": "re_usd", **sources}, PINNED),
        ("/v1/balance_transactions", "/v1/balance_transactions", {"payout": "po_auto", **sources}, PINNED),
        ("/v1/balance_transactions", "/v1/balance_transactions", {"payout": "po_manual"}, PINNED),
        (transaction, "/v1/balance_transactions/txn_lostw", sources_of_one, PINNED),
        (transaction, "/v1/balance_transactions/txn_paid", {"expand[]": "source"}, PINNED),
        (transaction, "/v1/balance_transactions/txn_usd", {}, PINNED),
        (transaction, "/v1/balance_transactions/txn_nope", {}, PINNED),
        ("/v1/payouts", "/v1/payouts", {"arrival_date[gte]": str(NIGHT_END)}, PINNED),
    ]
    statuses = set()
    for spec_path, path, params, headers in requests:
        response = sim.client.get(path, params=params, headers=headers)
        statuses.add(response.status_code)
        _validate(subset, spec_path, response)
    assert statuses == {200, 400, 404}


def test_the_stripe_sdk_reads_the_simulator(simulator: StartSimulator) -> None:
    sim = simulator(_world(), api_key="sk_test_sdk")
    client = stripe.StripeClient(
        "sk_test_sdk",
        base_addresses={"api": sim.base_url},
        stripe_version=API_VERSION,
        max_network_retries=0,
    )
    charges = client.v1.charges.list(
        params={"limit": 100, "created": {"gte": NIGHT_START}, "expand": ["data.balance_transaction"]}
    )
    assert [c.id for c in charges.data] == ["ch_usd", "ch_pending", "ch_failed", "ch_held", "ch_paid"]
    paid = charges.data[-1]
    assert isinstance(paid, stripe.Charge) and isinstance(paid.balance_transaction, stripe.BalanceTransaction)
    assert paid.balance_transaction.fee_details[0].type == "stripe_fee"
    assert paid.balance_transaction.reporting_category == "charge"
    assert paid.outcome is not None and paid.outcome.type == "authorized" and paid.livemode is False
    assert paid.billing_details.address is not None and paid.disputed is False
    card, simulated = paid.payment_method_details.card, card_of(_world().get("charges", "ch_paid") or {})
    assert (card.brand, card.last4, card.authorization_code) == (
        simulated.brand,
        simulated.last4,
        simulated.approval_code,
    )
    intent = client.v1.payment_intents.retrieve("pi_held")
    assert intent.latest_charge == "ch_held" and intent.capture_method == "manual"
    refund = client.v1.refunds.retrieve("re_earlier")
    assert isinstance(refund, stripe.Refund) and refund.charge == "ch_earlier"
    events = client.v1.events.list(params={"type": "payment_intent.succeeded"})
    assert [e.id for e in events.data] == ["evt_paid"] and events.data[0].pending_webhooks == 0
    with pytest.raises(stripe.InvalidRequestError) as refused:
        client.v1.charges.list(params={"limit": 101})
    assert refused.value.param == "limit" and refused.value.code == "parameter_invalid_integer"
    won = client.v1.disputes.retrieve("du_won", params={"expand": ["charge"]})
    assert isinstance(won, stripe.Dispute) and isinstance(won.charge, stripe.Charge) and won.status == "won"
    assert [t.reporting_category for t in won.balance_transactions] == ["dispute", "dispute_reversal"]
    movements = client.v1.balance_transactions.list(params={"type": "adjustment", "expand": ["data.source"]})
    assert [t.id for t in movements.data] == ["txn_wonr", "txn_lostw", "txn_wonw"]
    reinstated = movements.data[0].source
    assert isinstance(reinstated, stripe.Dispute) and reinstated.charge == "ch_earlier"
    with pytest.raises(stripe.InvalidRequestError) as undocumented:
        client.v1.balance_transactions.list(params={"expand": ["data.source", "data.source.charge"]})
    assert str(undocumented.value.user_message) == "This property cannot be expanded (charge)."
    assert undocumented.value.param == "expand[1]" and undocumented.value.http_status == 400
    carried = client.v1.balance_transactions.list(params={"payout": "po_auto"})
    assert [(t.id, t.type) for t in carried.data] == [("txn_po_auto", "payout"), ("txn_paid", "charge")]
    converted = client.v1.refunds.retrieve("re_usd", params={"expand": ["balance_transaction"]})
    assert isinstance(converted.balance_transaction, stripe.BalanceTransaction)
    assert (converted.balance_transaction.amount, converted.balance_transaction.currency) == (-1_840, "eur")
    with pytest.raises(stripe.InvalidRequestError, match="automatic transfers, not manual"):
        client.v1.balance_transactions.list(params={"payout": "po_manual"})


def test_the_razorpay_sdk_reads_the_simulator(simulator: StartSimulator) -> None:
    paid = make_charge("pay_paid0000000001", T0 + 5, currency="inr")
    failed = make_charge("pay_fail0000000001", T0 + 6, currency="inr", status="failed", fee=None)
    refund = make_refund("rfnd_paid000000001", paid, T0 + 7, 1_000)
    sim = simulator(
        SimulatorStore(charges=[paid, failed], refunds=[refund]), "rzp_test_key:secret", "razorpay"
    )
    client = razorpay.Client(auth=("rzp_test_key", "secret"), base_url=sim.base_url)
    payments = client.payment.all({"from": T0, "to": T0 + 10, "count": 10})
    assert [p["id"] for p in payments["items"]] == ["pay_fail0000000001", "pay_paid0000000001"]
    failed_payment = payments["items"][0]
    assert failed_payment["error_source"] == "bank" and failed_payment["vpa"] is None
    fetched = client.payment.fetch("pay_paid0000000001")
    assert fetched["fee"] == 300 and fetched["tax"] == 46 and fetched["acquirer_data"]["auth_code"]
    assert "card" not in fetched  # only when expanded, as Razorpay documents
    with_cards = client.payment.all({"from": T0, "to": T0 + 10, "count": 10, "expand[]": "card"})
    card = with_cards["items"][1]["card"]
    assert (card["entity"], card["last4"]) == ("card", card_of(paid).last4)
    assert card["network"] in ("Visa", "MasterCard", "American Express")
    assert client.refund.fetch("rfnd_paid000000001")["payment_id"] == "pay_paid0000000001"
    with pytest.raises(razorpay.errors.BadRequestError, match="limit is/are not required"):
        client.payment.all({"limit": 5})


def test_a_served_card_has_only_properties_stripe_documents(subset: dict[str, Any]) -> None:
    """The schema does not forbid extra properties, so the served card is held to the documented ones:
    the issuer's ``authorization_code`` among them (``stripe_openapi_subset.apply_later_additions``)."""
    documented = subset["components"]["schemas"]["payment_method_details_card"]["properties"]
    assert documented["authorization_code"] == {"maxLength": 5000, "nullable": True, "type": "string"}
    for stored in _world().charges:
        served = rendering.charge(stored, API_VERSION, lambda _: [])["payment_method_details"]
        assert served["type"] == "card" and set(served["card"]) <= set(documented), stored["id"]


# --- pure parts -----------------------------------------------------------------------------------------


def test_stored_fields_win_over_the_always_present_defaults() -> None:
    """A world that stores more (a disputed charge, a dispute's balance transaction) is served as stored;
    the defaults only fill what the store leaves out."""
    stored = make_charge("ch_d", T0)
    stored.update(disputed=True, livemode=True)
    stored["balance_transaction"].update(type="adjustment", reporting_category="dispute", exchange_rate=1.1)
    rendered = rendering.charge(stored, API_VERSION, lambda _id: [], expand_balance_transaction=True)
    assert rendered["disputed"] is True and rendered["livemode"] is True and "account" not in rendered
    transaction = rendered["balance_transaction"]
    assert (transaction["type"], transaction["reporting_category"]) == ("adjustment", "dispute")
    assert transaction["exchange_rate"] == 1.1 and transaction["available_on"] == T0 + 2 * DAY
    assert transaction["fee_details"] == [
        {"amount": 300, "application": None, "currency": "eur", "description": "Stripe processing fees",
         "type": "stripe_fee"}
    ]  # fmt: skip
    unexpanded = rendering.charge(stored, API_VERSION, lambda _id: [])
    assert unexpanded["balance_transaction"] == "txn_d"
    assert stored["balance_transaction"]["type"] == "adjustment"  # the store is never changed


def test_declared_parameters_take_array_items_indexed_or_not() -> None:
    accepts = Accepts.of({"limit", "expand[]"})
    scope = {"type": "http", "query_string": b"limit=3&expand[0]=a&expand[]=b&expand[1]=c"}
    request = Request(scope)
    assert accepts.unknown(request) is None and array_param(request, "expand") == ["a", "b", "c"]
    assert accepts.unknown(Request({"type": "http", "query_string": b"expand[0]=a&limits=3"})) == "limits"
    assert accepts.unknown(Request({"type": "http", "query_string": b"expand=a"})) == "expand"
