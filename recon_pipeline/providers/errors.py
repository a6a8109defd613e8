"""Provider failures, split by what the caller must do about them.

The split matters for correctness, not just for messages: *unavailable* is an unknown outcome (retry the
run later, never read it as "the record is missing"), *rejected* is our bug or bad configuration (retrying
will not help), and an *incomplete pull* must fail the partition rather than let a partial frame be diffed
into false ``missing_at_provider`` discrepancies.

Which answers are permanent is decided here and nowhere else (``is_permanent_status``): a 4xx other than
404 (absent), 408 (timeout), 409 (conflict: Stripe's concurrent-request lock), 425 (too early) and 429
(rate limit) refuses the request itself, so the client, the step and the run never send it again
(``is_permanent``). The permanence survives ``incomplete_pull`` as a ``PermanentPullError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# 4xx answers that a later attempt may not get: retried with backoff, as 429 and 5xx are.
TRANSIENT_CLIENT_STATUSES = frozenset({408, 409, 425, 429})
NOT_FOUND = 404


def is_permanent_status(status: int) -> bool:
    """Whether an HTTP status refuses the request for good (Stripe ``invalid_request_error``,
    ``authentication_error``, ``permission_error``; Razorpay ``BAD_REQUEST_ERROR``; Adyen 401/403/422):
    a 4xx other than 404 and the transient ones."""
    return 400 <= status < 500 and status != NOT_FOUND and status not in TRANSIENT_CLIENT_STATUSES


class ProviderError(Exception):
    """Base of every provider failure; ``permanent``: sending the same request again cannot succeed."""

    permanent = False


class ProviderUnavailable(ProviderError):
    """Retries exhausted on 429/5xx/transport errors/invalid bodies: the outcome is unknown, retry later."""


class ProviderRequestRejected(ProviderError):
    """A permanent 4xx (``is_permanent_status``): our request is wrong (bug or configuration); never
    retried, by the client, the step or the run."""

    permanent = True


class IncompletePullError(ProviderError):
    """A pull could not be completed; the partition must fail, never diff a partial frame."""


class PermanentPullError(IncompletePullError):
    """An incomplete pull because the provider refused a request for good: no retry can complete it."""

    permanent = True


class ProviderDataError(ProviderError):
    """A response whose shape violates the contract (missing id or amount, bad currency, broken paging)."""


class PagingError(ProviderDataError):
    """A list that does not advance or does not end: a repeating cursor (a record comes back) or more pages
    than the adapter's ``max_pages``. The pull fails at once rather than loop or return part of the list."""


class RetryAfterTooLong(ProviderUnavailable):
    """A 429 whose ``Retry-After`` exceeds what the client may wait (RECON_PROVIDER_MAX_RETRY_AFTER_S): the
    request fails now, naming the wait, instead of sleeping for it or retrying before it ends."""


def is_permanent(error: BaseException) -> bool:
    """Whether ``error`` is a provider failure that no retry can change (a refused request, or a pull
    that failed on one)."""
    return isinstance(error, ProviderError) and error.permanent


@contextmanager
def incomplete_pull(what: str) -> Iterator[None]:
    """Any provider failure inside is an incomplete pull of ``what`` (cause chained), a
    ``PermanentPullError`` when it is permanent; an incomplete pull raised inside already says what failed
    and passes through as it is."""
    try:
        yield
    except IncompletePullError:
        raise
    except ProviderError as error:
        failure = PermanentPullError if error.permanent else IncompletePullError
        raise failure(f"{what} failed: {error}") from error


class SignatureError(ValueError):
    """A webhook delivery is not authentic (or not fresh); ``reason`` (a short snake_case word such as
    ``missing_header`` or ``no_matching_signature``) is safe to send back to the caller."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
