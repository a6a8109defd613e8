"""Razorpay's webhooks, pure and without I/O: the signature and the event parser.

``X-Razorpay-Signature`` is the hex HMAC-SHA256 of the exact raw body under the webhook secret, nothing
else: no timestamp, so a replayed delivery cannot be told from a retry by its signature. It does not need
to be: a delivery is stored once per ``x-razorpay-event-id`` and the processor acts on the payment's
current state read from Razorpay, never on the payload, so a replay changes nothing. Several secrets are
accepted so that a secret can be rotated (``RECON_WEBHOOK_SECRET=new,old``), each compared in constant
time.
"""

from __future__ import annotations

import hashlib
import hmac
import string
from collections.abc import Sequence
from typing import Any

from recon_pipeline.providers.errors import SignatureError
from recon_pipeline.providers.events import (
    MAX_ID_LENGTH,
    EventFormatError,
    ProviderEvent,
    json_object,
    optional_id,
    required_id,
    unix_time,
)

HEADER = "X-Razorpay-Signature"
EVENT_ID_HEADER = "x-razorpay-event-id"
_HEX_DIGITS = frozenset(string.hexdigits)


def compute_signature(raw_body: bytes, secret: str) -> str:
    """The hex signature of ``raw_body`` (what Razorpay sends, and what tests and benchmarks sign with)."""
    return hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest()


def verify(raw_body: bytes, header: str | None, secrets: Sequence[str]) -> None:
    """Accept when ``header`` is the signature of the exact bytes received under any of ``secrets``, else
    raise SignatureError (``missing_header``, ``malformed_header`` or ``no_matching_signature``)."""
    if not secrets:
        raise ValueError("at least one webhook secret is required")
    if header is None or not header.strip():
        raise SignatureError("missing_header")
    candidate = header.strip()
    if len(candidate) != hashlib.sha256().digest_size * 2 or not set(candidate) <= _HEX_DIGITS:
        raise SignatureError("malformed_header")
    given = candidate.lower().encode()
    matches = [hmac.compare_digest(given, compute_signature(raw_body, s).encode()) for s in secrets]
    if not any(matches):
        raise SignatureError("no_matching_signature")


def parse_event(raw_body: bytes | str, event_id: str | None) -> ProviderEvent:
    """Read a Razorpay event (``{"entity": "event", "event", "created_at", "payload": {"payment":
    {"entity": ...}}}``) delivered with ``x-razorpay-event-id: event_id``, else EventFormatError.

    The body has no id of its own: the header's is the event's id (Razorpay's dedupe key). The payment
    is ``payload.payment.entity.id``, or for refund events ``payload.refund.entity.payment_id``. The
    event's ``account_id`` is the merchant's own account, not a connected one: ``account`` stays None.
    """
    event = json_object(raw_body)
    payload = event.get("payload")
    if not isinstance(payload, dict):
        raise EventFormatError("event has no payload")
    created = unix_time(event, "created_at")
    valid_id = optional_id(event_id)
    if valid_id is None:
        raise EventFormatError(
            f"{EVENT_ID_HEADER} must be a non-empty id of at most {MAX_ID_LENGTH} characters"
        )
    payment, refund = _entity(payload, "payment"), _entity(payload, "refund")
    return ProviderEvent(
        event_id=valid_id,
        event_type=required_id(event, "event"),
        created=created,
        provider_payment_id=optional_id(payment.get("id")) or optional_id(refund.get("payment_id")),
        account=None,
    )


def _entity(payload: dict[str, Any], name: str) -> dict[str, Any]:
    """``payload[name]["entity"]`` of a Razorpay event, empty when absent or not an object."""
    wrapper = payload.get(name)
    entity = wrapper.get("entity") if isinstance(wrapper, dict) else None
    return entity if isinstance(entity, dict) else {}
