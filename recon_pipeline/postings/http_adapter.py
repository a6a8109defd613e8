"""The ``http`` posting adapter: an approved adjustment becomes a charge on the property's day folio in a
PMS speaking Apaleo's Finance API (``simulation/pms/`` serves the same subset for tests).

Each adjustment is one charge on the external folio of its property and night (``{property}-{night}``),
sent with ``Idempotency-Key`` and ``receipt.number`` both set to the adjustment's idempotency key, so the
PMS recognises a repeat and a later read of the folio finds the charge by its key.

What an answer means for the outbox:
- 2xx: POSTED, with the charge id as the PMS reference.
- 400/404/422: REJECTED with the PMS's own message (the body is wrong; sending it again changes nothing).
- 409: the key is in use; answered by ``lookup``, never by a second post.
- 429: not accepted, so sending again is safe: ``Retry-After`` is waited out while the rate-limit budget
  lasts; past it the outcome is UNKNOWN (which ``lookup`` then resolves to "not posted").
- timeout, connection lost, 5xx, 401/403, anything else: UNKNOWN. The charge may have landed; only
  ``lookup`` may tell, and the adapter never retries it.
The API key is sent as a bearer token and appears in no log, reason or repr.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx

from recon_pipeline.money import major_units
from recon_pipeline.postings.adapter import (
    LookupUnavailableError,
    Posting,
    PostingOutcome,
    PostingResult,
)
from recon_pipeline.providers.http import retry_after_s, tls_context

logger = logging.getLogger(__name__)

REJECTING_STATUSES = frozenset({400, 404, 422})
# Retry-After without a number (absent, or an HTTP date): wait this long before the next try.
DEFAULT_RETRY_AFTER_S = 1.0


class HttpPostingAdapter:
    """Posts charges to an Apaleo-style PMS at ``base_url``; ``timeout_s`` bounds each request, and
    ``rate_limit_budget_s`` the total a call waits out 429s before it gives up (UNKNOWN / unavailable).

    Thread-safe (one pooled ``httpx.Client``); ``close`` it, or use it as a context manager."""

    name = "http"

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout_s: float = 10.0,
        rate_limit_budget_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not api_key:
            raise ValueError("the PMS API key is empty")
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout_s,
            verify=tls_context(),
        )
        self._rate_limit_budget_s = rate_limit_budget_s
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"HttpPostingAdapter({str(self._client.base_url)!r})"

    def post(self, posting: Posting) -> PostingResult:
        key = posting.idempotency_key
        try:
            response = self._send(
                "POST",
                f"/finance/v1/folio-actions/{folio_id(posting.property_id, posting.night)}/charges",
                json=charge_body(posting),
                headers={"Idempotency-Key": key},
            )
        except httpx.TransportError as error:
            return _unknown(f"POST of {key} got no answer: {type(error).__name__}")
        status = response.status_code
        if response.is_success:
            return PostingResult(PostingOutcome.POSTED, pms_reference=_charge_id(response))
        if status in REJECTING_STATUSES:
            return PostingResult(PostingOutcome.REJECTED, reason=f"PMS {status}: {_pms_message(response)}")
        if status == 409:
            return self._resolve_conflict(key)
        if status == 429:
            return _unknown(f"POST of {key} still rate-limited (429) after the retry budget; not accepted")
        return _unknown(f"POST of {key}: PMS answered {status}: {_pms_message(response)}")

    def lookup(self, idempotency_key: str) -> PostingResult | None:
        property_id, night = _folio_of_key(idempotency_key)
        try:
            response = self._send("GET", f"/finance/v1/folios/{folio_id(property_id, night)}")
        except httpx.TransportError as error:
            raise LookupUnavailableError(
                f"lookup of {idempotency_key}: the PMS gave no answer ({type(error).__name__})"
            ) from None
        if response.status_code == 404:
            return None  # the folio was never opened: nothing was posted to it
        if not response.is_success:
            raise LookupUnavailableError(
                f"lookup of {idempotency_key}: PMS answered {response.status_code}: {_pms_message(response)}"
            )
        try:
            charges = response.json()["charges"]
            found = [c for c in charges if (c.get("receipt") or {}).get("number") == idempotency_key]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise LookupUnavailableError(
                f"lookup of {idempotency_key}: the PMS's folio is not readable"
            ) from None
        if not found:
            return None
        return PostingResult(PostingOutcome.POSTED, pms_reference=str(found[0]["id"]))

    def _resolve_conflict(self, key: str) -> PostingResult:
        """A 409: the PMS has seen the key; its folio says whether the charge landed."""
        try:
            found = self.lookup(key)
        except LookupUnavailableError as error:
            return _unknown(f"POST of {key} got 409 and {error}")
        if found is None:
            return _unknown(f"POST of {key} got 409 but its folio holds no charge with that key yet")
        return dataclasses.replace(found, already_posted=True)

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request, sent again only after a 429 (never accepted) while the rate-limit budget lasts."""
        waited = 0.0
        while True:
            response = self._client.request(method, path, **kwargs)
            if response.status_code != 429:
                return response
            delay = retry_after_s(response.headers.get("retry-after"))
            delay = DEFAULT_RETRY_AFTER_S if delay is None else delay
            if waited + delay > self._rate_limit_budget_s:
                return response
            logger.info("PMS rate limit on %s %s: waiting %.1f s", method, path, delay)
            self._sleep(delay)
            waited += delay

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpPostingAdapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def folio_id(property_id: str, night: str) -> str:
    """The external day folio an adjustment of ``property_id`` on ``night`` is posted to."""
    return f"{property_id}-{night}"


def charge_body(posting: Posting) -> dict[str, Any]:
    """The Apaleo charge for ``posting``: its amount in major units, its key as the receipt number."""
    major = major_units(posting.amount_minor, posting.currency)
    return {
        "serviceType": "Other",
        "vatType": "Without",
        "name": posting.description,
        "amount": {"amount": float(major), "currency": posting.currency},
        "serviceDate": posting.night,
        "receipt": {"type": "Custom", "number": posting.idempotency_key},
    }


def _folio_of_key(idempotency_key: str) -> tuple[str, str]:
    """(property, night) of an adjustment's key (``keys.adjustment_idempotency_key``: property/night/…)."""
    parts = idempotency_key.split("/", 2)
    if len(parts) < 3 or not all(parts):
        raise ValueError(
            f"not an adjustment idempotency key (property/night/kind/record): {idempotency_key!r}"
        )
    return parts[0], parts[1]


def _charge_id(response: httpx.Response) -> str | None:
    try:
        return str(response.json()["id"])
    except (ValueError, KeyError, TypeError):
        return None


def _pms_message(response: httpx.Response) -> str:
    """Apaleo's ``messages`` joined, else a cut of the body."""
    try:
        messages = response.json()["messages"]
        if isinstance(messages, list) and messages:
            return "; ".join(str(m) for m in messages)
    except (ValueError, KeyError, TypeError):
        pass
    return response.text[:200] or response.reason_phrase


def _unknown(reason: str) -> PostingResult:
    return PostingResult(PostingOutcome.UNKNOWN, reason=reason)
