"""The backlog the pending-events sensor reads, and run keys derived from the work."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import payment_event_processing
from recon_pipeline.events.backlog import events_run_key, read_backlog
from recon_pipeline.events.store import store_event
from recon_pipeline.providers.events import ProviderEvent

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_run_keys_follow_the_work() -> None:
    assert events_run_key([(1, 0), (2, 0)]) == events_run_key([(1, 0), (2, 0)])
    assert events_run_key([(1, 0), (2, 0)]) != events_run_key([(1, 0), (2, 1)])  # a retry is new work
    assert events_run_key([(1, 0), (2, 0)]) != events_run_key([(1, 0), (3, 0)])
    assert events_run_key([(4, 0), (9, 2)]).startswith("events-4-9-")


def test_backlog_counts_due_waiting_dead_and_age(database_url: str) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        for index in range(5):
            event = ProviderEvent(f"evt_{index}", "payment_intent.succeeded", 1, f"pi_{index}", None)
            assert store_event(connection, "stripe", event, "{}", NOW - timedelta(minutes=10 - index))
        assert not store_event(connection, "stripe", event, "{}", NOW)  # duplicate delivery
        processing = payment_event_processing
        connection.execute(
            update(processing)
            .where(processing.c.event_id == "evt_1")
            .values(status="failed", attempts=1, available_at=NOW + timedelta(minutes=5))
        )
        connection.execute(
            update(processing).where(processing.c.event_id == "evt_2").values(status="dead", attempts=5)
        )
        connection.execute(
            update(processing)
            .where(processing.c.event_id == "evt_3")
            .values(status="processing", attempts=1, locked_until=NOW - timedelta(seconds=1))
        )
        connection.execute(
            update(processing)
            .where(processing.c.event_id == "evt_4")
            .values(status="processing", attempts=1, locked_until=NOW + timedelta(minutes=1))
        )
        backlog = read_backlog(connection, NOW)
    seq = {f"evt_{i}": i + 1 for i in range(5)}
    assert backlog.due == [(seq["evt_0"], 0), (seq["evt_3"], 1)]  # evt_3's lease expired
    assert (backlog.waiting, backlog.dead, backlog.newest_seq) == (2, 1, 5)
    assert backlog.oldest_age_s(NOW) == 600
