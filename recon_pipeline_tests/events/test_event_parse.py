"""Reading the ids of a provider event from its raw body (pure)."""

from __future__ import annotations

import json

import pytest

from recon_pipeline.providers.events import EventFormatError
from recon_pipeline.providers.stripe.webhook import parse_event as parse_stripe_event


def body(**overrides: object) -> str:
    event: dict[str, object] = {
        "id": "evt_1",
        "object": "event",
        "type": "payment_intent.succeeded",
        "created": 1_764_000_000,
        "data": {"object": {"object": "payment_intent", "id": "pi_1", "status": "succeeded"}},
    }
    event.update(overrides)
    return json.dumps(event)


@pytest.mark.parametrize(
    ("obj", "payment_id"),
    [
        ({"object": "payment_intent", "id": "pi_9"}, "pi_9"),
        ({"object": "charge", "id": "ch_9", "payment_intent": "pi_9"}, "pi_9"),
        ({"object": "charge", "id": "ch_9", "payment_intent": None}, "ch_9"),
        ({"object": "refund", "id": "re_9", "charge": "ch_9", "payment_intent": None}, "ch_9"),
        ({"object": "customer", "id": "cus_9"}, None),
    ],
)
def test_the_payment_an_event_is_about(obj: dict[str, object], payment_id: str | None) -> None:
    event = parse_stripe_event(body(data={"object": obj}, account="acct_7"))
    assert (event.event_id, event.provider_payment_id, event.account) == ("evt_1", payment_id, "acct_7")


@pytest.mark.parametrize(
    "raw",
    [
        "{not json",
        "[]",
        body(id=""),
        body(id=None),
        body(type=7),
        body(created="yesterday"),
        body(created=True),
        body(data={"object": "pi_1"}),
        body(data=None),
        json.dumps({"id": "evt_1", "type": "x", "created": 1}),
        b"\xff\xfe",
    ],
)
def test_malformed_events_are_refused(raw: str | bytes) -> None:
    with pytest.raises(EventFormatError):
        parse_stripe_event(raw)
