"""The simulator's Razorpay flavour: the store's charges and refunds as Razorpay payments and refunds.

Wire semantics as Razorpay's: ``from``/``to`` (unix seconds, both inclusive), ``count`` (default 10, at
most 100) and ``skip`` on newest-first collections ``{"entity": "collection", "count", "items"}``; Basic
auth with ``key_id:key_secret``; errors as ``{"error": {"code", "description", ...}}``; an unknown id is a
400 "The id provided does not exist" (Razorpay does not answer 404 for it). Only the merchant's own
records are served (store objects with ``account`` None). Razorpay has no events API.

Rendering keeps the store one model for both flavours: a charge becomes a payment (``created_at``,
upper-case currency, ``notes`` from ``metadata``, ``[]`` when empty as Razorpay sends it, status
``created`` / ``authorized`` / ``captured`` / ``refunded`` / ``failed``, ``fee`` from the balance
transaction with its 18% GST as ``tax``, ``order_id`` from ``payment_intent`` when that names an
``order_`` as a Razorpay world's charges may); a refund becomes a refund of ``payment_id`` (status
``processed`` / ``pending`` / ``failed``). ``GET /v1/orders/{id}/payments`` lists an order's payments
(all of them, unpaged, as Razorpay does); an order no payment names is unknown.

The settlement recon (``GET /v1/settlements/recon/combined?year&month[&day]``, ``count`` at most 1000,
``skip``) lists what settled on a day or month, Indian calendar (IST): every captured payment (a credit of
its amount less its fee) and every succeeded refund (a debit) created ``store.settlement_delay_days``
before, in one settlement per day at 11:00 IST, which is only served once ``store.clock()`` has passed it.
A payment's settled ``fee`` (tax included) is its charge's fee unless ``store.settled_fees`` revises it.
Items are oldest first (payments, then refunds), so ``skip`` pages are stable.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

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
    int_param,
)

GST_RATE = 0.18
SETTLEMENT_TZ = ZoneInfo("Asia/Kolkata")
SETTLEMENT_TIME = time(11, 0)  # one settlement a day, at 11:00 IST
RECON_MAX_COUNT = 1000
UNKNOWN_ID = "The id provided does not exist"
ORDER_PREFIX = "order_"
_REFUND_STATUSES = {"succeeded": "processed", "pending": "pending", "failed": "failed", "canceled": "failed"}


def razorpay_error(
    description: str, code: str = "BAD_REQUEST_ERROR", field: str | None = None
) -> dict[str, Any]:
    """Razorpay's error envelope."""
    error: dict[str, Any] = {
        "code": code,
        "description": description,
        "source": "NA",
        "step": "NA",
        "reason": "NA",
        "metadata": {},
    }
    if field is not None:
        error["field"] = field
    return {"error": error}


def payment_status(charge: StripeObject) -> str:
    """The Razorpay status of a charge: failed, created (pending), authorized, captured or refunded."""
    if charge["status"] == "failed":
        return "failed"
    if charge["status"] != "succeeded":
        return "created"
    if charge.get("refunded"):  # an uncaptured one too: Razorpay auto-refunds a hold left past its timeout
        return "refunded"
    return "captured" if charge["captured"] else "authorized"


def charge_fee(charge: StripeObject) -> int | None:
    """The fee of a store charge (its balance transaction's), None before there is one."""
    transaction = charge.get("balance_transaction")
    return transaction.get("fee") if isinstance(transaction, dict) else None


def gst_of(fee: int) -> int:
    """The GST part of a fee that includes 18% GST (Razorpay's ``tax``)."""
    return round(fee * GST_RATE / (1 + GST_RATE))


def render_payment(charge: StripeObject) -> StripeObject:
    """A store charge as Razorpay renders a payment."""
    fee = charge_fee(charge)
    refunded = charge.get("amount_refunded", 0)
    status = payment_status(charge)
    return {
        "id": charge["id"],
        "entity": "payment",
        "amount": charge["amount"],
        "currency": str(charge["currency"]).upper() if isinstance(charge["currency"], str) else None,
        "status": status,
        "order_id": order_of(charge),
        "invoice_id": None,
        "international": False,
        "method": "card",
        "amount_refunded": refunded,
        "refund_status": None if not refunded else ("full" if status == "refunded" else "partial"),
        "captured": bool(charge["captured"]) and status in ("captured", "refunded"),
        "description": None,
        "notes": charge.get("metadata") or [],
        "fee": fee,
        "tax": None if fee is None else gst_of(fee),
        "error_code": "BAD_REQUEST_ERROR" if status == "failed" else None,
        "error_description": "Payment failed" if status == "failed" else None,
        "created_at": charge["created"],
    }


