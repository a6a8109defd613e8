"""The simulator's Razorpay flavour: the store's charges and refunds as Razorpay payments and refunds.

Wire semantics as Razorpay's: ``from``/``to`` (unix seconds, both inclusive), ``count`` (default 10, at
most 100) and ``skip`` on newest-first collections ``{"entity": "collection", "count", "items"}``; any
other query parameter refused (400 "<name> is/are not required and should not be sent"), as is an
``expand[]`` value ``documented.py`` does not list; Basic
auth with ``key_id:key_secret``; errors as ``{"error": {"code", "description", ...}}``; an unknown id is a
400 "The id provided does not exist" (Razorpay does not answer 404 for it). Only the merchant's own
records are served (store objects with ``account`` None). Razorpay has no events API.

Rendering keeps the store one model for both flavours: a charge becomes a payment (``created_at``,
upper-case currency, ``notes`` from ``metadata``, ``[]`` when empty as Razorpay sends it, status
``created`` / ``authorized`` / ``captured`` / ``refunded`` / ``failed``, ``fee`` from the balance
transaction with its 18% GST as ``tax``, ``order_id`` from ``payment_intent`` when that names an
``order_`` as a Razorpay world's charges may); a refund becomes a refund of ``payment_id`` (status
``processed`` / ``pending`` / ``failed``). A payment's card (``host/cards.py``) gives its
``acquirer_data.auth_code`` and, with ``expand[]=card``, its inline ``card`` entity (``network``,
``last4``). ``GET /v1/orders/{id}/payments`` lists an order's payments
(all of them, unpaged, as Razorpay does); an order no payment names is unknown.

The settlement recon (``GET /v1/settlements/recon/combined?year&month[&day]``, ``count`` at most 1000,
``skip``) lists what settled on a day or month, Indian calendar (IST): every captured payment (a credit of
its amount less its fee) and every succeeded refund (a debit) created ``store.settlement_delay_days``
working days before (``settlement.SettlementCalendar``: weekends and India's holidays), in one settlement
per working day at 11:00 IST, which is only served once ``store.clock()`` has passed it. A payment's
settled ``fee`` (tax included, ``tax`` its 18% GST) is its charge's fee unless ``store.settled_fees``
revises it. Each balance transaction of a store dispute (Stripe-shaped: ``charge``, ``status``,
``balance_transactions`` with signed ``amount`` and ``created``) settles the same way as an ``adjustment``
item with ``dispute_id``: a withdrawal as a debit, a reinstatement as a credit. Items carry every field
Razorpay's do. Items are oldest first (payments, refunds, then dispute adjustments), so ``skip`` pages are
stable.

Settlements: ``GET /v1/settlements`` (``from``/``to`` on ``created_at``, ``count`` at most 100, ``skip``,
newest first) lists one settlement per working day whose recon has items, made at its 11:00 IST:
``id`` the items' ``settlement_id``, ``amount`` their credits less their debits, ``fees`` and ``tax``
their sums, ``utr`` their ``settlement_utr``, ``status`` ``processed`` unless ``store.failed_payouts``
names it (``failed``). ``GET /v1/settlements/{id}`` fetches one.

Disputes: ``GET /v1/disputes`` (``from``/``to`` on ``created_at``, ``count``, ``skip``) and
``GET /v1/disputes/{id}`` render a store dispute as Razorpay's entity: ``payment_id`` its charge,
``status`` open / under_review / won / lost / closed from Stripe's, ``amount_deducted`` what its
transactions withdrew net of what they reinstated, ``respond_by`` its evidence due date.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from recon_pipeline.providers.razorpay import documented
from recon_pipeline.providers.razorpay.settlement import SettlementCalendar
from recon_pipeline.simulation.host.cards import card_of, razorpay_network
from recon_pipeline.simulation.host.store import Kind, SimulatorStore, StripeObject
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

GST_RATE = 0.18
SETTLEMENT_TZ = ZoneInfo("Asia/Kolkata")
SETTLEMENT_TIME = time(11, 0)  # one settlement a day, at 11:00 IST
RECON_MAX_COUNT = 1000
UNKNOWN_ID = "The id provided does not exist"
ORDER_PREFIX = "order_"
CALENDAR = SettlementCalendar()  # the simulated Razorpay settles on India's working days
MAX_SETTLEMENT_SPAN_S = 366 * 86_400  # the simulator's bound on a settlements list's from..to
LONGEST_SETTLEMENT_SPAN = 21  # calendar days T+N working days can span at most (N ≤ 10)
_DISPUTE_STATUSES = {
    "warning_needs_response": "open",
    "needs_response": "open",
    "warning_under_review": "under_review",
    "under_review": "under_review",
    "won": "won",
    "lost": "lost",
    "warning_closed": "closed",
    "charge_refunded": "closed",
    "prevented": "closed",
}
_EVIDENCE_FIELDS = (
    "amount", "summary", "shipping_proof", "billing_proof", "cancellation_proof", "customer_communication",
    "proof_of_service", "explanation_letter", "refund_confirmation", "access_activity_log",
    "refund_cancellation_policy", "term_and_conditions", "others", "submitted_at",
)  # fmt: skip
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


def render_card(charge: StripeObject) -> StripeObject:
    """The card entity of a store charge's payment (``host/cards.py``), as ``expand[]=card`` inlines it."""
    card = card_of(charge)
    return {
        "id": f"card_{charge['id']}",
        "entity": "card",
        "name": "Guest",
        "last4": card.last4,
        "network": razorpay_network(card.brand),
        "type": "credit",
        "issuer": None,
        "international": False,
        "emi": False,
        "sub_type": "consumer",
        "token_iin": None,
    }


