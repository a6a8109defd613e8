"""The event processor's harness: a database, the simulator over real HTTP, the processor's clock, and the
payments, bookings and stored events a test sets up."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, Table, func, insert, select

from recon_pipeline.db.schema import bookings
from recon_pipeline.events.processor import ProcessCounts, process_available
from recon_pipeline.events.store import store_event
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.providers.stripe.webhook import parse_event as parse_stripe_event
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.provider_fixtures import (
    FAST_RETRY,
    RunningSimulator,
    make_charge,
    make_payment_intent,
)

CREATED = datetime(2026, 3, 10, 20, 0, tzinfo=UTC)  # 21:00 in Berlin: night 2026-03-10


NIGHT = "2026-03-10"


OPEN = datetime(2026, 3, 10, 21, 0, tzinfo=UTC)  # the night ends at 23:00 UTC


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Harness:
    engine: Engine
    sim: RunningSimulator
    clock: Clock = field(default_factory=lambda: Clock(OPEN))

    @property
    def store(self) -> SimulatorStore:
        return self.sim.store

    def add_payment(self, name: str, **charge_fields: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """A succeeded charge and its PaymentIntent at the provider (fields as ``make_charge``)."""
        charge = make_charge(f"ch_{name}", int(CREATED.timestamp()), booking_id=f"bk_{name}", **charge_fields)
        intent = make_payment_intent(charge)
        self.store.charges.append(charge)
        self.store.payment_intents.append(intent)
        self.store.reindex()
        return charge, intent

    def add_booking(self, booking_id: str, status: str = "pending") -> None:
        row = {
            "booking_id": booking_id,
            "property_id": "prop_a",
            "status": status,
            "amount_minor": 10_000,
            "currency": "EUR",
            "created_at": CREATED - timedelta(hours=1),
            "updated_at": CREATED - timedelta(hours=1),
        }
        with self.engine.begin() as connection:
            connection.execute(insert(bookings).values(row))

    def deliver(
        self, event_id: str, event_type: str, obj: dict[str, Any], account: str | None = None
    ) -> bool:
        """Store an event as the webhook receiver does; ``obj`` is the (possibly stale) payload."""
        event = {
            "id": event_id,
            "type": event_type,
            "created": int(self.clock.now.timestamp()),
            "data": {"object": {key: value for key, value in obj.items() if key != "account"}},
        }
        if account is not None:
            event["account"] = account
        body = json.dumps(event)
        with self.engine.begin() as connection:
            return store_event(connection, "stripe", parse_stripe_event(body), body, self.clock.now)

    def process(self, worker_id: str = "w1", **options: Any) -> ProcessCounts:
        with ProviderHttp(self.sim.base_url, retry=FAST_RETRY) as http:
            return process_available(self.engine, StripeAdapter(http), worker_id, clock=self.clock, **options)

    def rows(self, table: Table, **where: Any) -> list[dict[str, Any]]:
        query = select(table).where(*(table.c[name] == value for name, value in where.items()))
        with self.engine.connect() as connection:
            return [row._asdict() for row in connection.execute(query)]

    def one(self, table: Table, **where: Any) -> dict[str, Any]:
        (row,) = self.rows(table, **where)
        return row

    def count(self, table: Table) -> int:
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(table)).scalar_one())
