"""Provider failures, split by what the caller must do about them.

The split matters for correctness, not just for messages: *unavailable* is an unknown outcome (retry the
run later, never read it as "the record is missing"), *rejected* is our bug or bad configuration (retrying
will not help), and an *incomplete pull* must fail the partition rather than let a partial frame be diffed
into false ``missing_at_provider`` discrepancies.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class ProviderError(Exception):
    """Base of every provider failure."""


class ProviderUnavailable(ProviderError):
    """Retries exhausted on 429/5xx/transport errors/invalid bodies: the outcome is unknown, retry later."""


class ProviderRequestRejected(ProviderError):
    """A 4xx other than 404/429: our request is wrong (bug or configuration); not retried."""


class IncompletePullError(ProviderError):
    """A pull could not be completed; the partition must fail, never diff a partial frame."""


class ProviderDataError(ProviderError):
    """A response whose shape violates the contract (missing id or amount, bad currency, broken paging)."""


class PagingError(ProviderDataError):
    """A list that does not advance or does not end: a repeating cursor (a record comes back) or more pages
    than the adapter's ``max_pages``. The pull fails at once rather than loop or return part of the list."""


class RetryAfterTooLong(ProviderUnavailable):
    """A 429 whose ``Retry-After`` exceeds what the client may wait (RECON_PROVIDER_MAX_RETRY_AFTER_S): the
    request fails now, naming the wait, instead of sleeping for it or retrying before it ends."""


@contextmanager
def incomplete_pull(what: str) -> Iterator[None]:
    """Any provider failure inside is an incomplete pull of ``what`` (cause chained); an incomplete pull
    raised inside already says what failed and passes through as it is."""
    try:
        yield
    except IncompletePullError:
        raise
    except ProviderError as error:
        raise IncompletePullError(f"{what} failed: {error}") from error


class SignatureError(ValueError):
    """A webhook delivery is not authentic (or not fresh); ``reason`` (a short snake_case word such as
    ``missing_header`` or ``no_matching_signature``) is safe to send back to the caller."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