def render_payment(charge: StripeObject, expand_card: bool = False) -> StripeObject:
    """A store charge as Razorpay renders a payment, with every field Razorpay always sends (a card
    payment's: ``bank``, ``wallet`` and ``vpa`` null, the error fields null unless it failed, the
    issuer's ``acquirer_data.auth_code``), its ``card`` inline when expanded (``expand[]=card``)."""
    fee = charge_fee(charge)
    refunded = charge.get("amount_refunded", 0)
    status = payment_status(charge)
    failed = status == "failed"
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
        "card_id": f"card_{charge['id']}",
        **({"card": render_card(charge)} if expand_card else {}),
        "bank": None,
        "wallet": None,
        "vpa": None,
        "email": "guest@example.com",
        "contact": "+919999999999",
        "notes": charge.get("metadata") or [],
        "fee": fee,
        "tax": None if fee is None else gst_of(fee),
        "error_code": "BAD_REQUEST_ERROR" if failed else None,
        "error_description": "Payment failed" if failed else None,
        "error_source": "bank" if failed else None,
        "error_step": "payment_authorization" if failed else None,
        "error_reason": "payment_failed" if failed else None,
        "acquirer_data": {"auth_code": None if failed else card_of(charge).approval_code},
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


def render_dispute(dispute: StripeObject) -> StripeObject:
    """A store dispute as Razorpay renders a dispute."""
    moved = sum(t["amount"] for t in dispute.get("balance_transactions") or [])
    evidence = dispute.get("evidence_details") or {}
    return {
        "id": dispute["id"],
        "entity": "dispute",
        "payment_id": dispute["charge"],
        "amount": dispute["amount"],
        "currency": str(dispute["currency"]).upper(),
        "amount_deducted": max(0, -moved),
        "reason_code": dispute.get("reason") or "chargeback",
        "reason_description": dispute.get("reason") or "chargeback",
        "respond_by": evidence.get("due_by"),
        "status": _DISPUTE_STATUSES.get(dispute["status"], dispute["status"]),
        "phase": "chargeback",
        "created_at": dispute["created"],
        "evidence": dict.fromkeys(_EVIDENCE_FIELDS),
    }