def order_of(charge: StripeObject) -> str | None:
    """The Razorpay order a store charge pays: its ``payment_intent`` when that is an ``order_`` id."""
    intent = charge.get("payment_intent")
    return intent if isinstance(intent, str) and intent.startswith(ORDER_PREFIX) else None


def render_refund(refund: StripeObject) -> StripeObject:
    """A store refund as Razorpay renders a refund."""
    return {
        "id": refund["id"],
        "entity": "refund",
        "amount": refund["amount"],
        "currency": str(refund["currency"]).upper(),
        "payment_id": refund["charge"],
        "notes": refund.get("metadata") or [],
        "receipt": None,
        "acquirer_data": {},
        "created_at": refund["created"],
        "batch_id": None,
        "status": _REFUND_STATUSES.get(refund["status"], refund["status"]),
        "speed_processed": "normal",
        "speed_requested": "normal",
    }


def day_start(day: date) -> int:
    """Unix time of the start of an Indian calendar day."""
    return int(datetime.combine(day, time(0), SETTLEMENT_TZ).timestamp())


def settled_at(day: date) -> int:
    """When the day's settlement is made."""
    return int(datetime.combine(day, SETTLEMENT_TIME, SETTLEMENT_TZ).timestamp())


def recon_item(store: SimulatorStore, kind: Kind, obj: StripeObject, day: date) -> StripeObject:
    """A settled payment (credit, less its fee) or refund (debit) as the settlement recon lists it; a
    corrupt amount or fee in the store is served as it is."""
    payment = kind == "charges"
    fee = store.settled_fees.get(obj["id"], charge_fee(obj) or 0) if payment else 0
    amount = obj["amount"]
    numbers = isinstance(amount, int) and isinstance(fee, int)
    return {
        "entity_id": obj["id"],
        "type": "payment" if payment else "refund",
        "debit": 0 if payment else amount,
        "credit": (amount - fee if numbers else None) if payment else 0,
        "amount": amount,
        "currency": str(obj["currency"]).upper(),
        "fee": fee,
        "tax": gst_of(fee) if isinstance(fee, int) else None,
        "on_hold": False,
        "settled": True,
        "created_at": obj["created"],
        "settled_at": settled_at(day),
        "settlement_id": f"setl_sim{day:%Y%m%d}",
        "posted_at": None,
        "credit_type": "default",
        "description": None,
        "notes": json.dumps(obj.get("metadata") or {}),
        "payment_id": None if payment else obj["charge"],
        "settlement_utr": f"{settled_at(day)}simutr",
        "order_id": order_of(obj) if payment else None,
        "order_receipt": None,
        "method": "card",
        "dispute_id": None,
    }


def _settles(kind: Kind, obj: StripeObject) -> bool:
    if kind == "charges":
        return obj["status"] == "succeeded" and bool(obj["captured"])  # money moved only once captured
    return bool(obj["status"] == "succeeded")


def recon_entries(store: SimulatorStore, first: date, end: date) -> list[tuple[Kind, StripeObject, date]]:
    """What settled on the days ``[first, end)`` by ``store.clock()``: (kind, object, settlement day),
    day by day, payments then refunds, each oldest first."""
    now, delay = store.clock(), timedelta(days=store.settlement_delay_days)
    entries: list[tuple[Kind, StripeObject, date]] = []
    for offset in range((end - first).days):
        day = first + timedelta(days=offset)
        if settled_at(day) > now:
            break
        created = day - delay
        gte, lt = day_start(created), day_start(created + timedelta(days=1))
        for kind in ("charges", "refunds"):
            objects = store.view(kind, None).between(gte, lt)
            entries += [(kind, obj, day) for obj in objects if _settles(kind, obj)]
    return entries


def _required_int(request: Request, name: str) -> int:
    value = int_param(request, name)
    if value is None:
        raise InvalidRequest(f"The {name} field is required.", param=name)
    return value


