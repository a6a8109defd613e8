"""The provider simulator: a Starlette app serving the Stripe API subset of DESIGN.md from a SimulatorStore,
or, in the ``razorpay`` flavour (``razorpay_api.py``), Razorpay's subset from the same store.

One app speaks one flavour (their paths overlap: both have ``/v1/refunds``). The Stripe flavour speaks
Stripe's wire semantics (newest-first lists, ``created[...]`` filters, ``starting_after`` cursors,
``expand[]``, ``Stripe-Account``, Stripe-style error JSON) so the adapter tested against it is the adapter
that talks to Stripe. Fault switches (``faults.py``) apply to ``/v1`` paths only; the ``/_simulator``
control endpoints are never faulted nor authenticated.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recon_pipeline.providers.razorpay.simulator import RAZORPAY_DIALECT, razorpay_routes
from recon_pipeline.providers.simulator.faults import FaultSwitches, faulty_page, without_cursor
from recon_pipeline.providers.simulator.store import Kind, SimulatorStore, StripeObject
from recon_pipeline.providers.simulator.wire import (
    ApiHandler,
    ApiResult,
    Dialect,
    InvalidRequest,
    accepting,
    int_param,
)

FLAVOURS = ("stripe", "razorpay")

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
    expand = "data.balance_transaction" in request.query_params.getlist("expand[]")
    return 200, {
        "object": "list",
        "data": [render(obj, expand) for obj in data],
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


def _stripe_routes(store: SimulatorStore, api: Callable[[ApiHandler], Any]) -> list[Route]:
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
_FLAVOURS = {"stripe": (STRIPE_DIALECT, _stripe_routes), "razorpay": (RAZORPAY_DIALECT, razorpay_routes)}


def build_app(store: SimulatorStore, api_key: str | None = None, flavour: str = "stripe") -> Starlette:
    """The simulator app over ``store`` speaking ``flavour`` (``stripe`` or ``razorpay``); with
    ``api_key``, ``/v1`` requires ``Authorization: Bearer <key>`` (Stripe) or Basic ``key_id:key_secret``
    (Razorpay).

    The fault switches are at ``app.state.faults`` (a ``FaultSwitches``) as well as over HTTP.
    """
    if flavour not in _FLAVOURS:
        raise ValueError(f"simulator flavour must be one of {', '.join(FLAVOURS)}, not {flavour!r}")
    dialect, flavour_routes = _FLAVOURS[flavour]
    faults = FaultSwitches()

    def api(handler: ApiHandler) -> Callable[[Request], Awaitable[Response]]:
        """Wrap a /v1 handler with counting, faults, auth and account scoping."""

        async def endpoint(request: Request) -> Response:
            decision = faults.begin(request.url.path)
            status = 500
            try:
                if decision.delay_s:
                    await asyncio.sleep(decision.delay_s)
                if decision.status is not None:
                    status = decision.status
                    return _injected(dialect, status, decision.retry_after)
                if not dialect.authorized(request, api_key):
                    status = 401
                    return JSONResponse(dialect.unauthorized(), status_code=401)
                if decision.paging is not None:  # the page is the fault's, whatever the cursor says
                    scope = {**request.scope, "query_string": without_cursor(request.scope["query_string"])}
                    request = Request(scope, request.receive)
                try:
                    status, payload = handler(request, dialect.account(request))
                except InvalidRequest as error:
                    status, payload = 400, dialect.invalid(error)
                if decision.paging is not None and status == 200 and _is_list(payload):
                    size = int_param(request, "limit") or int_param(request, "count") or 10
                    payload = faulty_page(payload, decision.paging, size, faults.endless_page_number())
                body = json.dumps(payload).encode()
                if decision.truncate and status == 200:
                    body = body[: len(body) // 2]
                return Response(body, status_code=status, media_type="application/json")
            finally:
                faults.end(decision, status)

        return endpoint

    async def set_faults(request: Request) -> Response:
        try:
            settings = await request.json()
            if not isinstance(settings, dict):
                raise ValueError("body must be a JSON object")
            return JSONResponse(faults.configure(settings))
        except ValueError as error:
            return JSONResponse(stripe_error(str(error)), status_code=400)

    async def reset_faults(request: Request) -> Response:
        faults.reset()
        return JSONResponse(faults.state())

    async def get_stats(request: Request) -> Response:
        return JSONResponse(faults.stats())

    async def reset_stats(request: Request) -> Response:
        faults.reset_stats()
        return JSONResponse(faults.stats())

    routes = [
        *flavour_routes(store, api),
        Route("/_simulator/faults", set_faults, methods=["POST"]),
        Route("/_simulator/faults", reset_faults, methods=["DELETE"]),
        Route("/_simulator/stats", get_stats, methods=["GET"]),
        Route("/_simulator/reset-stats", reset_stats, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.faults = faults
    return app


def _is_list(payload: dict[str, Any]) -> bool:
    """Whether an answer is a page of a list: Stripe's ``list`` or Razorpay's ``collection``."""
    return payload.get("object") == "list" or payload.get("entity") == "collection"


def _injected_error(status: int) -> dict[str, Any]:
    if status == 429:
        return stripe_error("Too many requests made to the API too quickly", code="rate_limit")
    if status >= 500:
        return stripe_error("Simulated provider failure", error_type="api_error")
    return stripe_error(f"Simulated HTTP {status}")


def _injected(dialect: Dialect, status: int, retry_after: str | None) -> Response:
    headers = {"Retry-After": retry_after} if retry_after is not None else None
    return JSONResponse(dialect.injected(status), status_code=status, headers=headers)
