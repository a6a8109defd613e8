"""The simulator's Stripe API: the store's objects served with Stripe's wire semantics (newest-first lists,
``created[...]`` filters, ``starting_after`` cursors, ``expand[]``, ``Stripe-Account``, Stripe-style error
JSON, 400 ``parameter_unknown`` for parameters an endpoint does not take, ``limit`` within 1..100), so the
client tested against it is the client that talks to Stripe. Every request is held to what Stripe
documents (``documented.py``, from its published OpenAPI description): a parameter its endpoint does not
publish is a 400 ``parameter_unknown``, an expansion it does not document a 400 "This property cannot be
expanded (charge)." (``data.source.charge`` on balance transactions: a charge has no ``charge``), whether
or not the objects served would have had the field. Always strict: where Stripe is silent, it refuses.

Objects are rendered (``rendering.py``) with every field Stripe always sends, in the version the request
pins with ``Stripe-Version``, or without it in the account's default, an old version whose PaymentIntent
has no ``latest_charge``. Every route names the published endpoint it serves, whose parameters and
expansions the host's wrapper enforces (``documented_accepts``).
Balance transactions are served as the store derives them (``served_balance_transactions``): those payouts
carried, and those the charges, refunds and disputes hold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from recon_pipeline.providers.stripe import documented
from recon_pipeline.providers.stripe.api_version import VERSION_HEADER
from recon_pipeline.simulation.host.money import balance_transaction
from recon_pipeline.simulation.host.store import Kind, SimulatorStore, SortedView, StripeObject
from recon_pipeline.simulation.host.wire import (
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
from recon_pipeline.simulation.stripe import rendering

MAX_LIMIT = 100

_OBJECT_NAMES: dict[Kind, str] = {
    "charges": "charge",
    "refunds": "refund",
    "payment_intents": "payment_intent",
    "events": "event",
    "disputes": "dispute",
    "payouts": "payout",
    "balance_transactions": "balance_transaction",
}
# The stored movement a balance transaction's ``source`` names, by the prefix of its id.
_SOURCE_KINDS: tuple[tuple[tuple[str, ...], Kind], ...] = (
    (("du_", "dp_"), "disputes"),
    (("ch_", "py_"), "charges"),
    (("re_", "pyr_"), "refunds"),
    (("po_",), "payouts"),
)


def stripe_error(message: str, error_type: str = "invalid_request_error", **extra: Any) -> dict[str, Any]:
    """Stripe's error envelope."""
    return {"error": {"type": error_type, "message": message, **extra}}


def render(
    store: SimulatorStore, kind: Kind, obj: StripeObject, version: str, expand: frozenset[str]
) -> StripeObject:
    """A store object as Stripe sends it in API ``version`` (``rendering``), with the ``expand`` paths
    (relative to the object, already held to ``documented.py``) expanded: a charge's or refund's
    ``balance_transaction``, a dispute's or refund's ``charge``, a balance transaction's ``source``, a
    PaymentIntent's ``latest_charge`` (and ``latest_charge.balance_transaction``). A kind served here
    renders its always-present fields in ``rendering.py``."""

    def refunds_of(charge_id: str) -> list[StripeObject]:
        return _refunds_of_id(store, obj, charge_id)

    if kind == "charges":
        return rendering.charge(obj, version, refunds_of, "balance_transaction" in expand)
    if kind in ("refunds", "disputes"):
        out = (
            rendering.refund(obj, "balance_transaction" in expand)
            if kind == "refunds"
            else rendering.dispute(obj)
        )
        charges = _charge_of(store, obj)(str(out["charge"])) if "charge" in expand else []
        if charges:
            out["charge"] = render(store, "charges", charges[0], version, _under(expand, "charge"))
        return out
    if kind == "payment_intents":
        out = rendering.payment_intent(obj, version, _charge_of(store, obj), refunds_of)
        latest = out.get("latest_charge")
        charges = _charge_of(store, obj)(str(latest)) if "latest_charge" in expand and latest else []
        if charges:
            out["latest_charge"] = render(
                store, "charges", charges[0], version, _under(expand, "latest_charge")
            )
        return out
    if kind == "events":
        return rendering.event(obj)
    if kind == "payouts":  # stored as Stripe renders them (``payout_object``)
        return rendering.public(obj)
    if kind == "balance_transactions":
        return _render_transaction(store, obj, version, expand)
    raise ValueError(f"no Stripe rendering of {kind}")


