"""What the pipeline needs to know of a provider event and of a payment, in provider-neutral terms: pure.

Only ids are kept for processing (the event id, its type, the payment it is about, the connected
account); the processor fetches the payment's *current* state from the provider (a ``PaymentState``) and
never acts on the payload snapshot, which may be stale, duplicated or out of order. Each provider package
reads its own event shape (``providers/<name>/webhook.py``) into a ``ProviderEvent`` with these helpers,
so that every provider refuses the same malformed values the same way, and maps its payment objects to a
``PaymentState``; what follows for the booking is the event processor's (``events/payment_state.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

MAX_ID_LENGTH = 255
# The last second a datetime can hold (9999-12-31T23:59:59Z): a later ``created`` is not a time.
MAX_CREATED = 253_402_300_799
# The ``payment_orders`` statuses (``PaymentState.status``) of a payment whose money is captured.
CAPTURED_ORDER_STATUSES = ("captured", "partially_refunded")


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


def json_object(raw_body: bytes | str) -> dict[str, Any]:
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


def unix_time(event: dict[str, Any], name: str) -> int:
    """``event[name]`` as a unix time a datetime can hold, else EventFormatError."""
    created = event.get(name)
    if not isinstance(created, int) or isinstance(created, bool) or not 0 <= created <= MAX_CREATED:
        raise EventFormatError(f"event.{name} must be a unix time from 0 to {MAX_CREATED}")
    return created


def required_id(event: dict[str, Any], name: str) -> str:
    """``event[name]`` as an id (``optional_id``), else EventFormatError naming the field."""
    value = optional_id(event.get(name))
    if value is None:
        raise EventFormatError(
            f"event.{name} must be a non-empty string of at most {MAX_ID_LENGTH} characters"
        )
    return value


def optional_id(value: Any) -> str | None:
    """``value`` when it is an id the database and a by-id URL can hold, else None."""
    if isinstance(value, str) and 0 < len(value) <= MAX_ID_LENGTH and value.isprintable():
        return value
    return None


@dataclass(frozen=True)
class PaymentState:
    """What the provider says about one payment now, in the contract's terms."""

    provider_payment_id: str
    status: str  # a payment_orders status
    amount_minor: int
    amount_refunded_minor: int
    currency: str  # ISO 4217 upper case
    captured_at: datetime | None
    occurred_at: datetime
    property_id: str | None  # from metadata; None when the payment must be attributed by account
    booking_id: str | None

    def order_row(self, property_id: str, as_of: datetime) -> dict[str, Any]:
        """The ``payment_orders`` row; ``updated_at`` is when the provider was read (newer reads win)."""
        return {
            "provider_payment_id": self.provider_payment_id,
            "property_id": property_id,
            "booking_id": self.booking_id,
            "amount_minor": self.amount_minor,
            "amount_refunded_minor": self.amount_refunded_minor,
            "currency": self.currency,
            "status": self.status,
            "captured_at": self.captured_at,
            "updated_at": as_of,
        }
