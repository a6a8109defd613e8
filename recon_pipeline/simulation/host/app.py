"""The provider simulator: a Starlette app serving one registered provider's API subset (its
``ProviderSimulation.simulator_routes``, ``registry.py``) from a SimulatorStore, with fault switches.

One app speaks one provider (their paths overlap: several have ``/v1/refunds``). The host wraps each JSON
handler the provider's routes hand it with counting, faults, authentication, the refusal of query parameters
its endpoint does not take (``wire.Accepts``) and account scoping, in the provider's ``Dialect``; routes that
serve other media (reports) read ``app.state.store`` and ``app.state.api_key``. Fault switches (``faults.py``)
apply to ``/v1`` paths only; the ``/_simulator`` control endpoints are never faulted nor authenticated.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recon_pipeline.errors import ConfigError
from recon_pipeline.simulation.host.faults import FaultSwitches, faulty_page, without_cursor
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.host.wire import (
    Accepts,
    ApiHandler,
    Dialect,
    Endpoint,
    InvalidRequest,
    int_param,
)
from recon_pipeline.simulation.registry import simulation_named


def build_app(store: SimulatorStore, api_key: str | None = None, flavour: str = "stripe") -> Starlette:
    """The simulator app over ``store`` speaking ``flavour`` (a registered provider's name; ValueError
    naming it otherwise); with ``api_key``, ``/v1`` requires the credentials that provider expects.

    The fault switches are at ``app.state.faults`` (a ``FaultSwitches``) as well as over HTTP.
    """
    try:
        simulation = simulation_named(flavour)
    except ConfigError as error:
        raise ValueError(f"simulator flavour: {error}") from None
    faults = FaultSwitches()

    def api(dialect: Dialect, handler: ApiHandler, accepts: Accepts) -> Endpoint:
        """Wrap a /v1 handler with counting, faults, auth, the refusal of parameters its endpoint does not
        take or values it refuses (``accepts``) and account scoping in ``dialect``."""

        async def endpoint(request: Request) -> Response:
            version = request.headers.get(dialect.version_header) if dialect.version_header else None
            decision = faults.begin(request.url.path, sorted(request.query_params), version)
            status = 500
            try:
                if decision.delay_s:
                    await asyncio.sleep(decision.delay_s)
                if decision.status is not None:
                    status = decision.status
                    return _injected(dialect, status, decision.retry_after, decision.message)
                if not dialect.authorized(request, api_key):
                    status = 401
                    return JSONResponse(dialect.unauthorized(), status_code=401)
                if decision.paging is not None:  # the page is the fault's, whatever the cursor says
                    scope = {**request.scope, "query_string": without_cursor(request.scope["query_string"])}
                    request = Request(scope, request.receive)
                try:
                    accepts.check(request, dialect.unknown_parameter)
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
            return JSONResponse({"error": {"message": str(error)}}, status_code=400)

    async def reset_faults(request: Request) -> Response:
        faults.reset()
        return JSONResponse(faults.state())

    async def get_stats(request: Request) -> Response:
        return JSONResponse(faults.stats())

    async def get_requests(request: Request) -> Response:
        return JSONResponse({"requests": faults.request_log()})

    async def reset_stats(request: Request) -> Response:
        faults.reset_stats()
        return JSONResponse(faults.stats())

    routes = [
        *simulation.simulator_routes(store, api),
        Route("/_simulator/faults", set_faults, methods=["POST"]),
        Route("/_simulator/faults", reset_faults, methods=["DELETE"]),
        Route("/_simulator/stats", get_stats, methods=["GET"]),
        Route("/_simulator/requests", get_requests, methods=["GET"]),
        Route("/_simulator/reset-stats", reset_stats, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.faults = faults
    app.state.store = store
    app.state.api_key = api_key
    return app


def _is_list(payload: dict[str, Any]) -> bool:
    """Whether an answer is a page of a list: Stripe's ``list`` or Razorpay's ``collection``."""
    return payload.get("object") == "list" or payload.get("entity") == "collection"


def _injected(dialect: Dialect, status: int, retry_after: str | None, message: str | None) -> Response:
    """An injected status's answer; a refusal with a ``message`` (the ``reject`` switch) in the shape of
    the provider's own refusal of an invalid request."""
    headers = {"Retry-After": retry_after} if retry_after is not None else None
    body = dialect.injected(status) if message is None else dialect.invalid(InvalidRequest(message))
    return JSONResponse(body, status_code=status, headers=headers)
