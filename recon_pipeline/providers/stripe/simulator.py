"""The simulator's Stripe API: the store's objects served with Stripe's wire semantics (newest-first lists,
``created[...]`` filters, ``starting_after`` cursors, ``expand[]``, ``Stripe-Account``, Stripe-style error
JSON, 400 ``parameter_unknown`` for parameters an endpoint does not take), so the client tested against it
is the client that talks to Stripe.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from recon_pipeline.providers.simulator.store import Kind, SimulatorStore, StripeObject
from recon_pipeline.providers.simulator.wire import (
    ApiHandler,
    ApiResult,
    ApiWrapper,
    Dialect,
    Endpoint,
    InvalidRequest,
    accepting,
    int_param,
)

_OBJECT_NAMES: dict[Kind, str] = {
    "charges": "charge",
    "refunds": "refund",
    "payment_intents": "payment_intent",
    "events": "event",
}


def stripe_error(message: str, error_type: str = "invalid_request_error", **extra: Any) -> dict[str, Any]:
    """Stripe's error envelope."""
    return {"error": {"type": error_type, "message": message, **extra}}


def render(obj: StripeObject, expand_balance_transaction: bool = False) -> StripeObject:
    """The object as Stripe sends it: without the simulator's ``account`` key, and a charge's
    ``balance_transaction`` as its id unless expanded."""
    out = {key: value for key, value in obj.items() if key != "account"}
    transaction = out.get("balance_transaction")
    if isinstance(transaction, dict) and not expand_balance_transaction:
        out["balance_transaction"] = transaction["id"]
    return out


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
    limit = int_param(request, "limit")
    limit = 10 if limit is None else limit
    if not 1 <= limit <= 100:
        raise InvalidRequest("This value must be greater than or equal to 1 and at most 100.", param="limit")
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
    expand = request.query_params.getlist("expand[]")
    return 200, {
        "object": "list",
        "data": [_list_item(store, obj, expand) for obj in data],
        "has_more": has_more,
        "url": f"/v1/{kind}",
    }


def _list_item(store: SimulatorStore, obj: StripeObject, expand: list[str]) -> StripeObject:
    """A list's item as Stripe renders it under ``expand[]``: ``data.balance_transaction`` (a charge's),
    ``data.charge`` (a refund's charge in full, its own balance transaction under
    ``data.charge.balance_transaction``)."""
    out = render(obj, "data.balance_transaction" in expand)
    if "data.charge" in expand and isinstance(out.get("charge"), str):
        charge = store.get("charges", out["charge"])
        if charge is not None:
            out["charge"] = render(charge, "data.charge.balance_transaction" in expand)
    return out


def _retrieve(store: SimulatorStore, kind: Kind, request: Request, account: str | None) -> ApiResult:
    object_id = request.path_params["object_id"]
    obj = store.get(kind, object_id)
    if obj is None or obj.get("account") != account:
        message = f"No such {_OBJECT_NAMES[kind]}: '{object_id}'"
        return 404, stripe_error(message, code="resource_missing", param="id")
    expand = "balance_transaction" in request.query_params.getlist("expand[]")
    return 200, render(obj, expand)


def _authorized(request: Request, api_key: str | None) -> bool:
    return api_key is None or request.headers.get("authorization") == f"Bearer {api_key}"


# The query parameters each Stripe endpoint takes (its API reference); any other is a 400.
_LIST_PARAMS = frozenset(
    {"created", "created[gte]", "created[gt]", "created[lte]", "created[lt]", "limit", "starting_after"}
    | {"ending_before", "expand[]"}
)
_RETRIEVE_PARAMS = frozenset({"expand[]"})


def stripe_routes(store: SimulatorStore, wrap: ApiWrapper) -> list[BaseRoute]:
    """The Stripe API subset, each handler wrapped by the host's ``wrap`` (faults, auth, counting)."""

    def api(handler: ApiHandler) -> Endpoint:
        return wrap(STRIPE_DIALECT, handler)

    def lister(kind: Kind, extra: set[str], filter_param: str | None = None) -> Any:
        return api(accepting(_LIST_PARAMS | extra, lambda r, a: _list(store, kind, r, a, filter_param)))

    def retriever(kind: Kind) -> Any:
        return api(accepting(_RETRIEVE_PARAMS, lambda r, a: _retrieve(store, kind, r, a)))

    return [
        Route("/v1/charges", lister("charges", {"customer", "payment_intent", "transfer_group"})),
        Route("/v1/charges/{object_id}", retriever("charges")),
        Route("/v1/refunds", lister("refunds", {"charge", "payment_intent"}, filter_param="charge")),
        Route("/v1/refunds/{object_id}", retriever("refunds")),
        Route("/v1/payment_intents/{object_id}", retriever("payment_intents")),
        Route("/v1/events", lister("events", {"type", "types[]", "delivery_success"}, filter_param="type")),
    ]


STRIPE_DIALECT = Dialect(
    authorized=_authorized,
    account=lambda request: request.headers.get("stripe-account"),
    invalid=lambda error: stripe_error(
        str(error), param=error.param, **({"code": error.code} if error.code else {})
    ),
    unauthorized=lambda: stripe_error("Invalid API Key provided."),
    injected=lambda status: _injected_error(status),
)


def _injected_error(status: int) -> dict[str, Any]:
    if status == 429:
        return stripe_error("Too many requests made to the API too quickly", code="rate_limit")
    if status >= 500:
        return stripe_error("Simulated provider failure", error_type="api_error")
    return stripe_error(f"Simulated HTTP {status}")
