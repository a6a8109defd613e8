"""The event processor once per registered provider over real HTTP to the simulator serving the same store
in that provider's API, on SQLite and PostgreSQL: deliveries are signed and read as the webhook receiver
reads them, and the payment's current state is read by id (a PaymentIntent and its charge at Stripe, the
payment at Razorpay, the settlement reports at Adyen) and applied once, whatever the payloads."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import insert

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import booking_confirmations, bookings, payment_event_processing, payment_orders
from recon_pipeline.db.schema import properties as properties_table
from recon_pipeline.events.processor import ProcessCounts, process_available
from recon_pipeline.events.recovery import enqueue_orphaned_payments, recover_missed_events
from recon_pipeline.events.store import store_event
from recon_pipeline.providers import provider_named
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.simulation.adyen import api as adyen_simulator
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.processor_harness import CREATED, NIGHT, OPEN, Harness
from recon_pipeline_tests.support.provider_fixtures import (
    ADYEN,
    FAST_RETRY,
    WEBHOOK_SECRET,
    Flavour,
    StartSimulator,
    make_refund,
    notification_body,
)


@dataclass
class ProviderHarness(Harness):
    """The processor harness speaking ``provider``'s API, with its ids and its webhook payloads."""

    provider: Flavour | None = None
    stored_ids: dict[str, str] = field(default_factory=dict)

    @property
    def flavour(self) -> Flavour:
        assert self.provider is not None
        return self.provider

    def order_id(self, charge: dict[str, Any], intent: dict[str, Any]) -> str:
        """The ``payment_orders`` key: the intent where payments go through one, else the payment."""
        return str(intent["id"]) if self.flavour.intents else str(charge["id"])

    def deliver_payment(self, event_id: str, charge: dict[str, Any], intent: dict[str, Any]) -> bool:
        """A signed webhook about the payment as the provider sends it (a snapshot, possibly stale), read
        by the provider as the receiver reads it and stored; the stored id is ``stored_ids[event_id]``."""
        now = int(self.clock.now.timestamp())
        body, headers = self.flavour.payment_delivery(event_id, charge, intent, now)
        (received,) = provider_named(self.flavour.name).read_delivery(body, headers, [WEBHOOK_SECRET], now)
        self.stored_ids[event_id] = received.event.event_id
        with self.engine.begin() as connection:
            return store_event(
                connection, self.flavour.name, received.event, received.payload, self.clock.now
            )

    def process(self, worker_id: str = "w1", **options: Any) -> ProcessCounts:
        with ProviderHttp(self.sim.base_url, retry=FAST_RETRY) as http:
            adapter = self.flavour.adapter(http)
            return process_available(self.engine, adapter, worker_id, clock=self.clock, **options)


@pytest.fixture
def harness(database_url: str, simulator: StartSimulator, provider: Flavour) -> Iterator[ProviderHarness]:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        row = {"property_id": "prop_a", "name": "A", "timezone": "Europe/Berlin", "currency": "EUR"}
        row["provider_account"] = provider.property_account
        connection.execute(insert(properties_table), [row])
    sim = simulator(provider.served(SimulatorStore()), flavour=provider.name)
    yield ProviderHarness(engine, sim, provider=provider)
    engine.dispose()


