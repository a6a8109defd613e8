"""The simulator's Stripe API: the store's objects served with Stripe's wire semantics (newest-first lists,
``created[...]`` filters, ``starting_after`` cursors, ``expand[]``, ``Stripe-Account``, Stripe-style error
JSON, 400 ``parameter_unknown`` for parameters an endpoint does not take, ``limit`` within 1..100), so the
client tested against it is the client that talks to Stripe.

Objects are rendered (``rendering.py``) with every field Stripe always sends, in the version the request
pins with ``Stripe-Version``, or without it in the account's default, an old version whose PaymentIntent
has no ``latest_charge``. Every route declares the query parameters its endpoint takes (``Accepts``, one
declaration per endpoint, enforced by the host's wrapper): a route added here, e.g. ``GET /v1/disputes``,
is ``Route("/v1/disputes", lister("disputes", {"charge", "payment_intent"}))`` with Stripe's parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from recon_pipeline.providers.simulator.store import Kind, SimulatorStore, StripeObject
from recon_pipeline.providers.simulator.wire import (
    Accepts,
    ApiHandler,
    ApiResult,
    ApiWrapper,
    Dialect,
    Endpoint,
    InvalidRequest,
    array_param,
    int_param,
)
from recon_pipeline.providers.stripe import rendering
from recon_pipeline.providers.stripe.api_version import VERSION_HEADER

MAX_LIMIT = 100

_OBJECT_NAMES: dict[Kind, str] = {
    "charges": "charge",
    "refunds": "refund",
    "payment_intents": "payment_intent",
    "events": "event",
    "payouts": "payout",
    "balance_transactions": "balance_transaction",
}


def stripe_error(message: str, error_type: str = "invalid_request_error", **extra: Any) -> dict[str, Any]:
    """Stripe's error envelope."""
    return {"error": {"type": error_type, "message": message, **extra}}


def render(store: SimulatorStore, kind: Kind, obj: StripeObject, version: str, expand: bool) -> StripeObject:
    """A store object as Stripe sends it in API ``version`` (``rendering``); ``expand``: a charge's
    ``balance_transaction`` expanded. A kind served here renders its always-present fields in
    ``rendering.py``."""

    def refunds_of(charge_id: str) -> list[StripeObject]:
        return _refunds_of_id(store, obj, charge_id)

    if kind == "charges":
        return rendering.charge(obj, version, refunds_of, expand)
    if kind == "refunds":
        return rendering.refund(obj)
    if kind == "payment_intents":
        return rendering.payment_intent(obj, version, _charge_of(store, obj), refunds_of)
    if kind == "events":
        return rendering.event(obj)
    if kind in ("payouts", "balance_transactions"):  # stored as Stripe renders them (``payout_object``)
        return rendering.public(obj)
    raise ValueError(f"no Stripe rendering of {kind}")


def _refunds_of_id(store: SimulatorStore, scope: StripeObject, charge_id: str) -> list[StripeObject]:
    """The refunds of a charge in the account of ``scope``, newest first (as Stripe embeds them)."""
    return store.view("refunds", scope.get("account"), "charge", charge_id).objects[::-1]


def _charge_of(store: SimulatorStore, scope: StripeObject) -> Callable[[str], list[StripeObject]]:
    def lookup(charge_id: str) -> list[StripeObject]:
        found = store.get("charges", charge_id)
        return [found] if found is not None and found.get("account") == scope.get("account") else []

    return lookup


def served_version(request: Request) -> str:
    """The API version the request pins (``Stripe-Version``), else the account's default; a malformed one
    is refused as Stripe refuses it."""
    version = request.headers.get(VERSION_HEADER)
    if version is None:
        return rendering.ACCOUNT_DEFAULT_VERSION
    if not rendering.valid_version(version):
        raise InvalidRequest(f"Invalid Stripe API version: {version}")
    return version


def _created_bounds(request: Request) -> tuple[int | None, int | None]:
    """``created[gte|gt|lte|lt]`` as a half-open [gte, lt) range, the tightest of those given."""
    lows = [v for v in (int_param(request, "created[gte]"),) if v is not None]
    gt = int_param(request, "created[gt]")
    if gt is not None:
        lows.append(gt + 1)
    highs = [v for v in (int_param(request, "created[lt]"),) if v is not None]
    lte = int_param(request, "created[lte]")
    if lte is not None:
        highs.append(lte + 1)
    return (max(lows) if lows else None), (min(highs) if highs else None)


def _list(
    store: SimulatorStore,
    kind: Kind,
    request: Request,
    account: str | None,
    filter_param: str | None = None,
) -> ApiResult:
    version = served_version(request)
    limit = _limit(request)
    gte, lt = _created_bounds(request)
    filter_value = request.query_params.get(filter_param) if filter_param else None
    view = store.view(kind, account, filter_param if filter_value is not None else None, filter_value)
    starting_after = request.query_params.get("starting_after")
    try:
        data, has_more = view.page(gte, lt, starting_after, limit)
    except KeyError:
        raise InvalidRequest(
            f"No such {_OBJECT_NAMES[kind]}: '{starting_after}'", param="starting_after"
        ) from None
    expand = array_param(request, "expand")
    return 200, {
        "object": "list",
        "data": [_list_item(store, kind, obj, version, expand) for obj in data],
        "has_more": has_more,
        "url": f"/v1/{kind}",
    }


