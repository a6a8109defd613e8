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
# The last second a datetime can hold (9999-12-31T23:59:59Z): a later ``created`` is not a time.
MAX_CREATED = 253_402_300_799


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
    event = _json_object(raw_body)
    obj = event.get("data", {}).get("object") if isinstance(event.get("data"), dict) else None
    if not isinstance(obj, dict):
        raise EventFormatError("event has no data.object")
    created = event.get("created")
    if not isinstance(created, int) or isinstance(created, bool) or not 0 <= created <= MAX_CREATED:
        raise EventFormatError(f"event.created must be a unix time from 0 to {MAX_CREATED}")
    return ProviderEvent(
        event_id=_required_id(event, "id"),
        event_type=_required_id(event, "type"),
        created=created,
        provider_payment_id=payment_id_of(obj),
        account=_account(event),
    )


def parse_razorpay_event(raw_body: bytes | str, event_id: str | None) -> ProviderEvent:
    """Read a Razorpay event (``{"entity": "event", "event", "created_at", "payload": {"payment":
    {"entity": ...}}}``) delivered with ``x-razorpay-event-id: event_id``, else EventFormatError.

    The body has no id of its own: the header's is the event's id (Razorpay's dedupe key). The payment
    is ``payload.payment.entity.id``, or for refund events ``payload.refund.entity.payment_id``. The
    event's ``account_id`` is the merchant's own account, not a connected one: ``account`` stays None.
    """
    event = _json_object(raw_body)
    payload = event.get("payload")
    if not isinstance(payload, dict):
        raise EventFormatError("event has no payload")
    created = event.get("created_at")
    if not isinstance(created, int) or isinstance(created, bool) or not 0 <= created <= MAX_CREATED:
        raise EventFormatError(f"event.created_at must be a unix time from 0 to {MAX_CREATED}")
    valid_id = _optional_id(event_id)
    if valid_id is None:
        raise EventFormatError(
            f"x-razorpay-event-id must be a non-empty id of at most {MAX_ID_LENGTH} characters"
        )
    payment, refund = _entity(payload, "payment"), _entity(payload, "refund")
    return ProviderEvent(
        event_id=valid_id,
        event_type=_required_id(event, "event"),
        created=created,
        provider_payment_id=_optional_id(payment.get("id")) or _optional_id(refund.get("payment_id")),
        account=None,
    )


def _entity(payload: dict[str, Any], name: str) -> dict[str, Any]:
    """``payload[name]["entity"]`` of a Razorpay event, empty when absent or not an object."""
    wrapper = payload.get(name)
    entity = wrapper.get("entity") if isinstance(wrapper, dict) else None
    return entity if isinstance(entity, dict) else {}


def _json_object(raw_body: bytes | str) -> dict[str, Any]:
    """The body as a JSON object, else EventFormatError."""
    try:
        event = json.loads(raw_body)
    # ValueError covers JSONDecodeError, UnicodeDecodeError and integers past Python's 4300-digit limit;
    # RecursionError is nesting deeper than the interpreter's recursion limit: either would be a 500.
    except (ValueError, RecursionError) as error:
        raise EventFormatError(f"body is not JSON: {error}") from None
    if not isinstance(event, dict):
        raise EventFormatError("event must be a JSON object")
    return event


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


def _account(event: dict[str, Any]) -> str | None:
    """The connected account, None for the platform's own events (no ``account``, or null).

    Anything else must be a valid id: it is stored and then names the account the processor reads the
    payment from, so an unreadable one (a number, a NUL or lone surrogate that the database refuses) is a
    malformed event, not a platform event.
    """
    if event.get("account") is None:
        return None
    return _required_id(event, "account")


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
