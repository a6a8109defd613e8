"""What the simulator's flavours share on the wire: handler types, bad-request errors, integer parameters,
and the ``Dialect`` that says how one provider authenticates, scopes requests and words its errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

ApiResult = tuple[int, dict[str, Any]]
ApiHandler = Callable[[Request, str | None], ApiResult]  # (request, account scope) -> (status, body)
Endpoint = Callable[[Request], Awaitable[Response]]


class InvalidRequest(Exception):
    """A request the provider would answer with 400 (Stripe: ``invalid_request_error``, with ``code``
    such as ``parameter_unknown`` where Stripe gives one)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.param = param
        self.code = code


def accepting(params: frozenset[str], handler: ApiHandler) -> ApiHandler:
    """``handler`` behind the provider's refusal of query parameters the endpoint does not take (Stripe:
    400 ``parameter_unknown``), so that an adapter sending one fails here as it would in production."""

    def checked(request: Request, account: str | None) -> ApiResult:
        unknown = sorted(set(request.query_params) - params)
        if unknown:
            raise InvalidRequest(
                f"Received unknown parameter: {unknown[0]}", param=unknown[0], code="parameter_unknown"
            )
        return handler(request, account)

    return checked


def int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise InvalidRequest(f"Invalid integer: {raw}", param=name) from None


@dataclass(frozen=True)
class Dialect:
    """One provider's conventions around every API handler."""

    authorized: Callable[[Request, str | None], bool]  # (request, the simulator's api key)
    account: Callable[[Request], str | None]  # the account scope the request asks for
    invalid: Callable[[InvalidRequest], dict[str, Any]]  # body of a 400
    unauthorized: Callable[[], dict[str, Any]]  # body of a 401
    injected: Callable[[int], dict[str, Any]]  # body of an injected fault status


# How a provider's simulator routes have the host wrap a JSON handler: (its dialect, the handler) -> endpoint.
ApiWrapper = Callable[[Dialect, ApiHandler], Endpoint]
