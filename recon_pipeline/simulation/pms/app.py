"""The PMS simulator: Apaleo's folio charge posting and folio read over real HTTP, with fault switches.

The subset of Apaleo's Finance API (``https://api.apaleo.com``) a posting client needs:

- ``POST /finance/v1/folio-actions/{folioId}/charges`` with ``Authorization: Bearer``, ``Idempotency-Key``
  and a body ``{"serviceType", "vatType", "name", "amount": {"amount", "currency"}, "serviceDate",
  "receipt": {"type", "number"}}`` (amount in major units, as Apaleo's ``MonetaryValueModel``) →
  ``201 {"id": chargeId}``. A repeated key with the same body is answered with the first answer and
  stores nothing (Apaleo: the same response for the same key); with another body it is ``409``.
- ``GET /finance/v1/folios/{folioId}`` → the folio with its ``charges`` (each with its ``receipt``): how a
  client finds out whether a charge it sent landed. ``404`` for a folio never opened.
- Errors as Apaleo answers them: ``400``/``409``/``422`` with ``{"messages": [...]}`` (its
  ``MessageItemCollection``), ``401`` with ``WWW-Authenticate: Bearer`` and no body, ``429`` with
  ``Retry-After``. The folio is Apaleo's external day folio (one per property and business date); here it
  opens with its first charge, which then fixes its currency (a charge in another currency is ``422``).

Fault switches (``POST /_simulator/faults``, or ``faults=`` at construction): the provider simulator's
``FaultSwitches`` (``statuses`` injected before anything is stored, e.g. ``[503]``; ``slow_ms``, after the
body is read, so a reply slower than the client's timeout still lands; ``rate_limit_rps`` and
``rate_limit_burst`` → 429 with ``Retry-After``), plus the PMS's own:
``accept_then_hang`` (the next N charge posts are stored, then answered only after ``hang_s`` seconds,
past the client's timeout: the unknown outcome) and ``conflict_on_repeat`` (any repeated key is ``409``,
as while the first request is still in flight). ``GET /_simulator/stats``: the request counters plus
``postings_stored`` and ``duplicates_refused``. The ``/_simulator`` endpoints are neither faulted nor
authenticated.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recon_pipeline.money import is_iso_currency
from recon_pipeline.simulation.host.faults import FaultDecision, FaultSwitches
from recon_pipeline.simulation.pms.store import ChargeStore, StoredCharge

SERVICE_TYPES = frozenset({"Other", "Accommodation", "FoodAndBeverages"})
VAT_TYPES = frozenset(
    {"Null", "VeryReduced", "Reduced", "Normal", "Without", "Special", "ReducedCovid19", "NormalCovid19"}
)
RECEIPT_TYPES = frozenset({"Custom", "PspReference"})
_PMS_SWITCHES = frozenset({"accept_then_hang", "hang_s", "conflict_on_repeat"})


class PmsSwitches:
    """The PMS's own faults (see the module docstring); thread-safe, set while the server serves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._hang_next = 0
            self._hang_s = 5.0
            self._conflict_on_repeat = False

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Set the given switches; ValueError on an ill-typed one."""
        hang = settings.get("accept_then_hang")
        if hang is not None and not (isinstance(hang, int) and not isinstance(hang, bool) and hang >= 0):
            raise ValueError("accept_then_hang must be a non-negative integer")
        hang_s = settings.get("hang_s")
        if hang_s is not None and not (
            isinstance(hang_s, int | float) and not isinstance(hang_s, bool) and 0 < hang_s <= 60
        ):
            raise ValueError("hang_s must be a number of seconds in (0, 60]")
        conflict = settings.get("conflict_on_repeat")
        if conflict is not None and not isinstance(conflict, bool):
            raise ValueError("conflict_on_repeat must be true or false")
        with self._lock:
            if hang is not None:
                self._hang_next = hang
            if hang_s is not None:
                self._hang_s = float(hang_s)
            if conflict is not None:
                self._conflict_on_repeat = conflict
        return self.state()

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {
                "accept_then_hang": self._hang_next,
                "hang_s": self._hang_s,
                "conflict_on_repeat": self._conflict_on_repeat,
            }

    def take_hang(self) -> float | None:
        """The seconds to hang after storing this post (None: answer at once); counts one of N down."""
        with self._lock:
            if self._hang_next <= 0:
                return None
            self._hang_next -= 1
            return self._hang_s

    @property
    def conflict_on_repeat(self) -> bool:
        with self._lock:
            return self._conflict_on_repeat


class InvalidCharge(ValueError):
    """The body is not a charge Apaleo would take (400, ``messages``)."""


def build_pms_app(api_key: str, faults: dict[str, Any] | None = None) -> Starlette:
    """The simulator app; requests to ``/finance`` need ``Authorization: Bearer {api_key}``.

    ``faults`` sets switches from the start (the same keys as ``POST /_simulator/faults``). The store, the
    switches and the counters are at ``app.state.store``, ``app.state.faults``, ``app.state.pms_faults``."""
    store = ChargeStore()
    switches = FaultSwitches()
    pms = PmsSwitches()
    if faults:
        _configure(switches, pms, faults)

    async def faulted(request: Request) -> tuple[FaultDecision, Response | None]:
        decision = switches.begin(request.url.path)
        if decision.delay_s:
            await asyncio.sleep(decision.delay_s)
        if decision.status is not None:
            headers = {"Retry-After": decision.retry_after} if decision.retry_after is not None else None
            return decision, _messages(decision.status, f"Simulated HTTP {decision.status}", headers)
        if request.headers.get("authorization") != f"Bearer {api_key}":
            return decision, Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return decision, None

    async def post_charge(request: Request) -> Response:
        raw = await request.body()  # received whole before any slowness: a slow reply still lands
        decision, refusal = await faulted(request)
        response = refusal or await _post_charge(request, raw, store, pms)
        switches.end(decision, response.status_code)
        return response

    async def get_folio(request: Request) -> Response:
        decision, refusal = await faulted(request)
        response = refusal or _folio(request.path_params["folio_id"], store)
        switches.end(decision, response.status_code)
        return response

    async def set_faults(request: Request) -> Response:
        try:
            settings = json.loads(await request.body())
            if not isinstance(settings, dict):
                raise ValueError("body must be a JSON object")
            return JSONResponse(_configure(switches, pms, settings))
        except ValueError as error:
            return _messages(400, str(error))

    async def reset_faults(request: Request) -> Response:
        switches.reset()
        pms.reset()
        return JSONResponse({**switches.state(), **pms.state()})

    async def get_stats(request: Request) -> Response:
        return JSONResponse({**switches.stats(), **store.counts()})

    app = Starlette(
        routes=[
            Route("/finance/v1/folio-actions/{folio_id}/charges", post_charge, methods=["POST"]),
            Route("/finance/v1/folios/{folio_id}", get_folio, methods=["GET"]),
            Route("/_simulator/faults", set_faults, methods=["POST"]),
            Route("/_simulator/faults", reset_faults, methods=["DELETE"]),
            Route("/_simulator/stats", get_stats, methods=["GET"]),
        ]
    )
    app.state.store = store
    app.state.faults = switches
    app.state.pms_faults = pms
    return app


def _configure(switches: FaultSwitches, pms: PmsSwitches, settings: dict[str, Any]) -> dict[str, Any]:
    """Split ``settings`` between the generic switches and the PMS's own; ValueError on a bad one."""
    generic = {key: value for key, value in settings.items() if key not in _PMS_SWITCHES}
    own = {key: value for key, value in settings.items() if key in _PMS_SWITCHES}
    pms_state = pms.configure(own)  # validates before the generic ones are set
    return {**switches.configure(generic), **pms_state}


