"""What the simulator's flavours share on the wire: handler types, bad-request errors, integer parameters,
the ``Dialect`` that says how one provider authenticates, scopes requests and words its errors, and the
query parameters each endpoint accepts.

Strictness is a declaration: a provider's simulator routes hand the host's wrapper (``ApiWrapper``) each
handler together with the query parameters its endpoint takes (``Accepts``, from the provider's API
reference), and the host refuses any other parameter before the handler runs, with the provider's own
400 (``Dialect.unknown_parameter``: Stripe ``parameter_unknown``, Razorpay ``BAD_REQUEST_ERROR``), and any
value its ``rule`` refuses (an expansion the provider does not document: ``stripe/documented.py``). A route
added for a new endpoint (disputes, payouts, balance transactions) declares its parameters the same way,
and an adapter that sends one the provider would refuse fails against the simulator as it would in
production.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from recon_pipeline.providers.documented import array_name, unknown_parameter

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


# A further rule over a request's query items (in the order sent) that only names cannot express: the
# refusal of the first value the provider does not document (an expansion path), None when all are.
QueryRule = Callable[[Sequence[tuple[str, str]]], InvalidRequest | None]


@dataclass(frozen=True)
class Accepts:
    """The query parameters one endpoint takes: exact names (``limit``, ``expand[]``, ``created[gte]``),
    and the ``rule`` its values answer to (Stripe's documented expansions), if any."""

    params: frozenset[str]
    rule: QueryRule | None = None

    @classmethod
    def of(cls, *groups: Iterable[str], rule: QueryRule | None = None) -> Accepts:
        return cls(frozenset(name for group in groups for name in group), rule)

    def check(self, request: Request, unknown_parameter: Callable[[str], InvalidRequest]) -> None:
        """Raise the provider's refusal (``unknown_parameter``) of a query parameter the endpoint does not
        take, else the ``rule``'s refusal of a value, if any."""
        unknown = self.unknown(request)
        if unknown is not None:
            raise unknown_parameter(unknown)
        refused = None if self.rule is None else self.rule(request.query_params.multi_items())
        if refused is not None:
            raise refused

    def unknown(self, request: Request) -> str | None:
        """The first (by name) query parameter of ``request`` the endpoint does not take, None if none.
        An array item may be sent indexed (``expand[0]``, as Stripe's SDKs send it) or not (``expand[]``)."""
        return unknown_parameter(self.params, request.query_params.multi_items())


def array_param(request: Request, name: str) -> list[str]:
    """The values of the array parameter ``name`` (``expand`` reads ``expand[]`` and ``expand[N]``), in
    the order sent."""
    return [value for key, value in request.query_params.multi_items() if array_name(key) == f"{name}[]"]


def int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        message = f"Invalid integer: {raw}"
        raise InvalidRequest(message, param=name, code="parameter_invalid_integer") from None


@dataclass(frozen=True)
class Dialect:
    """One provider's conventions around every API handler."""

    authorized: Callable[[Request, str | None], bool]  # (request, the simulator's api key)
    account: Callable[[Request], str | None]  # the account scope the request asks for
    invalid: Callable[[InvalidRequest], dict[str, Any]]  # body of a 400
    unauthorized: Callable[[], dict[str, Any]]  # body of a 401
    injected: Callable[[int], dict[str, Any]]  # body of an injected fault status
    unknown_parameter: Callable[[str], InvalidRequest]  # the refusal of a parameter the endpoint lacks
    version_header: str | None = None  # the header that pins an API version, kept in the request log


# How a provider's simulator routes have the host wrap a JSON handler: (its dialect, the handler, the
# parameters its endpoint accepts) -> endpoint.
ApiWrapper = Callable[[Dialect, ApiHandler, Accepts], Endpoint]
