"""Razorpay webhooks: the pure ``X-Razorpay-Signature`` check, and ``POST /webhooks/razorpay`` over real
HTTP on SQLite and PostgreSQL, deduped on ``x-razorpay-event-id`` through the same storage as Stripe's."""

from __future__ import annotations

import hashlib
import hmac
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import select

from recon_pipeline.db.schema import payment_event_processing, payment_events
from recon_pipeline.providers.errors import SignatureError
from recon_pipeline.providers.events import EventFormatError
from recon_pipeline.providers.razorpay.webhook import compute_signature, verify
from recon_pipeline.providers.razorpay.webhook import parse_event as parse_razorpay_event
from recon_pipeline_tests.support import webhook_receiver as stripe_receiver
from recon_pipeline_tests.support.webhook_receiver import (
    MAX_BODY,
    OLD_SECRET,
    SECRET,
    Receiver,
    counts,
    event_body,
    signed,
)

receiver = stripe_receiver.receiver  # the same receiver fixture (SQLite and PostgreSQL)

PATH = "/webhooks/razorpay"


def razorpay_body(event: str = "payment.captured", **payload: Any) -> bytes:
    """A Razorpay event as Razorpay sends it: no id in the body, the payment under payload.payment.entity."""
    body = {
        "entity": "event",
        "account_id": "acc_BFQ7uQEaa7j2z7",
        "event": event,
        "contains": ["payment"],
        "payload": payload
        or {"payment": {"entity": {"id": "pay_DESp9bgForNoUd", "entity": "payment", "amount": 100}}},
        "created_at": 1_767_225_600,
    }
    return json.dumps(body, indent=2).encode()


def delivery(body: bytes, event_id: str | None = "evt_rzp_1", secret: str = SECRET) -> dict[str, str]:
    headers = {"X-Razorpay-Signature": compute_signature(body, secret), "Content-Type": "application/json"}
    if event_id is not None:
        headers["x-razorpay-event-id"] = event_id
    return headers


# --- pure -----------------------------------------------------------------------------------------------


def test_signature_is_hex_hmac_sha256_of_the_raw_body() -> None:
    body = razorpay_body()
    assert compute_signature(body, SECRET) == hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    verify(body, compute_signature(body, SECRET), [SECRET])
    verify(body, compute_signature(body, OLD_SECRET).upper(), [SECRET, OLD_SECRET])  # rotation, any case


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "missing_header"),
        ("  ", "missing_header"),
        ("abc", "malformed_header"),
        ("g" * 64, "malformed_header"),
        ("t=1,v1=" + "0" * 57, "malformed_header"),
        ("0" * 64, "no_matching_signature"),
    ],
)
def test_bad_signatures_are_refused_with_a_reason(header: str | None, reason: str) -> None:
    with pytest.raises(SignatureError) as caught:
        verify(razorpay_body(), header, [SECRET])
    assert caught.value.reason == reason


def test_signature_over_other_bytes_does_not_match() -> None:
    body = razorpay_body()
    with pytest.raises(SignatureError, match="no_matching_signature"):
        verify(body + b" ", compute_signature(body, SECRET), [SECRET])
    with pytest.raises(SignatureError, match="no_matching_signature"):
        verify(body, compute_signature(body, "whsec_attacker"), [SECRET])


def test_parse_takes_the_id_from_the_header_and_the_payment_from_the_payload() -> None:
    event = parse_razorpay_event(razorpay_body(), "evt_1")
    assert (event.event_id, event.event_type, event.created, event.provider_payment_id, event.account) == (
        "evt_1",
        "payment.captured",
        1_767_225_600,
        "pay_DESp9bgForNoUd",
        None,
    )
    refund = razorpay_body("refund.processed", refund={"entity": {"id": "rfnd_1", "payment_id": "pay_9"}})
    assert parse_razorpay_event(refund, "evt_2").provider_payment_id == "pay_9"
    assert (
        parse_razorpay_event(razorpay_body("order.paid", order={"entity": {}}), "e").provider_payment_id
        is None
    )