def _render_transaction(
    store: SimulatorStore, transaction: StripeObject, version: str, expand: frozenset[str]
) -> StripeObject:
    """A balance transaction: its ``source`` an id, or the source object when ``expand`` holds ``source``."""
    out = rendering.listed_balance_transaction(transaction)
    source_id = str(out.get("source"))
    kind = next((k for prefixes, k in _SOURCE_KINDS if source_id.startswith(prefixes)), None)
    source = store.get(kind, source_id) if "source" in expand and kind is not None else None
    if source is not None and source.get("account") == transaction.get("account"):
        out["source"] = render(store, kind or "charges", source, version, _under(expand, "source"))
    return out


def _under(expand: frozenset[str], field_name: str) -> frozenset[str]:
    """The expansion paths within an expanded field: ``charge.balance_transaction`` is the charge's
    ``balance_transaction``."""
    prefix = f"{field_name}."
    return frozenset(path[len(prefix) :] for path in expand if path.startswith(prefix))


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


def _expansions(request: Request) -> frozenset[str]:
    """The ``expand[]`` paths of a request (a list's items' under ``data.``: ``_under(..., "data")``)."""
    return frozenset(array_param(request, "expand"))


def _list(
    store: SimulatorStore,
    kind: Kind,
    request: Request,
    account: str | None,
    filter_param: str | None = None,
) -> ApiResult:
    filter_value = request.query_params.get(filter_param) if filter_param else None
    view = store.view(kind, account, filter_param if filter_value is not None else None, filter_value)
    return _page(store, kind, view, request)


def _page(store: SimulatorStore, kind: Kind, view: SortedView, request: Request) -> ApiResult:
    """One page of a list as Stripe serves it: ``limit``, ``created[...]`` bounds, the ``starting_after``
    cursor, newest first, each item rendered in the request's version with its ``data.`` expansions."""
    version = served_version(request)
    limit = _limit(request)
    gte, lt = _created_bounds(request)
    starting_after = request.query_params.get("starting_after")
    try:
        data, has_more = view.page(gte, lt, starting_after, limit)
    except KeyError:
        raise InvalidRequest(
            f"No such {_OBJECT_NAMES[kind]}: '{starting_after}'", param="starting_after"
        ) from None
    expand = _under(_expansions(request), "data")
    return 200, {
        "object": "list",
        "data": [render(store, kind, obj, version, expand) for obj in data],
        "has_more": has_more,
        "url": f"/v1/{kind}",
    }


def _retrieve(store: SimulatorStore, kind: Kind, request: Request, account: str | None) -> ApiResult:
    version = served_version(request)
    object_id = request.path_params["object_id"]
    obj = store.get(kind, object_id)
    if obj is None or obj.get("account") != account:
        message = f"No such {_OBJECT_NAMES[kind]}: '{object_id}'"
        return 404, stripe_error(message, code="resource_missing", param="id")
    return 200, render(store, kind, obj, version, _expansions(request))


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
    page = [render(store, "payouts", payout, version, frozenset()) for payout in selected[:limit]]
    return 200, {"object": "list", "data": page, "has_more": len(selected) > limit, "url": "/v1/payouts"}


# The filters of ``GET /v1/balance_transactions``, each an exact match; the first given selects the view.
_TRANSACTION_FILTERS = ("payout", "source", "type", "currency")


