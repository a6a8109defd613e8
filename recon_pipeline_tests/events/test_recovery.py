"""Recovery of missed webhooks from /v1/events and the orphan sweep, on SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, insert, select

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import (
    bookings,
    payment_event_processing,
    payment_events,
    payment_orders,
    properties,
    provider_cursors,
)
from recon_pipeline.events.recovery import enqueue_orphaned_payments, recover_missed_events
from recon_pipeline.providers.errors import IncompletePullError
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.provider_fixtures import FAST_RETRY, StartSimulator

NOW = datetime.now(UTC).replace(microsecond=0)


def event(
    event_id: str, created: datetime, payment_intent: str, account: str | None = None
) -> dict[str, Any]:
    return {
        "id": event_id,
        "object": "event",
        "type": "payment_intent.succeeded",
        "created": int(created.timestamp()),
        "data": {"object": {"id": payment_intent, "object": "payment_intent", "status": "succeeded"}},
        "account": account,
    }


def seeded_engine(database_url: str) -> Engine:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            [
                {
                    "property_id": "p-plat",
                    "name": "Platform",
                    "timezone": "Europe/Lisbon",
                    "currency": "EUR",
                    "night_cutoff": "00:00",
                    "provider_account": None,
                },
                {
                    "property_id": "p-conn",
                    "name": "Connected",
                    "timezone": "Asia/Tokyo",
                    "currency": "JPY",
                    "night_cutoff": "00:00",
                    "provider_account": "acct_conn",
                },
            ],
        )
    return engine


def recover(engine: Engine, base_url: str) -> Any:
    with ProviderHttp(base_url, retry=FAST_RETRY) as http:
        return recover_missed_events(engine, StripeAdapter(http), NOW)


def test_missed_events_are_stored_once_and_cursors_advance(
    database_url: str, simulator: StartSimulator
) -> None:
    engine = seeded_engine(database_url)
    events = [event(f"evt_p{i}", NOW - timedelta(minutes=i + 1), f"pi_p{i}") for i in range(150)]
    events += [event("evt_c1", NOW - timedelta(hours=2), "pi_c1", account="acct_conn")]
    sim = simulator(SimulatorStore(events=events))
    first = recover(engine, sim.base_url)
    assert (first.seen, first.stored) == (151, 151)
    with engine.connect() as connection:
        assert len(connection.execute(select(payment_events.c.event_id)).all()) == 151
        rows = dict(
            connection.execute(
                select(payment_event_processing.c.event_id, payment_event_processing.c.account)
            ).all()
        )
        cursors = dict(connection.execute(select(provider_cursors.c.name, provider_cursors.c.value)).all())
    assert rows["evt_c1"] == "acct_conn" and rows["evt_p0"] is None
    assert cursors == {
        "stripe_events:platform": str(int((NOW - timedelta(minutes=1)).timestamp())),
        "stripe_events:acct_conn": str(int((NOW - timedelta(hours=2)).timestamp())),
    }
    again = recover(engine, sim.base_url)
    assert again.stored == 0


def test_a_malformed_event_is_skipped_by_id_and_the_cursor_still_moves(
    database_url: str, simulator: StartSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    engine = seeded_engine(database_url)
    good = [event(f"evt_ok{i}", NOW - timedelta(minutes=10 * i + 1), f"pi_ok{i}") for i in range(6)]
    bad = event("evt_bad", NOW - timedelta(minutes=25), "pi_bad")
    bad["data"] = {"object": "pi_secret_4242"}  # not an object: parse_stripe_event refuses it
    sim = simulator(SimulatorStore(events=[*good, bad]))
    with caplog.at_level(logging.WARNING, logger="recon_pipeline.events.recovery"):
        first = recover(engine, sim.base_url)
    assert (first.seen, first.stored, first.malformed) == (7, 6, 1)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "evt_bad" in warnings[0] and "pi_secret_4242" not in warnings[0]
    with engine.connect() as connection:
        stored = set(connection.execute(select(payment_events.c.event_id)).scalars())
        cursor = connection.execute(
            select(provider_cursors.c.value).where(provider_cursors.c.name == "stripe_events:platform")
        ).scalar()
    assert stored == {e["id"] for e in good}
    assert cursor == str(good[0]["created"])  # the newest event, past the malformed one
    again = recover(engine, sim.base_url)  # reads from the cursor (less the overlap): past evt_bad
    assert (again.seen, again.stored, again.malformed) == (1, 0, 0)


def test_a_failed_events_pull_stores_nothing_and_keeps_the_cursor(
    database_url: str, simulator: StartSimulator
) -> None:
    engine = seeded_engine(database_url)
    sim = simulator(
        SimulatorStore(
            events=[event(f"evt_{i}", NOW - timedelta(minutes=i + 1), f"pi_{i}") for i in range(250)]
        )
    )
    sim.set_faults(fail_after_requests=1)
    with pytest.raises(IncompletePullError):
        recover(engine, sim.base_url)
    with engine.connect() as connection:
        assert connection.execute(select(payment_events)).all() == []
        assert connection.execute(select(provider_cursors)).all() == []


def test_orphan_sweep_queues_unconfirmed_captures_once_a_day(database_url: str) -> None:
    engine = seeded_engine(database_url)
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    captured = now - timedelta(hours=3)
    with engine.begin() as connection:
        for booking_id, status in (
            ("bk_wait", "confirming"),
            ("bk_ok", "confirmed"),
            ("bk_new", "confirming"),
        ):
            connection.execute(
                insert(bookings).values(
                    booking_id=booking_id,
                    property_id="p-conn",
                    status=status,
                    amount_minor=9000,
                    currency="JPY",
                    created_at=captured,
                    updated_at=captured,
                )
            )
        for payment_id, booking_id, when in (
            ("pi_wait", "bk_wait", captured),
            ("pi_ok", "bk_ok", captured),
            ("pi_new", "bk_new", now - timedelta(minutes=5)),
        ):
            connection.execute(
                insert(payment_orders).values(
                    provider_payment_id=payment_id,
                    property_id="p-conn",
                    booking_id=booking_id,
                    amount_minor=9000,
                    amount_refunded_minor=0,
                    currency="JPY",
                    status="captured",
                    captured_at=when,
                    updated_at=when,
                )
            )
    first = enqueue_orphaned_payments(engine, now, timedelta(minutes=60))
    assert (first.seen, first.stored) == (1, 1)
    with engine.connect() as connection:
        queued = connection.execute(
            select(
                payment_event_processing.c.provider_payment_id,
                payment_event_processing.c.account,
                payment_event_processing.c.status,
                payment_event_processing.c.provider,
            )
        ).all()
    assert [tuple(row) for row in queued] == [("pi_wait", "acct_conn", "pending", "recovery")]
    later_that_day = enqueue_orphaned_payments(engine, now + timedelta(hours=6), timedelta(minutes=60))
    assert (later_that_day.seen, later_that_day.stored) == (2, 1)  # pi_new is now past the grace
    assert enqueue_orphaned_payments(engine, now + timedelta(days=1), timedelta(minutes=60)).stored == 2