def _recon_range(request: Request) -> tuple[date, date]:
    """The settlement days ``[first, end)`` asked for: a day with ``day``, else the whole month."""
    year, month = _required_int(request, "year"), _required_int(request, "month")
    day = int_param(request, "day")
    if not 1970 <= year <= 9998:
        raise InvalidRequest("The year must be between 1970 and 9998.", param="year")
    try:
        first = date(year, month, 1 if day is None else day)
    except ValueError:
        raise InvalidRequest("The date given is invalid.", param="month" if day is None else "day") from None
    if day is not None:
        return first, first + timedelta(days=1)
    return first, date(year + month // 12, month % 12 + 1, 1)


def _recon(store: SimulatorStore, request: Request) -> ApiResult:
    count = int_param(request, "count")
    count = 10 if count is None else count
    if not 1 <= count <= RECON_MAX_COUNT:
        raise InvalidRequest(f"The count must be between 1 and {RECON_MAX_COUNT}.", param="count")
    skip = int_param(request, "skip") or 0
    if skip < 0:
        raise InvalidRequest("The skip must be at least 0.", param="skip")
    page = recon_entries(store, *_recon_range(request))[skip : skip + count]
    items = [recon_item(store, kind, obj, day) for kind, obj, day in page]
    return 200, {"entity": "collection", "count": len(items), "items": items}


_RENDER: dict[Kind, Callable[[StripeObject], StripeObject]] = {
    "charges": render_payment,
    "refunds": render_refund,
}


def _collection(
    store: SimulatorStore, kind: Kind, request: Request, field_name: str | None = None, value: Any = None
) -> ApiResult:
    count = int_param(request, "count")
    count = 10 if count is None else count
    if not 1 <= count <= 100:
        raise InvalidRequest("The count must be between 1 and 100.", param="count")
    skip = int_param(request, "skip") or 0
    if skip < 0:
        raise InvalidRequest("The skip must be at least 0.", param="skip")
    gte, to = int_param(request, "from"), int_param(request, "to")
    view = store.view(kind, None, field_name, value)
    items = view.skipped_page(gte, None if to is None else to + 1, skip, count)
    return 200, {"entity": "collection", "count": len(items), "items": [_RENDER[kind](i) for i in items]}


def _retrieve(store: SimulatorStore, kind: Kind, object_id: str) -> ApiResult:
    obj = store.get(kind, object_id)
    if obj is None or obj.get("account") is not None:
        return 400, razorpay_error(UNKNOWN_ID)
    return 200, _RENDER[kind](obj)


def razorpay_routes(store: SimulatorStore, wrap: ApiWrapper) -> list[BaseRoute]:
    """The Razorpay API subset, each handler wrapped by the host's ``wrap`` (faults, auth, counting)."""

    def api(handler: ApiHandler) -> Endpoint:
        return wrap(RAZORPAY_DIALECT, handler)

    def by_id(kind: Kind) -> ApiHandler:
        return lambda request, _account: _retrieve(store, kind, request.path_params["object_id"])

    def payment_refunds(request: Request, _account: str | None) -> ApiResult:
        payment_id = request.path_params["object_id"]
        status, body = _retrieve(store, "charges", payment_id)
        if status != 200:
            return status, body
        return _collection(store, "refunds", request, "charge", payment_id)

    def order_payments(request: Request, _account: str | None) -> ApiResult:
        order_id = request.path_params["object_id"]
        payments = store.view("charges", None, "payment_intent", order_id).objects
        if not order_id.startswith(ORDER_PREFIX) or not payments:
            return 400, razorpay_error(UNKNOWN_ID)
        items = [render_payment(charge) for charge in reversed(payments)]
        return 200, {"entity": "collection", "count": len(items), "items": items}

    return [
        Route("/v1/orders/{object_id}/payments", api(order_payments)),
        Route("/v1/payments", api(lambda r, _a: _collection(store, "charges", r))),
        Route("/v1/payments/{object_id}", api(by_id("charges"))),
        Route("/v1/payments/{object_id}/refunds", api(payment_refunds)),
        Route("/v1/refunds", api(lambda r, _a: _collection(store, "refunds", r))),
        Route("/v1/refunds/{object_id}", api(by_id("refunds"))),
        Route("/v1/settlements/recon/combined", api(lambda r, _a: _recon(store, r))),
    ]


def _authorized(request: Request, api_key: str | None) -> bool:
    if api_key is None:
        return True
    expected = "Basic " + base64.b64encode(api_key.encode()).decode("ascii")
    return request.headers.get("authorization") == expected


def _injected(status: int) -> dict[str, Any]:
    if status == 429:
        return razorpay_error("Too many requests")
    if status >= 500:
        return razorpay_error("Simulated provider failure", code="SERVER_ERROR")
    return razorpay_error(f"Simulated HTTP {status}")


RAZORPAY_DIALECT = Dialect(
    authorized=_authorized,
    account=lambda _request: None,
    invalid=lambda error: razorpay_error(str(error), field=error.param),
    unauthorized=lambda: razorpay_error("Authentication failed"),
    injected=_injected,
)