def day_start(day: date) -> int:
    """Unix time of the start of an Indian calendar day."""
    return int(datetime.combine(day, time(0), SETTLEMENT_TZ).timestamp())


def settled_at(day: date) -> int:
    """When the day's settlement is made."""
    return int(datetime.combine(day, SETTLEMENT_TIME, SETTLEMENT_TZ).timestamp())


def settlement_id_of(day: date) -> str:
    """The id of the settlement made on ``day``."""
    return f"setl_sim{day:%Y%m%d}"


def _settlement_fields(day: date) -> StripeObject:
    """The fields every recon item of the day's settlement shares."""
    return {
        "on_hold": False,
        "settled": True,
        "settled_at": settled_at(day),
        "settlement_id": settlement_id_of(day),
        "posted_at": None,
        "credit_type": "default",
        "settlement_utr": f"{settled_at(day)}simutr",
    }


def recon_item(store: SimulatorStore, kind: Kind, obj: StripeObject, day: date) -> StripeObject:
    """A settled payment (credit, less its fee), refund (debit) or dispute transaction (an adjustment)
    as the settlement recon lists it; a corrupt amount or fee in the store is served as it is."""
    if kind == "disputes":
        return dispute_recon_item(obj["dispute"], obj, day)
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
        "created_at": obj["created"],
        "description": None,
        "notes": json.dumps(obj.get("metadata") or {}),
        "payment_id": None if payment else obj["charge"],
        "order_id": order_of(obj) if payment else None,
        "order_receipt": None,
        "method": "card",
        "card_network": "Visa",
        "card_issuer": "HDFC",
        "card_type": "credit",
        "dispute_id": None,
        **_settlement_fields(day),
    }


def dispute_recon_item(dispute: StripeObject, transaction: StripeObject, day: date) -> StripeObject:
    """A dispute's balance transaction as Razorpay's recon lists it: an ``adjustment`` naming the dispute,
    a debit when the amount is withdrawn, a credit when it is reinstated."""
    amount = transaction["amount"]
    return {
        "entity_id": "adj_" + str(transaction["id"]).split("_", 1)[-1],
        "type": "adjustment",
        "debit": max(0, -amount),
        "credit": max(0, amount),
        "amount": abs(amount),
        "currency": str(transaction["currency"]).upper(),
        "fee": 0,
        "tax": 0,
        "created_at": transaction["created"],
        "description": f"Dispute {dispute['id']}",
        "notes": json.dumps({}),
        "payment_id": dispute["charge"],
        "order_id": None,
        "order_receipt": None,
        "method": None,
        "card_network": None,
        "card_issuer": None,
        "card_type": None,
        "dispute_id": dispute["id"],
        **_settlement_fields(day),
    }


def _settles(kind: Kind, obj: StripeObject) -> bool:
    if kind == "charges":
        return obj["status"] == "succeeded" and bool(obj["captured"])  # money moved only once captured
    return bool(obj["status"] == "succeeded")


def created_days(store: SimulatorStore, day: date) -> list[date]:
    """The days whose money settles on ``day``: none unless it is a working day."""
    if not CALENDAR.is_working_day(day):
        return []
    earliest = day - timedelta(days=LONGEST_SETTLEMENT_SPAN)
    candidates = (earliest + timedelta(days=i) for i in range(LONGEST_SETTLEMENT_SPAN + 1))
    return [c for c in candidates if CALENDAR.working_days_after(c, store.settlement_delay_days) == day]


def dispute_transactions(store: SimulatorStore, gte: int, lt: int) -> list[StripeObject]:
    """The merchant's dispute balance transactions created in ``[gte, lt)``, each with its ``dispute``,
    oldest first."""
    found = [
        {**transaction, "dispute": dispute}
        for dispute in store.view("disputes", None).objects
        for transaction in dispute.get("balance_transactions") or []
        if gte <= transaction["created"] < lt
    ]
    return sorted(found, key=lambda t: (t["created"], t["id"]))


