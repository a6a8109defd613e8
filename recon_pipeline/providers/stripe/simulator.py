"""The simulator's Stripe API: the store's objects served with Stripe's wire semantics (newest-first lists,
``created[...]`` filters, ``starting_after`` cursors, ``expand[]``, ``Stripe-Account``, Stripe-style error
JSON, 400 ``parameter_unknown`` for parameters an endpoint does not take), so the client tested against it
is the client that talks to Stripe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from recon_pipeline.providers.simulator.store import Kind, SimulatorStore, SortedView, StripeObject
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
    "disputes": "dispute",
    "balance_transactions": "balance_transaction",
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
    filter_value = request.query_params.get(filter_param) if filter_param else None
    view = store.view(kind, account, filter_param if filter_value is not None else None, filter_value)
    expand = "data.balance_transaction" in request.query_params.getlist("expand[]")
    return _page(view, kind, request, lambda obj: render(obj, expand))


def _page(
    view: SortedView, kind: Kind, request: Request, render_item: Callable[[StripeObject], StripeObject]
) -> ApiResult:
    """One page of a list as Stripe serves it: ``limit`` (1-100, default 10), ``created[...]`` bounds, the
    ``starting_after`` cursor, newest first, each item rendered by ``render_item``."""
    limit = int_param(request, "limit")
    limit = 10 if limit is None else limit
    if not 1 <= limit <= 100:
        raise InvalidRequest("This value must be greater than or equal to 1 and at most 100.", param="limit")
    gte, lt = _created_bounds(request)
    starting_after = request.query_params.get("starting_after")
    try:
        data, has_more = view.page(gte, lt, starting_after, limit)
    except KeyError:
        raise InvalidRequest(
            f"No such {_OBJECT_NAMES[kind]}: '{starting_after}'", param="starting_after"
        ) from None
    return 200, {
        "object": "list",
        "data": [render_item(obj) for obj in data],
        "has_more": has_more,
        "url": f"/v1/{kind}",
    }


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
        *balance_routes(store, api),
    ]


def balance_routes(store: SimulatorStore, api: Callable[[ApiHandler], Endpoint]) -> list[BaseRoute]:
    """Disputes and balance transactions: ``GET /v1/disputes`` (``charge=``), ``GET /v1/disputes/{id}``,
    ``GET /v1/balance_transactions`` (``type=``, ``source=``; ``expand[]=data.source``,
    ``data.source.charge``) and ``GET /v1/balance_transactions/{id}`` (``expand[]=source``,
    ``source.charge``); a dispute's ``charge`` expands on ``expand[]=charge``."""
    list_disputes = accepting(
        _LIST_PARAMS | {"charge", "payment_intent"}, lambda r, a: _list(store, "disputes", r, a, "charge")
    )
    list_transactions = accepting(
        _LIST_PARAMS | {"type", "source", "currency"}, lambda r, a: _list_balance_transactions(store, r, a)
    )
    retrieve_transaction = accepting(
        _RETRIEVE_PARAMS, lambda r, a: _retrieve_balance_transaction(store, r, a)
    )
    return [
        Route("/v1/disputes", api(list_disputes)),
        Route(
            "/v1/disputes/{object_id}",
            api(accepting(_RETRIEVE_PARAMS, lambda r, a: _retrieve_dispute(store, r, a))),
        ),
        Route("/v1/balance_transactions", api(list_transactions)),
        Route("/v1/balance_transactions/{object_id}", api(retrieve_transaction)),
    ]


def _retrieve_dispute(store: SimulatorStore, request: Request, account: str | None) -> ApiResult:
    """A dispute by id, its ``charge`` the charge object on ``expand[]=charge``."""
    status, body = _retrieve(store, "disputes", request, account)
    stored = store.get("disputes", body["id"]) if status == 200 else None
    return (status, body) if stored is None else (200, _render_expanded(store, stored, _expansions(request)))


def _list_balance_transactions(store: SimulatorStore, request: Request, account: str | None) -> ApiResult:
    """The account's balance transactions, newest first, filtered as Stripe filters them (``type``,
    ``source``, ``currency``: each an exact match), the source expanded on ``expand[]=data.source``."""
    filters = {
        name: value for name in ("type", "source", "currency") if (value := request.query_params.get(name))
    }
    by = "source" if "source" in filters else "type" if "type" in filters else None
    view = store.view("balance_transactions", account, by, filters.get(by) if by else None)
    if len(filters) > (1 if by else 0):  # the other filters select from that view (a source's: a few)
        view = SortedView.of([t for t in view.objects if all(t.get(k) == v for k, v in filters.items())])
    expand = _expansions(request, "data.")
    return _page(view, "balance_transactions", request, lambda t: _render_transaction(store, t, expand))


def _retrieve_balance_transaction(store: SimulatorStore, request: Request, account: str | None) -> ApiResult:
    object_id = request.path_params["object_id"]
    transaction = store.get("balance_transactions", object_id)
    if transaction is None or transaction.get("account") != account:
        message = f"No such balance_transaction: '{object_id}'"
        return 404, stripe_error(message, code="resource_missing", param="id")
    return 200, _render_transaction(store, transaction, _expansions(request))


# The stored movement a balance transaction's ``source`` names, by the prefix of its id.
_SOURCE_KINDS: tuple[tuple[tuple[str, ...], Kind], ...] = (
    (("du_", "dp_"), "disputes"),
    (("ch_", "py_"), "charges"),
    (("re_", "pyr_"), "refunds"),
)


def _render_transaction(store: SimulatorStore, transaction: StripeObject, expand: set[str]) -> StripeObject:
    """A balance transaction as Stripe sends it: its ``source`` an id, or the source object when ``expand``
    holds ``source`` (and the source's ``charge`` the charge object when it holds ``source.charge``)."""
    out = render(transaction)
    source_id = str(out.get("source"))
    kind = next((k for prefixes, k in _SOURCE_KINDS if source_id.startswith(prefixes)), None)
    wanted = expand & {"source", "source.charge"}
    source = store.get(kind, source_id) if wanted and kind is not None else None
    if source is not None:
        out["source"] = _render_expanded(store, source, {"charge"} if "source.charge" in wanted else set())
    return out


def _render_expanded(store: SimulatorStore, obj: StripeObject, expand: set[str]) -> StripeObject:
    """``obj`` rendered, its ``charge`` (a dispute's, a refund's) the charge object when ``expand`` says."""
    out = render(obj)
    charge = store.get("charges", out["charge"]) if "charge" in expand and "charge" in out else None
    if charge is not None and charge.get("account") == obj.get("account"):
        out["charge"] = render(charge)
    return out


def _expansions(request: Request, prefix: str = "") -> set[str]:
    """The ``expand[]`` paths of a request, relative to ``prefix`` (``data.`` for a list's items)."""
    paths = request.query_params.getlist("expand[]")
    return {path[len(prefix) :] for path in paths if path.startswith(prefix)}


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
