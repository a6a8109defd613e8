"""Stripe's webhooks, pure and without I/O: the signature scheme (tested exhaustively and reused by the
receiver, the tests, the benchmark and the simulator) and the event parser.

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
from typing import Any

from recon_pipeline.providers.errors import SignatureError
from recon_pipeline.providers.events import (
    EventFormatError,
    ProviderEvent,
    json_object,
    optional_id,
    required_id,
    unix_time,
)

HEADER = "Stripe-Signature"
SCHEME = "v1"
DEFAULT_TOLERANCE_S = 300
# Stripe's timestamps have 10 digits. A longer ``t`` is no moment within any tolerance, and must be refused
# before int(): Python refuses to convert more than 4300 digits (ValueError) and a value past 10**308
# cannot be compared with the float clock (OverflowError); both were 500s, the first needing no secret.
MAX_TIMESTAMP_DIGITS = 12


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


def parse_event(raw_body: bytes | str) -> ProviderEvent:
    """Read a Stripe event (``{"id", "type", "created", "data": {"object": ...}}``), else EventFormatError."""
    event = json_object(raw_body)
    obj = event.get("data", {}).get("object") if isinstance(event.get("data"), dict) else None
    if not isinstance(obj, dict):
        raise EventFormatError("event has no data.object")
    created = unix_time(event, "created")
    return ProviderEvent(
        event_id=required_id(event, "id"),
        event_type=required_id(event, "type"),
        created=created,
        provider_payment_id=payment_id_of(obj),
        account=_account(event),
    )


def payment_id_of(obj: dict[str, Any]) -> str | None:
    """The PaymentIntent an event's object is about (payment_orders are keyed by it), else its charge."""
    kind = obj.get("object")
    if kind == "payment_intent":
        return optional_id(obj.get("id"))
    if kind == "charge":
        return optional_id(obj.get("payment_intent")) or optional_id(obj.get("id"))
    if kind == "refund":
        return optional_id(obj.get("payment_intent")) or optional_id(obj.get("charge"))
    return None


def _account(event: dict[str, Any]) -> str | None:
    """The connected account, None for the platform's own events (no ``account``, or null).

    Anything else must be a valid id: it is stored and then names the account the processor reads the
    payment from, so an unreadable one (a number, a NUL or lone surrogate that the database refuses) is a
    malformed event, not a platform event.
    """
    if event.get("account") is None:
        return None
    return required_id(event, "account")
