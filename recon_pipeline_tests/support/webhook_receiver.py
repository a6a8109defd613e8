"""A webhook receiver served over real HTTP on 127.0.0.1 per database, and signed Stripe deliveries for it:
the builders of the receiver, limits, Razorpay and fuzzing tests."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select

from recon_pipeline.db.schema import payment_event_processing, payment_events
from recon_pipeline.providers.stripe.webhook import sign
from recon_pipeline.serving import ServerThread
from recon_pipeline.webhooks.receiver import build_receiver
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.migrated import migrated_engine
from recon_pipeline_tests.support.shared_servers import serving

SECRET = "whsec_test_current_0123456789"


OLD_SECRET = "whsec_test_previous_9876543210"


MAX_BODY = 4096


PATH = "/webhooks/stripe"


@dataclass
class Receiver:
    engine: Engine
    client: httpx.Client
    server: ServerThread


def event_body(event_id: str = "evt_1", **overrides: Any) -> bytes:
    """A Stripe event as Stripe serialises it (indented), so byte-identity is a real check."""
    event: dict[str, Any] = {
        "id": event_id,
        "object": "event",
        "type": "payment_intent.succeeded",
        "created": 1_760_000_000,
        "data": {"object": {"id": "pi_123", "object": "payment_intent", "amount": 12_500, "currency": "eur"}},
    }
    event.update(overrides)
    return json.dumps(event, indent=2, ensure_ascii=False).encode()


def signed(body: bytes, secret: str = SECRET, age_s: int = 0) -> dict[str, str]:
    return {
        "Stripe-Signature": sign(body, secret, int(time.time()) - age_s),
        "Content-Type": "application/json",
    }


def counts(engine: Engine) -> tuple[int, int]:
    with engine.connect() as connection:
        events = connection.execute(select(func.count()).select_from(payment_events)).scalar_one()
        processing = connection.execute(
            select(func.count()).select_from(payment_event_processing)
        ).scalar_one()
    return events, processing


@pytest.fixture
def receiver(database_url: str) -> Iterator[Receiver]:
    engine = migrated_engine(database_url)
    app = build_receiver(engine, [SECRET, OLD_SECRET], max_body_bytes=MAX_BODY)
    with serving(app) as server, loopback_client(base_url=server.base_url, timeout=10) as client:
        yield Receiver(engine, client, server)
    engine.dispose()