async def _post_charge(request: Request, raw: bytes, store: ChargeStore, pms: PmsSwitches) -> Response:
    folio_id = request.path_params["folio_id"]
    try:
        body = _charge_body(raw)
    except InvalidCharge as error:
        return _messages(400, str(error))
    key = request.headers.get("idempotency-key")
    previous = store.previous(key) if key is not None else None
    if previous is not None and (pms.conflict_on_repeat or previous.body != body):
        store.refuse_duplicate()
        return _messages(409, f"The Idempotency-Key '{key}' was already used for another request")
    currency = store.folio_currency(folio_id)
    if currency is not None and currency != body["amount"]["currency"]:
        return _messages(
            422, f"The currency {body['amount']['currency']} does not match the folio's currency {currency}"
        )
    charge, new = store.add(folio_id, key, body)
    hang_s = pms.take_hang() if new else None
    if hang_s is not None:
        await asyncio.sleep(hang_s)  # stored; the client gave up before this answer
    return JSONResponse(
        {"id": charge.charge_id},
        status_code=201,
        headers={"Location": f"/finance/v1/folios/{folio_id}"},
    )


def _charge_body(raw: bytes) -> dict[str, Any]:
    """The charge as Apaleo validates it; InvalidCharge naming the first offending field."""
    try:
        body = json.loads(raw)
    except ValueError:
        raise InvalidCharge("The request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise InvalidCharge("The request body must be a JSON object")
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidCharge("The Name field is required.")
    if body.get("serviceType") not in SERVICE_TYPES:
        raise InvalidCharge(f"The ServiceType field must be one of {', '.join(sorted(SERVICE_TYPES))}.")
    if body.get("vatType") not in VAT_TYPES:
        raise InvalidCharge(f"The VatType field must be one of {', '.join(sorted(VAT_TYPES))}.")
    amount = body.get("amount")
    if not isinstance(amount, dict):
        raise InvalidCharge("The Amount field is required.")
    value = amount.get("amount")
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidCharge("The Amount.Amount field must be a number.")
    if value == 0:
        raise InvalidCharge("The Amount.Amount field must not be zero.")
    if not is_iso_currency(amount.get("currency")):
        raise InvalidCharge("The Amount.Currency field must be an ISO 4217 currency code.")
    service_date = body.get("serviceDate")
    if service_date is not None:
        try:
            dt.date.fromisoformat(service_date)
        except (TypeError, ValueError):
            raise InvalidCharge("The ServiceDate field must be a date (yyyy-mm-dd).") from None
    receipt = body.get("receipt")
    if receipt is not None and not (
        isinstance(receipt, dict)
        and receipt.get("type") in RECEIPT_TYPES
        and isinstance(receipt.get("number"), str)
        and receipt["number"]
    ):
        raise InvalidCharge("The Receipt field needs a Type (Custom, PspReference) and a Number.")
    return body


def _folio(folio_id: str, store: ChargeStore) -> Response:
    charges = store.folio(folio_id)
    if charges is None:
        return Response(status_code=404)
    return JSONResponse({"id": folio_id, "type": "External", "charges": [_charge(c) for c in charges]})


def _charge(charge: StoredCharge) -> dict[str, Any]:
    fields = ("name", "serviceType", "vatType", "amount", "serviceDate", "receipt")
    return {"id": charge.charge_id, **{k: charge.body[k] for k in fields if k in charge.body}}


def _messages(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"messages": [message]}, status_code=status, headers=headers)
