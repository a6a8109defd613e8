"""Fault switches and traffic counters of the simulator, shared by the HTTP control endpoints and the API.

A client that survives only the happy path is not tested: these switches make the simulator answer like a
real provider on a bad day (rate limits, 5xx, a pull that dies mid-way, slow replies, cut-off bodies), and
the counters let a test assert what the client actually did (retries, concurrency bound), and the request
log when and how (``GET /_simulator/requests``: a rate bound is judged on the provider's side of the wire;
each entry also names the query parameters sent and the API version pinned, if any).
Every method takes the lock, so the switches may be set from a test thread while the server serves.

``rate_limit_rps`` enforces a provider's rate limit: a token bucket per simulator (a provider limits per
key), ``rate_limit_burst`` tokens deep (default one second's worth), refilled at the rate; a request that
finds the bucket empty gets 429 with ``Retry-After`` (whole seconds until the next token, at least 1, as
the header's grammar allows). It applies to every API path, whatever ``path_prefix`` says, and before
the injected statuses: a request over the limit never reaches them.

``reject`` refuses one endpoint for good, as a provider refuses a request it will never accept (a strict
Stripe's ``400 invalid_request_error`` on an expansion it does not grant): every request to exactly that
``path`` is answered ``status`` (a permanent 4xx, default 400) with ``message`` in the provider's own error
shape, whatever ``path_prefix`` says; the request is counted like any other, so a test sees how often the
client sent what was refused.

``paging`` breaks list paging the ways a provider can. Both ignore the cursor (Stripe's ``starting_after``,
Razorpay's ``skip``): ``repeat`` serves the first page again and, on Stripe, says ``has_more`` always;
``endless`` answers every list with a full page of fresh ids and more to come, forever.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from recon_pipeline.providers.errors import is_permanent_status

PAGING_FAULTS = ("repeat", "endless")
CURSOR_PARAMS = frozenset({"starting_after", "skip"})  # Stripe's cursor, Razorpay's offset
# Arrivals kept for GET /_simulator/requests (the newest; enough for a test's whole run).
REQUEST_LOG_SIZE = 100_000


@dataclass(frozen=True)
class FaultDecision:
    """What to do with one API request: an injected status (None: serve it), and whether to cut the body."""

    status: int | None
    retry_after: str | None
    truncate: bool
    delay_s: float
    in_scope: bool  # the path matches ``path_prefix``: its success counts toward ``fail_after_requests``
    paging: str | None = None  # a PAGING_FAULTS entry: how to break the paging of a list answer
    message: str | None = None  # a refusal's message (``reject``), said in the provider's error shape


@dataclass(frozen=True)
class Rejection:
    """The ``reject`` switch: every request to ``path`` answered ``status`` saying ``message``."""

    path: str
    status: int
    message: str

    @classmethod
    def of(cls, setting: Any) -> Rejection:
        """The switch from its JSON form; ValueError naming what is wrong."""
        if not isinstance(setting, dict) or not isinstance(setting.get("path"), str):
            raise ValueError('reject must be null or an object with a path, e.g. {"path": "/v1/charges"}')
        unknown = set(setting) - {"path", "status", "message"}
        if unknown:
            raise ValueError(f"reject: unknown keys {sorted(unknown)}")
        status = setting.get("status", 400)
        if not (_is_int(status) and is_permanent_status(status)):
            raise ValueError("reject.status must be a permanent 4xx (not 404, 408, 409, 425 or 429)")
        message = setting.get("message", f"Simulated permanent refusal (HTTP {status})")
        if not isinstance(message, str) or not message:
            raise ValueError("reject.message must be a non-empty string")
        return cls(setting["path"], status, message)


@dataclass(frozen=True)
class LoggedRequest:
    """One arrival in the request log."""

    at: float
    path: str
    params: tuple[str, ...]
    version: str | None


_NO_FAULT = FaultDecision(status=None, retry_after=None, truncate=False, delay_s=0.0, in_scope=False)


_SETTABLE = frozenset(
    {
        "statuses",
        "retry_after",
        "fail_after_requests",
        "slow_ms",
        "truncate_next",
        "path_prefix",
        "rate_limit_rps",
        "rate_limit_burst",
        "paging",
        "reject",
    }
)


class FaultSwitches:
    """Thread-safe switches (see ``configure``) plus counters (see ``stats``); ``clock`` drives the rate
    limit's token bucket (monotonic seconds)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self.reset()
        self.reset_stats()

    def reset(self) -> None:
        """All faults off."""
        with self._lock:
            self._statuses: list[int] = []
            self._retry_after = "0"
            self._fail_after: int | None = None
            self._successes_since_armed = 0
            self._slow_ms = 0
            self._truncate_next = 0
            self._path_prefix: str | None = None
            self._rate: float | None = None
            self._burst: int | None = None
            self._tokens = 0.0
            self._refilled_at = self._clock()
            self._paging: str | None = None
            self._endless_pages = 0
            self._reject: Rejection | None = None

    def reset_stats(self) -> None:
        with self._lock:
            self._requests = 0
            self._rate_limited = 0
            self._by_status: Counter[int] = Counter()
            self._by_path: Counter[str] = Counter()
            self._in_flight = 0
            self._max_in_flight = 0
            self._arrivals: deque[LoggedRequest] = deque(maxlen=REQUEST_LOG_SIZE)

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Set the given switches, leave the others; raise ValueError on an unknown or ill-typed one.

        ``statuses``: statuses for the next N (matching) API requests, e.g. ``[429, 503]``;
        ``retry_after``: the ``Retry-After`` of injected 429s (seconds, default ``"0"``);
        ``fail_after_requests``: after that many successful requests from now, every request gets 500;
        ``slow_ms``: delay every response; ``truncate_next``: cut the next N bodies in half;
        ``path_prefix``: limit all of the above to paths starting with it;
        ``rate_limit_rps``: requests per second over which the answer is 429 (a positive number; null
        turns the limit off); ``rate_limit_burst``: the bucket's depth (positive integer; null: one
        second's worth). Setting either refills the bucket; ``paging``: ``repeat``, ``endless`` or null
        (see the module's docstring); ``reject``: ``{"path", "status", "message"}`` or null (see the
        module's docstring).
        """
        unknown = set(settings) - _SETTABLE
        if unknown:
            raise ValueError(f"unknown fault switches: {sorted(unknown)}")
        statuses = settings.get("statuses")
        if statuses is not None and not (
            isinstance(statuses, list) and all(_is_int(s) and 400 <= s <= 599 for s in statuses)
        ):
            raise ValueError("statuses must be a list of integers in 400..599")
        for name in ("fail_after_requests", "slow_ms", "truncate_next"):
            value = settings.get(name)
            if value is not None and not (_is_int(value) and value >= 0):
                raise ValueError(f"{name} must be a non-negative integer")
        rate = settings.get("rate_limit_rps")
        if rate is not None and not (_is_number(rate) and 0 < rate < math.inf):
            raise ValueError("rate_limit_rps must be a positive number or null")
        burst = settings.get("rate_limit_burst")
        if burst is not None and not (_is_int(burst) and burst >= 1):
            raise ValueError("rate_limit_burst must be a positive integer or null")
        paging = settings.get("paging")
        if paging is not None and paging not in PAGING_FAULTS:
            raise ValueError(f"paging must be one of {', '.join(PAGING_FAULTS)} or null")
        reject = None if settings.get("reject") is None else Rejection.of(settings["reject"])
        with self._lock:
            if "reject" in settings:
                self._reject = reject
            if "paging" in settings:
                self._paging = paging
            if statuses is not None:
                self._statuses = list(statuses)
            if "retry_after" in settings:
                self._retry_after = str(settings["retry_after"])
            if "fail_after_requests" in settings:
                self._fail_after = settings["fail_after_requests"]
                self._successes_since_armed = 0
            if settings.get("slow_ms") is not None:
                self._slow_ms = settings["slow_ms"]
            if settings.get("truncate_next") is not None:
                self._truncate_next = settings["truncate_next"]
            if "path_prefix" in settings:
                self._path_prefix = settings["path_prefix"]
            if "rate_limit_rps" in settings:
                self._rate = None if rate is None else float(rate)
            if "rate_limit_burst" in settings:
                self._burst = burst
            if {"rate_limit_rps", "rate_limit_burst"} & settings.keys():
                self._tokens, self._refilled_at = float(self._bucket_depth()), self._clock()
        return self.state()

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {
                "statuses": list(self._statuses),
                "retry_after": self._retry_after,
                "fail_after_requests": self._fail_after,
                "successes_since_armed": self._successes_since_armed,
                "slow_ms": self._slow_ms,
                "truncate_next": self._truncate_next,
                "path_prefix": self._path_prefix,
                "rate_limit_rps": self._rate,
                "rate_limit_burst": self._bucket_depth() if self._rate is not None else self._burst,
                "paging": self._paging,
                "reject": None if self._reject is None else asdict(self._reject),
            }

    def begin(self, path: str, params: Sequence[str] = (), version: str | None = None) -> FaultDecision:
        """Count an API request as arrived and in flight (with the names of its query ``params`` and the
        API ``version`` it pins, for the request log), and decide its fault."""
        with self._lock:
            self._requests += 1
            self._by_path[path] += 1
            self._arrivals.append(LoggedRequest(self._clock(), path, tuple(params), version))
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            wait_s = self._take_token()
            if wait_s is not None:
                self._rate_limited += 1
                return FaultDecision(
                    status=429,
                    retry_after=str(max(1, math.ceil(wait_s))),
                    truncate=False,
                    delay_s=0.0,
                    in_scope=False,
                )
            if self._reject is not None and path == self._reject.path:
                return FaultDecision(
                    status=self._reject.status,
                    retry_after=None,
                    truncate=False,
                    delay_s=0.0,
                    in_scope=True,
                    message=self._reject.message,
                )
            if self._path_prefix is not None and not path.startswith(self._path_prefix):
                return _NO_FAULT
            delay_s = self._slow_ms / 1000
            if self._statuses:
                status = self._statuses.pop(0)
                retry_after = self._retry_after if status == 429 else None
                return FaultDecision(
                    status=status, retry_after=retry_after, truncate=False, delay_s=delay_s, in_scope=True
                )
            if self._fail_after is not None and self._successes_since_armed >= self._fail_after:
                return FaultDecision(
                    status=500, retry_after=None, truncate=False, delay_s=delay_s, in_scope=True
                )
            truncate = self._truncate_next > 0
            if truncate:
                self._truncate_next -= 1
            return FaultDecision(
                status=None,
                retry_after=None,
                truncate=truncate,
                delay_s=delay_s,
                in_scope=True,
                paging=self._paging,
            )

    def endless_page_number(self) -> int:
        """A fresh number for the next endless page (its ids must never repeat)."""
        with self._lock:
            self._endless_pages += 1
            return self._endless_pages

    def _bucket_depth(self) -> int:
        if self._burst is not None:
            return self._burst
        return max(1, int(self._rate or 1))

    def _take_token(self) -> float | None:
        """Take a token of the rate limit's bucket (None: taken or no limit), else the seconds until the
        next token. Called under the lock."""
        if self._rate is None:
            return None
        now = self._clock()
        depth = self._bucket_depth()
        self._tokens = min(float(depth), self._tokens + (now - self._refilled_at) * self._rate)
        self._refilled_at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return None
        return (1 - self._tokens) / self._rate

    def end(self, decision: FaultDecision, status: int) -> None:
        """Count the response of an API request and take it out of flight."""
        with self._lock:
            self._in_flight -= 1
            self._by_status[status] += 1
            if decision.in_scope and status < 400:
                self._successes_since_armed += 1

    def request_log(self) -> list[dict[str, Any]]:
        """The latest API requests (at most REQUEST_LOG_SIZE) in arrival order: ``at`` is the arrival on
        the simulator's clock (monotonic seconds), so tests can count requests per second as the provider
        saw them; ``params`` the query parameters' names, ``version`` the pinned API version (or None)."""
        with self._lock:
            return [
                {"at": r.at, "path": r.path, "params": list(r.params), "version": r.version}
                for r in self._arrivals
            ]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "api_requests": self._requests,
                "rate_limited": self._rate_limited,
                "responses_by_status": {str(status): n for status, n in sorted(self._by_status.items())},
                "requests_by_path": dict(self._by_path),
                "in_flight": self._in_flight,
                "max_in_flight": self._max_in_flight,
            }


def without_cursor(query_string: bytes) -> bytes:
    """A request's query string with its paging cursor removed (the paging faults)."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    return urlencode([(key, value) for key, value in pairs if key not in CURSOR_PARAMS]).encode("latin-1")


def faulty_page(payload: dict[str, Any], paging: str, size: int, number: int) -> dict[str, Any]:
    """A list answer (Stripe's ``list`` or Razorpay's ``collection``) with its paging broken: ``repeat``
    says there is more (Stripe; a Razorpay page says so by being full); ``endless`` is a full page of
    ``size`` fresh minimal objects (only an id: the client gives up on the paging before it reads them)."""
    if paging == "endless":
        items = [{"id": f"endless_{number}_{i}", "entity_id": f"endless_{number}_{i}"} for i in range(size)]
    else:
        items = payload.get("data", payload.get("items", []))
    if payload.get("object") == "list":
        return {**payload, "data": items, "has_more": True}
    return {**payload, "items": items, "count": len(items)}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