def _payment(h: ProviderHarness, name: str, **fields: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    charge, intent = h.add_payment(name, **fields)
    if not h.flavour.intents:  # the payment is its own order: no intent
        charge["id"] = h.flavour.charge_id(name)
        charge["payment_intent"] = None
        h.store.payment_intents.remove(intent)
        h.store.reindex()
    return charge, intent


def _refund(h: ProviderHarness, charge: dict[str, Any], amount: int) -> None:
    """The provider refunds ``amount`` of the payment after the events were sent: the charge says so, and
    a refund is on record (what a settlement report lists)."""
    charge.update(amount_refunded=amount, refunded=amount >= charge["amount"])
    refund = make_refund(
        h.flavour.refund_id(f"{charge['id']}{amount}"), charge, charge["created"] + 60, amount
    )
    h.store.refunds.append(refund)
    h.store.reindex()


def test_duplicates_and_stale_payloads_converge_on_the_current_state(harness: ProviderHarness) -> None:
    h = harness
    charge, intent = _payment(h, "dup", amount=12_000)
    h.add_booking("bk_dup")
    assert [h.deliver_payment("evt_dup", charge, intent) for _ in range(3)] == [True, False, False]
    h.deliver_payment("evt_later", charge, intent)
    _refund(h, charge, 2_000)  # the provider moved on after the events were sent

    counts = h.process()

    assert (counts.claimed, counts.processed, counts.retried, counts.dead) == (2, 2, 0, 0)
    order = h.one(payment_orders, provider_payment_id=h.order_id(charge, intent))
    assert (order["status"], order["amount_minor"], order["amount_refunded_minor"], order["currency"]) == (
        "partially_refunded",
        12_000,
        2_000,
        "EUR",
    )
    assert order["captured_at"] == CREATED and order["booking_id"] == "bk_dup"
    assert h.one(bookings, booking_id="bk_dup")["status"] == "confirmed"
    assert h.count(booking_confirmations) == 1
    events = sorted(h.rows(payment_event_processing), key=lambda row: row["seq"])
    assert [(e["outcome"], e["property_id"], e["night"]) for e in events] == [
        ("booking_confirmed", "prop_a", NIGHT),
        ("booking_already_confirmed", "prop_a", NIGHT),
    ]


@pytest.mark.parametrize(
    ("changes", "order_status", "outcome"),
    [
        ({"refunded": True}, "refunded", "payment_refunded"),
        ({"status": "failed", "captured": False, "balance_transaction": None}, "failed", "payment_failed"),
    ],
)
def test_refunded_and_failed_payments_leave_the_booking(
    harness: ProviderHarness, changes: dict[str, Any], order_status: str, outcome: str
) -> None:
    h = harness
    charge, intent = _payment(h, "rf")
    h.add_booking("bk_rf")
    h.deliver_payment("evt_rf", charge, intent)
    if changes.get("refunded"):
        _refund(h, charge, charge["amount"])
    else:
        charge.update(changes)
        intent.update(status="requires_payment_method")
    event_id = h.stored_ids["evt_rf"]

    if outcome == "payment_failed" and not h.flavour.reports_failed_payments:
        # A failed payment settles nothing: no report holds it, so the provider does not know it.
        assert (h.process().dead, h.rows(payment_orders)) == (1, [])
        assert h.one(bookings, booking_id="bk_rf")["status"] == "pending"
        return
    assert h.process().processed == 1

    assert h.one(payment_orders, provider_payment_id=h.order_id(charge, intent))["status"] == order_status
    assert h.one(bookings, booking_id="bk_rf")["status"] == "pending"
    assert h.one(payment_event_processing, event_id=event_id)["outcome"] == outcome


def test_provider_unavailable_is_retried_later_then_processed(harness: ProviderHarness) -> None:
    h = harness
    charge, intent = _payment(h, "down")
    h.add_booking("bk_down")
    h.deliver_payment("evt_down", charge, intent)
    h.sim.set_faults(statuses=[503] * FAST_RETRY.max_attempts)

    assert (h.process().retried, h.rows(payment_orders)) == (1, [])
    event = h.one(payment_event_processing, event_id=h.stored_ids["evt_down"])
    assert (event["status"], event["attempts"]) == ("failed", 1) and "503" in event["last_error"]

    h.clock.now += timedelta(hours=2)
    assert h.process().processed == 1
    assert h.one(bookings, booking_id="bk_down")["status"] == "confirmed"


def test_a_payment_unknown_to_the_provider_is_dead(harness: ProviderHarness) -> None:
    h = harness
    charge, intent = _payment(h, "gone")
    h.deliver_payment("evt_gone", charge, intent)
    h.store.charges.clear()
    h.store.payment_intents.clear()
    h.store.reindex()

    assert h.process().dead == 1

    event = h.one(payment_event_processing, event_id=h.stored_ids["evt_gone"])
    assert event["status"] == "dead" and "does not know payment" in event["last_error"]


def test_the_orphan_sweep_confirms_through_the_processor(harness: ProviderHarness) -> None:
    h = harness
    charge, intent = _payment(h, "orph")
    h.add_booking("bk_orph", status="confirming")
    order = {
        "provider_payment_id": h.order_id(charge, intent),
        "property_id": "prop_a",
        "booking_id": "bk_orph",
        "amount_minor": 10_000,
        "amount_refunded_minor": 0,
        "currency": "EUR",
        "status": "captured",
        "captured_at": CREATED,
        "updated_at": CREATED,
    }
    with h.engine.begin() as connection:
        connection.execute(insert(payment_orders).values(order))
    h.clock.now = OPEN + timedelta(hours=3)

    assert enqueue_orphaned_payments(h.engine, h.clock.now, timedelta(minutes=60)).stored == 1
    assert h.process().processed == 1

    assert h.one(bookings, booking_id="bk_orph")["status"] == "confirmed"


def test_events_recovery_runs_where_the_provider_has_an_events_api(
    harness: ProviderHarness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    caplog.set_level(logging.INFO, logger="recon_pipeline.events.recovery")
    with ProviderHttp(h.sim.base_url, retry=FAST_RETRY) as http:
        counts = recover_missed_events(h.engine, h.flavour.adapter(http), OPEN)
    assert (counts.seen, counts.stored) == (0, 0)
    no_api = f"{h.flavour.name} has no events API"
    skipped = [r.getMessage() for r in caplog.records if no_api in r.getMessage()]
    requests = h.sim.stats()["api_requests"]
    if h.flavour.has_events_api:
        assert skipped == [] and requests == 1  # GET /v1/events for the platform
    else:
        assert len(skipped) == 1 and requests == 0


def test_an_adyen_report_notification_has_no_payment_to_read(
    database_url: str, simulator: StartSimulator
) -> None:
    """REPORT_AVAILABLE names a report, not a payment: processed as ``no_payment_reference``, no request."""
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    sim = simulator(ADYEN.served(SimulatorStore()), flavour=ADYEN.name)
    h = ProviderHarness(engine, sim, provider=ADYEN)
    item = adyen_simulator.report_available_item(
        sim.base_url, adyen_simulator.SIMULATOR_MERCHANT_ACCOUNT, 7, "2026-03-11T06:05:00+01:00"
    )
    body = notification_body([adyen_simulator.signed(item, WEBHOOK_SECRET)])
    (received,) = provider_named(ADYEN.name).read_delivery(body, {}, [WEBHOOK_SECRET], 0)
    with engine.begin() as connection:
        assert store_event(connection, ADYEN.name, received.event, received.payload, h.clock.now)

    assert (h.process().processed, h.sim.stats()["api_requests"]) == (1, 0)

    event = h.one(payment_event_processing, event_id=received.event.event_id)
    assert (event["status"], event["outcome"]) == ("processed", "no_payment_reference")
    assert h.rows(payment_orders) == []
    engine.dispose()