def recon_entries(store: SimulatorStore, first: date, end: date) -> list[tuple[Kind, StripeObject, date]]:
    """What settled on the days ``[first, end)`` by ``store.clock()``: (kind, object, settlement day),
    day by day, payments then refunds then dispute transactions, each oldest first."""
    now = store.clock()
    entries: list[tuple[Kind, StripeObject, date]] = []
    for offset in range((end - first).days):
        day = first + timedelta(days=offset)
        if settled_at(day) > now:
            break
        for created in created_days(store, day):
            gte, lt = day_start(created), day_start(created + timedelta(days=1))
            for kind in ("charges", "refunds"):
                objects = store.view(kind, None).between(gte, lt)
                entries += [(kind, obj, day) for obj in objects if _settles(kind, obj)]
            entries += [("disputes", t, day) for t in dispute_transactions(store, gte, lt)]
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


def render_settlement(store: SimulatorStore, day: date, items: list[StripeObject]) -> StripeObject:
    """The settlement of ``day`` as Razorpay renders it, from its recon items."""
    settlement_id = str(items[0]["settlement_id"])
    numbers = [i for i in items if isinstance(i["credit"], int) and isinstance(i["fee"], int)]
    return {
        "id": settlement_id,
        "entity": "settlement",
        "amount": sum(i["credit"] - i["debit"] for i in numbers),
        "status": "failed" if settlement_id in store.failed_payouts else "processed",
        "fees": sum(i["fee"] for i in numbers),
        "tax": sum(i["tax"] for i in numbers),
        "utr": items[0]["settlement_utr"],
        "created_at": settled_at(day),
    }


def settlements(store: SimulatorStore, gte: int, to: int) -> list[StripeObject]:
    """The settlements made in ``[gte, to]`` by ``store.clock()``, newest first."""
    first = datetime.fromtimestamp(gte, SETTLEMENT_TZ).date()
    end = datetime.fromtimestamp(min(to, store.clock()), SETTLEMENT_TZ).date() + timedelta(days=1)
    by_day: dict[date, list[StripeObject]] = {}
    for kind, obj, day in recon_entries(store, first, end):
        by_day.setdefault(day, []).append(recon_item(store, kind, obj, day))
    made = [render_settlement(store, day, items) for day, items in by_day.items()]
    return sorted((s for s in made if gte <= s["created_at"] <= to), key=lambda s: -s["created_at"])


def _settlements(store: SimulatorStore, request: Request) -> ApiResult:
    count = int_param(request, "count")
    count = 10 if count is None else count
    if not 1 <= count <= 100:
        raise InvalidRequest("The count must be between 1 and 100.", param="count")
    skip = int_param(request, "skip") or 0
    gte, to = _required_int(request, "from"), _required_int(request, "to")
    if skip < 0 or to < gte or to - gte > MAX_SETTLEMENT_SPAN_S:
        raise InvalidRequest("The from, to and skip must span at most a year.", param="to")
    items = settlements(store, gte, to)[skip : skip + count]
    return 200, {"entity": "collection", "count": len(items), "items": items}


def _settlement(store: SimulatorStore, settlement_id: str) -> ApiResult:
    if settlement_id.startswith("setl_sim"):
        try:
            day = datetime.strptime(settlement_id.removeprefix("setl_sim"), "%Y%m%d").date()
        except ValueError:
            day = None
        if day is not None:
            found = settlements(store, settled_at(day), settled_at(day))
            if found:
                return 200, found[0]
    return 400, razorpay_error(UNKNOWN_ID)


_RENDER: dict[Kind, Callable[[StripeObject], StripeObject]] = {
    "charges": render_payment,
    "refunds": render_refund,
    "disputes": render_dispute,
}