def _list_item(
    store: SimulatorStore, kind: Kind, obj: StripeObject, version: str, expand: list[str]
) -> StripeObject:
    """A list's item as Stripe renders it under ``expand[]``: ``data.balance_transaction`` (a charge's),
    ``data.charge`` (a refund's charge in full, its own balance transaction under
    ``data.charge.balance_transaction``)."""
    out = render(store, kind, obj, version, "data.balance_transaction" in expand)
    if "data.charge" in expand and isinstance(out.get("charge"), str):
        charge = store.get("charges", out["charge"])
        if charge is not None:
            expanded = "data.charge.balance_transaction" in expand
            out["charge"] = render(store, "charges", charge, version, expanded)
    return out


def _retrieve(store: SimulatorStore, kind: Kind, request: Request, account: str | None) -> ApiResult:
    version = served_version(request)
    object_id = request.path_params["object_id"]
    obj = store.get(kind, object_id)
    if obj is None or obj.get("account") != account:
        message = f"No such {_OBJECT_NAMES[kind]}: '{object_id}'"
        return 404, stripe_error(message, code="resource_missing", param="id")
    expand = "balance_transaction" in array_param(request, "expand")
    return 200, render(store, kind, obj, version, expand)


def _list_payouts(store: SimulatorStore, request: Request, account: str | None) -> ApiResult:
    """``GET /v1/payouts`` filtered on ``arrival_date[gte|lt]`` (and ``created``), newest first."""
    version = served_version(request)
    limit = _limit(request)
    arrival_gte, arrival_lt = int_param(request, "arrival_date[gte]"), int_param(request, "arrival_date[lt]")
    gte, lt = _created_bounds(request)
    ordered = store.view("payouts", account).objects[::-1]
    selected = [
        payout
        for payout in ordered
        if (arrival_gte is None or payout["arrival_date"] >= arrival_gte)
        and (arrival_lt is None or payout["arrival_date"] < arrival_lt)
        and (gte is None or payout["created"] >= gte)
        and (lt is None or payout["created"] < lt)
    ]
    starting_after = request.query_params.get("starting_after")
    if starting_after is not None:
        ids = [payout["id"] for payout in selected]
        if starting_after not in ids:
            raise InvalidRequest(f"No such payout: '{starting_after}'", param="starting_after")
        selected = selected[ids.index(starting_after) + 1 :]
    page = [render(store, "payouts", payout, version, False) for payout in selected[:limit]]
    return 200, {"object": "list", "data": page, "has_more": len(selected) > limit, "url": "/v1/payouts"}


def _list_balance_transactions(store: SimulatorStore, request: Request, account: str | None) -> ApiResult:
    """``GET /v1/balance_transactions?payout=po_...``: as Stripe, only an automatic payout is itemised."""
    payout_id = request.query_params.get("payout")
    if payout_id is not None:
        payout = store.get("payouts", payout_id)
        if payout is None or payout.get("account") != account:
            raise InvalidRequest(f"No such payout: '{payout_id}'", param="payout", code="resource_missing")
        if not payout["automatic"]:
            raise InvalidRequest(
                "Balance transaction history can only be filtered on automatic transfers, not manual.",
                param="payout",
            )
    status, body = _list(store, "balance_transactions", request, account, "payout")
    body["data"] = [{k: v for k, v in obj.items() if k != "payout"} for obj in body["data"]]
    return status, body


def _limit(request: Request) -> int:
    """A list's ``limit`` (default 10), refused as Stripe refuses it outside 1..100."""
    limit = int_param(request, "limit")
    limit = 10 if limit is None else limit
    if limit < 1:
        raise InvalidRequest(
            "This value must be greater than or equal to 1.", param="limit", code="parameter_invalid_integer"
        )
    if limit > MAX_LIMIT:
        raise InvalidRequest(
            f"This value must be less than or equal to {MAX_LIMIT}.",
            param="limit",
            code="parameter_invalid_integer",
        )
    return limit


def _authorized(request: Request, api_key: str | None) -> bool:
    return api_key is None or request.headers.get("authorization") == f"Bearer {api_key}"


# The query parameters of Stripe's GET endpoints (its API reference and published OpenAPI description:
# ``created`` and ``expand`` are deep objects on the wire); any other is a 400 ``parameter_unknown``.
LIST_PARAMS = Accepts.of(
    {"created", "created[gte]", "created[gt]", "created[lte]", "created[lt]"},
    {"limit", "starting_after", "ending_before", "expand[]"},
)
RETRIEVE_PARAMS = Accepts.of({"expand[]"})
PAYOUT_LIST_PARAMS = {
    "arrival_date",
    "arrival_date[gte]",
    "arrival_date[gt]",
    "arrival_date[lte]",
    "arrival_date[lt]",
} | {
    "destination",
    "status",
}