def _list_balance_transactions(store: SimulatorStore, request: Request, account: str | None) -> ApiResult:
    """``GET /v1/balance_transactions``, newest first, filtered as Stripe filters it (``payout``, ``source``,
    ``type``, ``currency``), the source expanded on ``expand[]=data.source``.
    As Stripe, only an automatic payout is itemised: ``payout=`` of a manual one is a 400."""
    given = {name: request.query_params.get(name) for name in _TRANSACTION_FILTERS}
    filters = {name: value for name, value in given.items() if value is not None}
    payout_id = filters.get("payout")
    if payout_id is not None:
        payout = store.get("payouts", payout_id)
        if payout is None or payout.get("account") != account:
            raise InvalidRequest(f"No such payout: '{payout_id}'", param="payout", code="resource_missing")
        if not payout["automatic"]:
            raise InvalidRequest(
                "Balance transaction history can only be filtered on automatic transfers, not manual.",
                param="payout",
            )
    by = next(iter(filters), None)
    view = store.view("balance_transactions", account, by, filters.get(by) if by else None)
    if len(filters) > 1:  # the other filters select from that view (a payout's or a source's: a few)
        view = SortedView.of([t for t in view.objects if all(t.get(k) == v for k, v in filters.items())])
    return _page(store, "balance_transactions", view, request)


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


def documented_accepts(endpoint: str) -> Accepts:
    """What Stripe's published ``endpoint`` takes (``documented.py``: its parameters, any other a 400
    ``parameter_unknown``; its expansions, any other a 400 "This property cannot be expanded")."""

    def rule(query: Sequence[tuple[str, str]]) -> InvalidRequest | None:
        refused = documented.expansion_refusal(endpoint, query)
        return None if refused is None else InvalidRequest(refused.message, refused.param, refused.code)

    return Accepts(documented.parameters(endpoint), rule)


def stripe_routes(store: SimulatorStore, wrap: ApiWrapper) -> list[BaseRoute]:
    """The Stripe API subset, each handler wrapped by the host's wrapper (faults, auth, counting, and the
    refusal of any request its published endpoint does not document: ``documented_accepts``)."""

    def api(endpoint: str, handler: ApiHandler) -> Endpoint:
        return wrap(STRIPE_DIALECT, handler, documented_accepts(endpoint))

    def lister(kind: Kind, filter_param: str | None = None) -> Endpoint:
        return api(f"/v1/{kind}", lambda r, a: _list(store, kind, r, a, filter_param))

    def retriever(kind: Kind, endpoint: str) -> Endpoint:
        return api(endpoint, lambda r, a: _retrieve(store, kind, r, a))

    return [
        Route("/v1/charges", lister("charges")),
        Route("/v1/charges/{object_id}", retriever("charges", "/v1/charges/{charge}")),
        Route("/v1/refunds", lister("refunds", filter_param="charge")),
        Route("/v1/refunds/{object_id}", retriever("refunds", "/v1/refunds/{refund}")),
        Route(
            "/v1/payment_intents/{object_id}",
            retriever("payment_intents", "/v1/payment_intents/{intent}"),
        ),
        Route("/v1/events", lister("events", filter_param="type")),
        Route("/v1/disputes", lister("disputes", filter_param="charge")),
        Route("/v1/disputes/{object_id}", retriever("disputes", "/v1/disputes/{dispute}")),
        Route("/v1/payouts", api("/v1/payouts", lambda r, a: _list_payouts(store, r, a))),
        Route(
            "/v1/balance_transactions",
            api("/v1/balance_transactions", lambda r, a: _list_balance_transactions(store, r, a)),
        ),
        Route(
            "/v1/balance_transactions/{object_id}",
            retriever("balance_transactions", "/v1/balance_transactions/{id}"),
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
        **balance_transaction(
            transaction_id,
            source,
            created,
            amount,
            currency.lower(),
            reporting_category=reporting_category,
            transaction_type=reporting_category,
            fee=fee,
        ),
        "account": account,
        "payout": payout_id,
    }