def _render(kind: Kind, obj: StripeObject, request: Request) -> StripeObject:
    """``obj`` as Razorpay renders it, a payment's card inline when the request expands it."""
    if kind == "charges":
        return render_payment(obj, expand_card="card" in array_param(request, "expand"))
    return _RENDER[kind](obj)


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
    rendered = [_render(kind, item, request) for item in items]
    return 200, {"entity": "collection", "count": len(items), "items": rendered}


def _retrieve(store: SimulatorStore, kind: Kind, request: Request) -> ApiResult:
    obj = store.get(kind, request.path_params["object_id"])
    if obj is None or obj.get("account") is not None:
        return 400, razorpay_error(UNKNOWN_ID)
    return 200, _render(kind, obj, request)


def documented_accepts(endpoint: str) -> Accepts:
    """What Razorpay's ``endpoint`` takes (``documented.py``): its parameters (any other refused by the
    dialect), and its ``expand[]`` values (any other a 400 in Razorpay's documented words)."""

    def rule(query: Sequence[tuple[str, str]]) -> InvalidRequest | None:
        refused = documented.refusal(endpoint, query)
        return None if refused is None else InvalidRequest(refused.message, refused.param)

    return Accepts(documented.ENDPOINTS[endpoint].parameters, rule)


def razorpay_routes(store: SimulatorStore, wrap: ApiWrapper) -> list[BaseRoute]:
    """The Razorpay API subset, each handler wrapped by the host's ``wrap`` (faults, auth, counting)."""

    def api(endpoint: str, handler: ApiHandler) -> Endpoint:
        return wrap(RAZORPAY_DIALECT, handler, documented_accepts(endpoint))

    def by_id(kind: Kind) -> ApiHandler:
        return lambda request, _account: _retrieve(store, kind, request)

    def payment_refunds(request: Request, _account: str | None) -> ApiResult:
        status, body = _retrieve(store, "charges", request)
        if status != 200:
            return status, body
        return _collection(store, "refunds", request, "charge", request.path_params["object_id"])

    def order_payments(request: Request, _account: str | None) -> ApiResult:
        order_id = request.path_params["object_id"]
        payments = store.view("charges", None, "payment_intent", order_id).objects
        if not order_id.startswith(ORDER_PREFIX) or not payments:
            return 400, razorpay_error(UNKNOWN_ID)
        items = [render_payment(charge) for charge in reversed(payments)]
        return 200, {"entity": "collection", "count": len(items), "items": items}

    def collection(kind: Kind) -> ApiHandler:
        return lambda request, _account: _collection(store, kind, request)

    return [
        Route("/v1/orders/{object_id}/payments", api("/v1/orders/{id}/payments", order_payments)),
        Route("/v1/payments", api("/v1/payments", collection("charges"))),
        Route("/v1/payments/{object_id}", api("/v1/payments/{id}", by_id("charges"))),
        Route("/v1/payments/{object_id}/refunds", api("/v1/payments/{id}/refunds", payment_refunds)),
        Route("/v1/refunds", api("/v1/refunds", collection("refunds"))),
        Route("/v1/refunds/{object_id}", api("/v1/refunds/{id}", by_id("refunds"))),
        Route("/v1/settlements", api("/v1/settlements", lambda r, _a: _settlements(store, r))),
        Route(
            "/v1/settlements/{object_id}",
            api("/v1/settlements/{id}", lambda r, _a: _settlement(store, r.path_params["object_id"])),
        ),
        Route(
            "/v1/settlements/recon/combined",
            api("/v1/settlements/recon/combined", lambda r, _a: _recon(store, r)),
        ),
        Route("/v1/disputes", api("/v1/disputes", collection("disputes"))),
        Route("/v1/disputes/{object_id}", api("/v1/disputes/{id}", by_id("disputes"))),
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
    unknown_parameter=lambda name: InvalidRequest(
        f"{name} is/are not required and should not be sent", param=name
    ),
)