@pytest.mark.parametrize(
    ("body", "event_id"),
    [
        (razorpay_body(), None),
        (razorpay_body(), ""),
        (razorpay_body(), "x" * 300),
        (b"[]", "evt_1"),
        (b'{"event": "payment.captured", "created_at": 1}', "evt_1"),
        (razorpay_body().replace(b'"created_at": 1767225600', b'"created_at": "now"'), "evt_1"),
        (razorpay_body().replace(b'"event": "payment.captured"', b'"event": 7'), "evt_1"),
    ],
)
def test_malformed_events_are_refused(body: bytes, event_id: str | None) -> None:
    with pytest.raises(EventFormatError):
        parse_razorpay_event(body, event_id)


# --- the route ------------------------------------------------------------------------------------------


def test_valid_event_is_stored_once_byte_identical_and_pending(receiver: Receiver) -> None:
    body = razorpay_body()
    response = receiver.client.post(PATH, content=body, headers=delivery(body))
    assert response.status_code == 200 and response.json() == {"received": True, "duplicate": False}
    with receiver.engine.connect() as connection:
        stored = connection.execute(select(payment_events)).mappings().one()
        processing = connection.execute(select(payment_event_processing)).mappings().one()
    assert stored["payload"].encode() == body
    assert (stored["event_id"], stored["provider"], stored["event_type"], stored["provider_payment_id"]) == (
        "evt_rzp_1",
        "razorpay",
        "payment.captured",
        "pay_DESp9bgForNoUd",
    )
    assert (processing["provider"], processing["status"], processing["account"]) == (
        "razorpay",
        "pending",
        None,
    )


def test_redeliveries_of_an_event_id_store_it_once(receiver: Receiver) -> None:
    body = razorpay_body()

    def deliver(secret: str) -> bool:
        response = receiver.client.post(PATH, content=body, headers=delivery(body, secret=secret))
        assert response.status_code == 200
        return bool(response.json()["duplicate"])

    with ThreadPoolExecutor(8) as pool:
        duplicates = list(pool.map(deliver, [SECRET, OLD_SECRET] * 6))
    assert duplicates.count(False) == 1
    other = receiver.client.post(PATH, content=body, headers=delivery(body, event_id="evt_rzp_2"))
    assert other.json() == {"received": True, "duplicate": False}  # a new event id is a new event
    assert counts(receiver.engine) == (2, 2)


def _bad_deliveries() -> dict[str, tuple[bytes, dict[str, str], int, str]]:
    body = razorpay_body()
    unsigned = {"Content-Type": "application/json", "x-razorpay-event-id": "evt_rzp_1"}
    big = razorpay_body(payment={"entity": {"id": "pay_1", "description": "x" * MAX_BODY}})
    no_payload = json.dumps({"entity": "event", "event": "payment.captured", "created_at": 1}).encode()
    return {
        "wrong_secret": (body, delivery(body, secret="whsec_attacker"), 400, "no_matching_signature"),
        "tampered_body": (body + b"\n", delivery(body), 400, "no_matching_signature"),
        "missing_signature": (body, unsigned, 400, "missing_header"),
        "not_hex": (body, {**unsigned, "X-Razorpay-Signature": "z" * 64}, 400, "malformed_header"),
        "stripe_style_header": (
            body,
            {**unsigned, "X-Razorpay-Signature": "t=1,v1=ab"},
            400,
            "malformed_header",
        ),
        "missing_event_id": (body, delivery(body, event_id=None), 400, "malformed_event"),
        "no_payload": (no_payload, delivery(no_payload), 400, "malformed_event"),
        "not_json": (b"{", delivery(b"{"), 400, "malformed_event"),
        "oversized": (big, delivery(big), 413, "body_too_large"),
    }


@pytest.mark.parametrize("case", list(_bad_deliveries()))
def test_bad_delivery_is_refused_and_stores_nothing(receiver: Receiver, case: str) -> None:
    body, headers, status, reason = _bad_deliveries()[case]
    response = receiver.client.post(PATH, content=body, headers=headers)
    assert (response.status_code, response.json()) == (status, {"error": reason})
    assert SECRET not in response.text and OLD_SECRET not in response.text
    assert counts(receiver.engine) == (0, 0)


def test_a_stripe_signed_delivery_is_not_a_razorpay_one(receiver: Receiver) -> None:
    body = event_body("evt_cross")
    response = receiver.client.post(PATH, content=body, headers={**signed(body), "x-razorpay-event-id": "e"})
    assert (response.status_code, response.json()) == (400, {"error": "missing_header"})
    assert counts(receiver.engine) == (0, 0)
