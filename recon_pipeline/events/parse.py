"""What the pipeline needs to know of a provider event, read from its raw JSON: pure, no I/O.

Only ids are kept for processing (the event id, its type, the payment it is about, the connected
account); the processor fetches the payment's *current* state from the provider and never acts on the
payload snapshot, which may be stale, duplicated or out of order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_ID_LENGTH = 255


class EventFormatError(ValueError):
    """The body is not a well-formed provider event; the receiver answers 400 and stores nothing."""


@dataclass(frozen=True)
class ProviderEvent:
    """The ids of one provider event."""

    event_id: str
    event_type: str
    created: int
    provider_payment_id: str | None
    account: str | None


def parse_stripe_event(raw_body: bytes | str) -> ProviderEvent:
    """Read a Stripe event (``{"id", "type", "created", "data": {"object": ...}}``), else EventFormatError."""
    try:
        event = json.loads(raw_body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EventFormatError(f"body is not JSON: {error}") from None
    if not isinstance(event, dict):
        raise EventFormatError("event must be a JSON object")
    obj = event.get("data", {}).get("object") if isinstance(event.get("data"), dict) else None
    if not isinstance(obj, dict):
        raise EventFormatError("event has no data.object")
    created = event.get("created")
    if not isinstance(created, int) or isinstance(created, bool) or created < 0:
        raise EventFormatError("event.created must be a non-negative integer")
    account = event.get("account")
    return ProviderEvent(
        event_id=_required_id(event, "id"),
        event_type=_required_id(event, "type"),
        created=created,
        provider_payment_id=payment_id_of(obj),
        account=account if isinstance(account, str) and account else None,
    )


def payment_id_of(obj: dict[str, Any]) -> str | None:
    """The PaymentIntent an event's object is about (payment_orders are keyed by it), else its charge."""
    kind = obj.get("object")
    if kind == "payment_intent":
        return _optional_id(obj.get("id"))
    if kind == "charge":
        return _optional_id(obj.get("payment_intent")) or _optional_id(obj.get("id"))
    if kind == "refund":
        return _optional_id(obj.get("payment_intent")) or _optional_id(obj.get("charge"))
    return None


def _required_id(event: dict[str, Any], name: str) -> str:
    value = _optional_id(event.get(name))
    if value is None:
        raise EventFormatError(
            f"event.{name} must be a non-empty string of at most {MAX_ID_LENGTH} characters"
        )
    return value


def _optional_id(value: Any) -> str | None:
    if isinstance(value, str) and 0 < len(value) <= MAX_ID_LENGTH and value.isprintable():
        return value
    return None