def stripe_routes(store: SimulatorStore, wrap: ApiWrapper) -> list[BaseRoute]:
    """The Stripe API subset, each handler wrapped by the host's ``wrap`` (faults, auth, counting, and the
    refusal of any parameter but those declared)."""

    def lister(kind: Kind, extra: set[str], filter_param: str | None = None) -> Endpoint:
        handler: ApiHandler = lambda r, a: _list(store, kind, r, a, filter_param)  # noqa: E731
        return wrap(STRIPE_DIALECT, handler, Accepts.of(LIST_PARAMS.params, extra))

    def retriever(kind: Kind, extra: frozenset[str] = frozenset()) -> Endpoint:
        handler: ApiHandler = lambda r, a: _retrieve(store, kind, r, a)  # noqa: E731
        return wrap(STRIPE_DIALECT, handler, Accepts.of(RETRIEVE_PARAMS.params, extra))

    return [
        Route("/v1/charges", lister("charges", {"customer", "payment_intent", "transfer_group"})),
        Route("/v1/charges/{object_id}", retriever("charges")),
        Route("/v1/refunds", lister("refunds", {"charge", "payment_intent"}, filter_param="charge")),
        Route("/v1/refunds/{object_id}", retriever("refunds")),
        Route("/v1/payment_intents/{object_id}", retriever("payment_intents", frozenset({"client_secret"}))),
        Route("/v1/events", lister("events", {"type", "types[]", "delivery_success"}, filter_param="type")),
        Route(
            "/v1/payouts",
            wrap(
                STRIPE_DIALECT,
                lambda r, a: _list_payouts(store, r, a),
                Accepts.of(LIST_PARAMS.params, PAYOUT_LIST_PARAMS),
            ),
        ),
        Route(
            "/v1/balance_transactions",
            wrap(
                STRIPE_DIALECT,
                lambda r, a: _list_balance_transactions(store, r, a),
                Accepts.of(LIST_PARAMS.params, {"currency", "payout", "source", "type"}),
            ),
        ),
    ]


STRIPE_DIALECT = Dialect(
    authorized=_authorized,
    account=lambda request: request.headers.get("stripe-account"),
    invalid=lambda error: stripe_error(
        str(error), param=error.param, **({"code": error.code} if error.code else {})
    ),
    unauthorized=lambda: stripe_error("Invalid API Key provided."),
    injected=lambda status: _injected_error(status),
    unknown_parameter=lambda name: InvalidRequest(
        f"Received unknown parameter: {name}", param=name, code="parameter_unknown"
    ),
    version_header=VERSION_HEADER,
)


def _injected_error(status: int) -> dict[str, Any]:
    if status == 429:
        return stripe_error("Too many requests made to the API too quickly", code="rate_limit")
    if status >= 500:
        return stripe_error("Simulated provider failure", error_type="api_error")
    return stripe_error(f"Simulated HTTP {status}")


# --- payouts as Stripe renders them (the demo world and the tests build them here) --------------------


def payout_object(
    payout_id: str,
    amount: int,
    currency: str,
    arrival_date: int,
    created: int,
    account: str | None,
    *,
    status: str = "paid",
    automatic: bool = True,
    failure_code: str | None = None,
    statement_descriptor: str | None = None,
) -> StripeObject:
    """A payout with every field Stripe always sends (``account``: the simulator's scope key)."""
    return {
        "id": payout_id,
        "object": "payout",
        "amount": amount,
        "application_fee": None,
        "application_fee_amount": None,
        "arrival_date": arrival_date,
        "automatic": automatic,
        "balance_transaction": f"txn_{payout_id}",
        "created": created,
        "currency": currency.lower(),
        "description": "STRIPE PAYOUT",
        "destination": "ba_1SimulatedBank",
        "failure_balance_transaction": f"txn_fail_{payout_id}" if status == "failed" else None,
        "failure_code": failure_code,
        "failure_message": None,
        "livemode": False,
        "metadata": {},
        "method": "standard",
        "original_payout": None,
        "reconciliation_status": "completed" if automatic else "not_applicable",
        "reversed_by": None,
        "source_type": "card",
        "statement_descriptor": statement_descriptor,
        "status": status,
        "type": "bank_account",
        "account": account,
    }


def balance_transaction_object(
    transaction_id: str,
    payout_id: str,
    source: str,
    reporting_category: str,
    amount: int,
    fee: int,
    currency: str,
    created: int,
    account: str | None,
) -> StripeObject:
    """A balance transaction a payout carried (``payout``: the simulator's key that files it under its
    payout, stripped from responses); its ``type`` is the category's (``charge``, ``refund``, ``payout``)."""
    return {
        "id": transaction_id,
        "object": "balance_transaction",
        "amount": amount,
        "available_on": created + 2 * 86_400,
        "created": created,
        "currency": currency.lower(),
        "description": None,
        "exchange_rate": None,
        "fee": fee,
        "fee_details": []
        if fee == 0
        else [{"amount": fee, "currency": currency.lower(), "type": "stripe_fee"}],
        "net": amount - fee,
        "reporting_category": reporting_category,
        "source": source,
        "status": "available",
        "type": reporting_category,
        "account": account,
        "payout": payout_id,
    }
