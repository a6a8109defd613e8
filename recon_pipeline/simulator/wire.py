"""What the simulator's flavours share on the wire: handler types, bad-request errors, integer parameters,
and the ``Dialect`` that says how one provider authenticates, scopes requests and words its errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

ApiResult = tuple[int, dict[str, Any]]
ApiHandler = Callable[[Request, str | None], ApiResult]  # (request, account scope) -> (status, body)


class InvalidRequest(Exception):
    """A request the provider would answer with 400 (Stripe: ``invalid_request_error``)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


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
