"""Stripe's webhook signature scheme, pure and without I/O so it is tested exhaustively and reused by the
receiver, the tests, the benchmark and the simulator.

``Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...][,v0=...]``: each ``v1`` is the hex HMAC-SHA256 of
``b"<t>." + raw_body`` under the endpoint's signing secret. Several ``v1`` values and several secrets are
accepted because Stripe sends one ``v1`` per active secret while a secret is being rolled, and the receiver
holds old and new secret during the same window. Other schemes (``v0`` is a test-mode legacy) never
authenticate. The timestamp bounds replay: it is checked after the signature, as Stripe's libraries do, so
"outside tolerance" is only ever said of an authentic delivery.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

HEADER = "Stripe-Signature"
SCHEME = "v1"
DEFAULT_TOLERANCE_S = 300
# Stripe's timestamps have 10 digits. A longer ``t`` is no moment within any tolerance, and must be refused
# before int(): Python refuses to convert more than 4300 digits (ValueError) and a value past 10**308
# cannot be compared with the float clock (OverflowError); both were 500s, the first needing no secret.
MAX_TIMESTAMP_DIGITS = 12

Reason = Literal[
    "missing_header",
    "malformed_header",
    "no_v1_signature",
    "timestamp_outside_tolerance",
    "no_matching_signature",
]


class SignatureError(ValueError):
    """The delivery is not authentic (or not fresh); ``reason`` is safe to send back to the caller."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason)
        self.reason: Reason = reason


@dataclass(frozen=True)
class SignatureHeader:
    """The parts of a ``Stripe-Signature`` header that matter: the signed timestamp and the v1 values."""

    timestamp: int
    signatures: tuple[str, ...]


def compute_signature(raw_body: bytes, secret: str, timestamp: int) -> str:
    """The hex v1 signature of ``raw_body`` signed at ``timestamp``."""
    signed_payload = f"{timestamp}.".encode() + raw_body
    return hmac.new(secret.encode(), signed_payload, hashlib.sha256).hexdigest()


def sign(raw_body: bytes, secret: str, timestamp: int) -> str:
    """A ``Stripe-Signature`` header value as Stripe would send it (for tests, benchmarks, the simulator)."""
    return f"t={timestamp},{SCHEME}={compute_signature(raw_body, secret, timestamp)}"


def parse_header(header: str | None) -> SignatureHeader:
    """Split the header into its timestamp and v1 values; unknown schemes are ignored, as Stripe advises."""
    if header is None or not header.strip():
        raise SignatureError("missing_header")
    if not header.isascii():
        raise SignatureError("malformed_header")
    timestamps: list[str] = []
    signatures: list[str] = []
    for item in header.split(","):
        key, separator, value = item.strip().partition("=")
        if not separator or not key or not value:
            raise SignatureError("malformed_header")
        if key == "t":
            timestamps.append(value)
        elif key == SCHEME:
            signatures.append(value)
    # isdigit, not int(): int() would also take "+1", " 1" and "1_000".
    if len(timestamps) != 1 or not timestamps[0].isdigit() or len(timestamps[0]) > MAX_TIMESTAMP_DIGITS:
        raise SignatureError("malformed_header")
    if not signatures:
        raise SignatureError("no_v1_signature")
    return SignatureHeader(int(timestamps[0]), tuple(signatures))


def verify(
    raw_body: bytes,
    header: str | None,
    secrets: Sequence[str],
    tolerance_s: int = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> int:
    """Check ``header`` against the exact bytes received; returns the signed timestamp or raises.

    Accepts when any v1 value equals the signature under any of ``secrets`` (constant-time compare), and
    the timestamp is within ``tolerance_s`` of ``now`` (unix seconds, default the clock) in either
    direction: a future timestamp is as suspicious as a stale one.
    """
    if not secrets:
        raise ValueError("at least one webhook secret is required")
    parsed = parse_header(header)
    expected = [compute_signature(raw_body, secret, parsed.timestamp).encode() for secret in secrets]
    if not any(
        hmac.compare_digest(candidate.encode(), signature)
        for candidate in parsed.signatures
        for signature in expected
    ):
        raise SignatureError("no_matching_signature")
    current = time.time() if now is None else now
    if abs(current - parsed.timestamp) > tolerance_s:
        raise SignatureError("timestamp_outside_tolerance")
    return parsed.timestamp
