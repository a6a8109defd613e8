"""Adyen standard notifications (webhooks): HMAC verification and reading the items, pure and without I/O.

A delivery is ``{"live": "false", "notificationItems": [{"NotificationRequestItem": {...}}]}``: Adyen's
JSON webhooks carry one item (the list is a legacy of SOAP batches, so several are read all the same), and
Adyen expects the body ``[accepted]`` once they are stored, else it retries the delivery. Each item
is signed on its own: ``additionalData.hmacSignature`` is base64(HMAC-SHA256(key = the hex-decoded HMAC
key, message = ``pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:
eventCode:success``)), an absent field signing as the empty string. A delivery is accepted only when every
item's signature matches under one of the configured keys (several: a key is being rotated), compared in
constant time. The signature does not cover the whole body, which is why only the signed fields are read.

Adyen gives a notification no id of its own. Its documented duplicate rule is that a notification with
the same ``eventCode`` and ``pspReference`` is a resend, and ``success`` may flip between deliveries of
the same pair (a failed then successful authorisation), so the stored event id is
``eventCode:pspReference:success``: stable across Adyen's retries, distinct for a new outcome. The payment
an item is about is ``originalReference`` for modifications (capture, refund, cancellation, and the
dispute events chargeback, chargeback reversed and second chargeback, whose ``pspReference`` is the
dispute's, shared by all three) and ``pspReference`` for an authorisation; a ``REPORT_AVAILABLE`` item
(``pspReference`` = the report's file name, ``reason`` = its URL) is about no payment. The merchant
account is the event's ``account``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from recon_pipeline.providers.errors import SignatureError
from recon_pipeline.providers.events import MAX_CREATED, MAX_ID_LENGTH, EventFormatError, ProviderEvent
from recon_pipeline.providers.interface import ReceivedEvent

EVENT_CODES = (
    "AUTHORISATION",
    "CAPTURE",
    "REFUND",
    "CANCELLATION",
    "CHARGEBACK",
    "CHARGEBACK_REVERSED",
    "SECOND_CHARGEBACK",
    "REPORT_AVAILABLE",
)
REPORT_AVAILABLE = "REPORT_AVAILABLE"
SIGNED_FIELDS = (
    "pspReference",
    "originalReference",
    "merchantAccountCode",
    "merchantReference",
    "value",
    "currency",
    "eventCode",
    "success",
)
ACKNOWLEDGEMENT = "[accepted]"
MAX_ITEMS = 1_000  # Adyen sends at most a few items per delivery; more is not a notification


def signing_string(item: Mapping[str, Any]) -> str:
    """The message Adyen signs for a NotificationRequestItem (``value``/``currency`` from ``amount``)."""
    given = item.get("amount")
    amount = given if isinstance(given, dict) else {}
    fields = {**item, "value": amount.get("value", ""), "currency": amount.get("currency", "")}
    return ":".join("" if fields.get(name) is None else str(fields[name]) for name in SIGNED_FIELDS)


def compute_signature(item: Mapping[str, Any], hmac_key_hex: str) -> str:
    """The ``hmacSignature`` of ``item`` under a hex HMAC key (what Adyen sends; tests sign with it)."""
    try:
        key = binascii.unhexlify(hmac_key_hex)
    except (binascii.Error, ValueError):
        raise ValueError("an Adyen HMAC key is hexadecimal") from None
    digest = hmac.new(key, signing_string(item).encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def verify_item(item: Mapping[str, Any], hmac_keys: Sequence[str]) -> None:
    """Accept an item whose ``additionalData.hmacSignature`` matches under any of ``hmac_keys``, else raise
    SignatureError (``missing_header``: no signature; ``no_matching_signature``)."""
    if not hmac_keys:
        raise ValueError("at least one HMAC key is required")
    additional = item.get("additionalData")
    given = additional.get("hmacSignature") if isinstance(additional, dict) else None
    if not isinstance(given, str) or not given:
        raise SignatureError("missing_header")
    matches = [hmac.compare_digest(given.encode(), compute_signature(item, k).encode()) for k in hmac_keys]
    if not any(matches):
        raise SignatureError("no_matching_signature")


def notification_items(raw_body: bytes | str) -> list[dict[str, Any]]:
    """The NotificationRequestItems of a delivery, else EventFormatError."""
    try:
        body = json.loads(raw_body)
    except (ValueError, RecursionError) as error:
        raise EventFormatError(f"body is not JSON: {error}") from None
    wrappers = body.get("notificationItems") if isinstance(body, dict) else None
    if not isinstance(wrappers, list) or not 0 < len(wrappers) <= MAX_ITEMS:
        raise EventFormatError(f"notificationItems must be a list of 1 to {MAX_ITEMS} items")
    items = [w.get("NotificationRequestItem") if isinstance(w, dict) else None for w in wrappers]
    if not all(isinstance(item, dict) for item in items):
        raise EventFormatError("every notificationItems entry must hold a NotificationRequestItem object")
    return [item for item in items if isinstance(item, dict)]


def parse_item(item: Mapping[str, Any]) -> ProviderEvent:
    """The ids of one NotificationRequestItem, else EventFormatError."""
    event_code = _required(item, "eventCode")
    if event_code not in EVENT_CODES:
        raise EventFormatError(f"eventCode {event_code!r} is not one of {', '.join(EVENT_CODES)}")
    psp_reference = _required(item, "pspReference")
    success = item.get("success")
    if success not in ("true", "false"):
        raise EventFormatError("success must be 'true' or 'false'")
    if event_code == REPORT_AVAILABLE:
        payment_id = None
    elif event_code == "AUTHORISATION":
        payment_id = psp_reference
    else:
        payment_id = _required(item, "originalReference")
    event_id = f"{event_code}:{psp_reference}:{success}"
    if len(event_id) > MAX_ID_LENGTH:
        raise EventFormatError(f"event id longer than {MAX_ID_LENGTH} characters")
    return ProviderEvent(
        event_id=event_id,
        event_type=event_code,
        created=_event_date(item),
        provider_payment_id=payment_id,
        account=_required(item, "merchantAccountCode"),
    )


def read_delivery(raw_body: bytes, hmac_keys: Sequence[str]) -> list[ReceivedEvent]:
    """Verify every item of a delivery (SignatureError) and read its events (EventFormatError); each
    event's payload is its own NotificationRequestItem, stored as JSON text."""
    items = notification_items(raw_body)
    for item in items:
        verify_item(item, hmac_keys)
    return [
        ReceivedEvent(parse_item(item), json.dumps({"NotificationRequestItem": item}, sort_keys=True))
        for item in items
    ]


def _event_date(item: Mapping[str, Any]) -> int:
    """``eventDate`` (ISO 8601 with offset) as unix seconds."""
    raw = _required(item, "eventDate")
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise EventFormatError(f"eventDate {raw[:40]!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise EventFormatError(f"eventDate {raw[:40]!r} has no UTC offset")
    created = int(moment.timestamp())
    if not 0 <= created <= MAX_CREATED:
        raise EventFormatError(f"eventDate {raw[:40]!r} is out of range")
    return created


def _required(item: Mapping[str, Any], name: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not 0 < len(value) <= MAX_ID_LENGTH or not value.isprintable():
        raise EventFormatError(f"{name} must be a non-empty string of at most {MAX_ID_LENGTH} characters")
    return value
