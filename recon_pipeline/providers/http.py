"""One HTTP client per process for a provider's API: bounded concurrency, bounded retries, no secrets in logs.

The provider rate-limits per key, so every request of the process shares one ``BoundedSemaphore``
(``RECON_PROVIDER_MAX_CONCURRENCY``) and one connection pool. Transient failures (408, 409, 425, 429, 5xx,
transport errors, bodies that are not JSON) are retried with capped exponential backoff and full jitter, so
that many workers hitting the same outage do not retry in lockstep; once the bound is reached the failure
surfaces as ``ProviderUnavailable`` (an unknown outcome), never as an empty answer. A permanent refusal
(``errors.is_permanent_status``: any other 4xx but 404) is sent once and raised as
``ProviderRequestRejected``: one line naming the provider, the method and path (never the query, whose
values carry ids and times) and the provider's own message in its error shape (``_provider_message``).
A 429's ``Retry-After`` is waited out in full up to ``RECON_PROVIDER_MAX_RETRY_AFTER_S`` (30 s); a longer
one fails the request at once (``RetryAfterTooLong``): retrying sooner would only be refused again, and
sleeping hours holds a run.

Requests go through urllib3's connection pool (through the proxy ``HTTPS_PROXY``/``NO_PROXY`` name for the
provider, as httpx and requests honour them): it costs about half of httpx's CPU a request, and a fleet's
night on two cores is bound by CPU as much as by the provider's rate. It keeps no cookies: the providers'
APIs authenticate by key, and a cookie one of them sets is never sent back. URLs are still built as httpx
builds them (``_url``), without a parse where none could change them.

A provider's rate limit is a rate, not a concurrency: eight connections answered in 5 ms each are 1,600
requests a second. ``RECON_PROVIDER_MAX_RPS`` (or ``max_rps``) paces the request starts of one client so
the provider's limit is never reached, rather than reaching it and paying a ``Retry-After`` for each 429.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import random
import re
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.message import Message
from types import TracebackType
from typing import Any, Protocol, TypeVar

import httpx
import orjson
import urllib3

from recon_pipeline import config
from recon_pipeline.providers.errors import (
    NOT_FOUND,
    ProviderRequestRejected,
    ProviderUnavailable,
    RetryAfterTooLong,
    is_permanent_status,
)

logger = logging.getLogger(__name__)

MAX_RPS_VARIABLE = "RECON_PROVIDER_MAX_RPS"
DEFAULT_MAX_RETRY_AFTER_S = 30
PROVIDER_MESSAGE_CHARS = 300  # a provider's error message, cut: the line stays one line in a table
T = TypeVar("T")
# A path no URL parse changes: segments of unreserved characters, none starting with "." (a dot segment is
# resolved by a parse) and none empty; an id quoted with "%" takes httpx's parse.
_SEGMENT = r"[A-Za-z0-9_~-][A-Za-z0-9._~-]*"
_PLAIN_PATH = re.compile(rf"/?(?:{_SEGMENT}(?:/{_SEGMENT})*/?)?")


def max_rps_from_env() -> float | None:
    """RECON_PROVIDER_MAX_RPS as a positive integer, None (no client-side limit) when unset or empty."""
    raw = os.environ.get(MAX_RPS_VARIABLE, "").strip()
    return float(config.positive_int(MAX_RPS_VARIABLE, raw)) if raw else None


def max_retry_after_s_from_env() -> int:
    """RECON_PROVIDER_MAX_RETRY_AFTER_S: the longest ``Retry-After`` (seconds) a provider client waits out;
    a longer one fails the request at once rather than stall the run."""
    return config.positive_int_from_env("RECON_PROVIDER_MAX_RETRY_AFTER_S", DEFAULT_MAX_RETRY_AFTER_S)


class RateLimiter(Protocol):
    """What a provider client needs of a limiter: wait for the next request's slot (``RequestRateLimiter``
    in one process, ``providers/ratelimit.SharedRateLimiter`` for the whole deployment)."""

    def acquire(self) -> float:
        """Block until a request may start; returns the seconds waited."""
        ...

    def hold(self, count: int) -> None:
        """Reserve slots for the next ``count`` requests at once, where reserving costs a round trip."""
        ...


# How late past its slot a request may still start: one interval, but never under two of the interpreter's
# thread switches (5 ms each), else at high rates a thread that waited for the GIL would miss most slots.
LATE_FLOOR_S = 0.01
# Fresh slots one acquire takes for a thread that keeps waking late; then it starts on the last one, late.
MAX_MISSED_SLOTS = 8


def late_by(interval_s: float) -> float:
    """How late past its slot a request may start at ``interval_s`` between slots."""
    return max(interval_s, LATE_FLOOR_S)


def start_on_a_slot(
    next_slot: Callable[[], float], late_s: float, clock: Callable[[], float], sleep: Callable[[float], None]
) -> float:
    """Sleep until the slot ``next_slot`` gives (on ``clock``); the seconds slept. A thread that wakes more
    than ``late_s`` past its slot (a loaded host) takes a fresh one rather than start late beside requests
    on time, so every request starts within ``late_s`` of a slot and a second never holds more than
    ``rate · (1 + late_s) + 1`` starts. A missed slot is spent, never given back."""
    slept = 0.0
    for _ in range(MAX_MISSED_SLOTS + 1):
        slot = next_slot()
        wait = slot - clock()
        if wait > 0:
            sleep(wait)
            slept += wait
        if clock() - slot <= late_s:
            break
    return slept


class RequestRateLimiter:
    """At most ``rate`` request starts per second, evenly spaced, across every thread that shares it.

    Each ``acquire`` reserves the next free slot (``1 / rate`` after the previous one) under a lock and
    sleeps until it (``start_on_a_slot``: one that wakes late takes a fresh slot). No credit builds up while
    idle: a burst after a pause is paced too. So a provider
    limiting to the same rate never answers 429, whatever the threads do, as long as its bucket holds
    the few requests that network jitter can bunch together (the simulator's default holds a second's
    worth).
    """

    def __init__(
        self,
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not 0 < rate < math.inf:
            raise ValueError("rate must be a positive, finite number of requests per second")
        self.rate = rate
        self._interval = 1.0 / rate
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._next_slot = -math.inf

    def acquire(self) -> float:
        """Wait for this request's slot; returns the seconds waited."""
        return start_on_a_slot(self._reserve, late_by(self._interval), self._clock, self._sleep)

    def _reserve(self) -> float:
        """The next free slot, ``1 / rate`` after the previous one and never in the past."""
        with self._lock:
            slot = max(self._clock(), self._next_slot)
            self._next_slot = slot + self._interval
        return slot

    def hold(self, count: int) -> None:
        """Nothing to do: a slot here costs no round trip, so reserving several at once saves nothing."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry; ``timeout_s`` bounds each attempt. ``max_retry_after_s``
    defaults to RECON_PROVIDER_MAX_RETRY_AFTER_S, read when the policy is made (never at import)."""

    max_attempts: int = 5
    base_delay_s: float = 0.25
    max_delay_s: float = 8.0
    max_retry_after_s: float = field(default_factory=max_retry_after_s_from_env)
    timeout_s: float = 15.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Full jitter after the ``attempt``-th (0-based) failed attempt."""
        return rng.uniform(0, min(self.max_delay_s, self.base_delay_s * 2**attempt))


class ProviderHttp:
    """A thread-safe JSON GET client over one connection pool; use as a context manager or ``close()``.

    ``max_rps`` caps request starts per second (retries included) for this client and every thread using
    it; None reads ``RECON_PROVIDER_MAX_RPS`` (unset: no cap), ``math.inf`` means no cap whatever the
    environment says. The cap is per client; ``limiter`` replaces it with one shared beyond the client
    (``recon_pipeline.providers.ratelimit.SharedRateLimiter``: one rate for every process of the deployment).
    ``provider`` is the name its errors give the API (the registered provider whose API it speaks).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        max_concurrency: int = 8,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        max_rps: float | None = None,
        limiter: RateLimiter | None = None,
        provider: str = "provider",
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        rate = max_rps_from_env() if max_rps is None else max_rps
        if rate is not None and not rate > 0:
            raise ValueError("max_rps must be positive")
        self.retry = retry or RetryPolicy()
        self.max_concurrency = max_concurrency
        self.max_rps = rate if rate is not None and math.isfinite(rate) else None
        self._limiter: RateLimiter | None = limiter
        if limiter is None and self.max_rps is not None:
            self._limiter = RequestRateLimiter(self.max_rps)
        self._api_key = api_key
        self.provider = provider
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()
        # The semaphore is the bound; the pool is sized to match so no socket idles. Waiting happens on the
        # semaphore, before the request, so a queued request does not spend its timeout in the pool.
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._headers = {**REQUEST_HEADERS, **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
        base = httpx.URL(base_url)
        if not base.raw_path.endswith(b"/"):  # as httpx takes a base URL: its path ends in "/"
            base = base.copy_with(raw_path=base.raw_path + b"/")
        self._pool = _connections(base, max_concurrency, self.retry.timeout_s)
        # Threads for a call's concurrent requests (``objects.fetch_each``, a pull's lists), started once: a
        # pool per call paid a thread start per request.
        self.workers = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="provider-http")
        self._base_url = str(base.copy_with(raw_path=b"")) + base.raw_path.decode("ascii")

    def reserve_slots(self, count: int) -> None:
        """The caller is about to send ``count`` requests (a page of by-id reads): announce them to the
        limiter (``RateLimiter.hold``), which may then reserve their slots in one round trip."""
        if self._limiter is not None:
            self._limiter.hold(count)

    def get_json(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any] | None:
        """GET ``path`` and return its JSON object, or None for 404.

        Raises ProviderUnavailable when retries are exhausted, ProviderRequestRejected on a permanent 4xx.
        """
        return self._get(path, params, headers, _json_object)

    def get_text(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> str | None:
        """GET ``path`` and return its body as text (a report file: Adyen's settlement CSVs), or None for
        404; a body that is not text in its declared encoding is retried like invalid JSON. Raises as
        ``get_json`` does."""
        return self._get(path, params, headers, _text)

    def _get(
        self,
        path: str,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        read: Callable[[urllib3.BaseHTTPResponse], T],
    ) -> T | None:
        """The retried GET of ``get_json`` / ``get_text``; ``read`` turns a 2xx response into the answer
        or raises ValueError (retried: a cut-off or corrupt body is transient)."""
        last_problem = "no attempt made"
        url = self._url(path, params)
        endpoint = f"{self.provider} GET {path.partition('?')[0]}"
        for attempt in range(self.retry.max_attempts):
            retry_after: float | None = None
            try:
                with self._slots:
                    if self._limiter is not None:  # paced inside the slot: the request starts on time
                        self._limiter.acquire()
                    response = self._pool.urlopen(
                        "GET", url, headers={**self._headers, **(headers or {})}, **REQUEST_OPTIONS
                    )
            except urllib3.exceptions.HTTPError as error:  # no connection, a timeout, a cut-off body
                last_problem = f"{type(error).__name__}: {error}"
                status: int | str = type(error).__name__
            else:
                status = response.status
                if status == NOT_FOUND:
                    return None
                if is_permanent_status(status):
                    message = self._redact(_provider_message(response), url)
                    raise ProviderRequestRejected(f"{endpoint} rejected: HTTP {status} {message}")
                if status >= 400:  # 408, 409, 425, 429, 5xx
                    last_problem = f"HTTP {status}"
                    if status == 429:
                        retry_after = retry_after_s(response.headers.get("retry-after"))
                        if retry_after is not None and retry_after > self.retry.max_retry_after_s:
                            raise RetryAfterTooLong(
                                f"{endpoint}: HTTP 429 asks to retry after {retry_after:g} s, beyond "
                                f"the {self.retry.max_retry_after_s:g} s allowed "
                                "(RECON_PROVIDER_MAX_RETRY_AFTER_S)"
                            )
                else:
                    try:
                        return read(response)
                    except ValueError as error:
                        last_problem = f"invalid body (HTTP {status}): {error}"
                        status = "invalid-body"
            if attempt + 1 >= self.retry.max_attempts:
                break
            delay = self._delay(attempt, retry_after)
            logger.warning(
                "%s failed (%s); attempt %d/%d, retrying in %.2f s",
                endpoint,
                status,
                attempt + 1,
                self.retry.max_attempts,
                delay,
            )
            self._sleep(delay)
        raise ProviderUnavailable(
            f"{endpoint} failed after {self.retry.max_attempts} attempts; last: {last_problem}"
        )

    def _url(self, path: str, params: Mapping[str, Any] | None) -> str:
        """``path`` on the base URL with ``params`` merged into its query, as httpx would send it. A plain
        path (the API's own, ids included) and the query httpx encodes are joined as they are: a parse
        would change neither, and it cost a tenth of a request's CPU. Any other path is parsed once by
        httpx (given a relative path and params, httpx would parse it three times)."""
        if params:  # replaces a query in ``path``, as httpx's own merge does
            bare = path.partition("?")[0]
            query = str(httpx.QueryParams(params))
            if _PLAIN_PATH.fullmatch(bare):
                return f"{self._base_url}{bare.lstrip('/')}?{query}"
            path = f"{bare}?{query}"
        return str(httpx.URL(self._base_url + path.lstrip("/")))

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:  # within max_retry_after_s: get_json refused a longer one
            return retry_after
        with self._rng_lock:  # random.Random is not documented as thread-safe
            return self.retry.backoff(attempt, self._rng)

    def _redact(self, text: str, url: str) -> str:
        """``text`` without the API key, and with the request's query values that could carry an id or a
        time (all but expansion paths, which name fields) replaced by their parameter's name."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        for name, value in httpx.URL(url).params.multi_items():
            if len(value) >= 4 and not name.startswith("expand"):
                text = text.replace(value, f"<{name}>")
        return text

    def close(self) -> None:
        self.workers.shutdown()
        self._pool.clear()

    def __enter__(self) -> ProviderHttp:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# Every request's own headers (urllib3 sends its name and no Accept otherwise); a call's come on top.
REQUEST_HEADERS = {"Accept": "application/json", "Accept-Encoding": "gzip", "User-Agent": "recon-pipeline"}
# Each attempt is one request: ``_get`` retries, and a redirect is the provider's answer, not followed.
REQUEST_OPTIONS: dict[str, Any] = {"retries": False, "redirect": False, "preload_content": True}


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verifying TLS context (certifi's CA bundle), built once per process: building one
    reads the bundle (~0.1 s), which every client (one per asset that calls the provider, the PMS
    adapter's, the tests') would otherwise pay again."""
    return httpx.create_ssl_context()


def _connections(base: httpx.URL, size: int, timeout_s: float) -> urllib3.PoolManager:
    """``size`` kept-alive connections to the provider (through the proxy the environment names for it,
    unless ``NO_PROXY`` exempts its host), each attempt bounded by ``timeout_s`` to connect and to read."""
    options: dict[str, Any] = {
        "num_pools": 1,
        "maxsize": size,
        "block": True,
        "timeout": urllib3.Timeout(connect=timeout_s, read=timeout_s),
        "ssl_context": tls_context(),
    }
    proxy = urllib.request.getproxies().get(base.scheme)
    if proxy and not urllib.request.proxy_bypass(base.host):
        return urllib3.ProxyManager(proxy, **options)
    return urllib3.PoolManager(**options)


def _json_object(response: urllib3.BaseHTTPResponse) -> dict[str, Any]:
    """The body as a JSON object; ValueError for anything else. Decoded by orjson (a third of the standard
    library's CPU on a provider's list pages): JSON between systems is UTF-8 (RFC 8259), and anything
    else, NaN, nesting past 1,024 levels or a number past a double's range included, is not JSON here."""
    try:
        body = orjson.loads(response.data)
    except orjson.JSONDecodeError as error:  # a ValueError: bad JSON or UTF-8, too deep, out of range
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(body, dict):
        raise ValueError("JSON body is not an object")
    return body


def _text(response: urllib3.BaseHTTPResponse) -> str:
    """The body decoded strictly (its declared charset, else UTF-8); UnicodeDecodeError is a ValueError."""
    return response.data.decode(_charset(response) or "utf-8")


def _charset(response: urllib3.BaseHTTPResponse) -> str | None:
    """The charset the response's ``Content-Type`` declares, if any."""
    declared = Message()
    declared["content-type"] = response.headers.get("content-type", "")
    return declared.get_content_charset()


def retry_after_s(raw: str | None) -> float | None:
    """A ``Retry-After`` header's seconds; None when absent or an HTTP date (then the backoff applies)."""
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None


def _provider_message(response: urllib3.BaseHTTPResponse) -> str:
    """The provider's own error, on one line: its type and code in parentheses, then its message.

    One reader serves every registered provider's error shape, as they differ only in field names:
    Stripe ``{"error": {"type", "code", "message"}}``, Razorpay ``{"error": {"code", "description"}}``,
    Adyen ``{"status", "errorCode", "errorType", "message"}``; any other body is quoted, cut."""
    raw = response.data
    try:
        body = orjson.loads(raw)
    except ValueError:
        body = None
    shape = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(shape, dict):
        message = shape.get("message") or shape.get("description")
        kinds = [shape.get(key) for key in ("type", "errorType", "code", "errorCode")]
        labels = "/".join(str(kind) for kind in kinds if kind not in (None, "", "NA"))
    else:
        message, labels = None, ""
    text = str(message) if message else raw.decode("utf-8", "replace") or "(empty body)"
    text = " ".join(text.split())[:PROVIDER_MESSAGE_CHARS]
    return f"({labels}): {text}" if labels else f": {text}"
