"""The pending-events and stale-nights sensors, with build_sensor_context on a real instance and database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from sqlalchemy import Engine

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.defs.events import pending_events_sensor, stale_nights_sensor
from recon_pipeline.defs.partitions import PROPERTY_DIMENSION, PropertyNight
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.events.parse import ProviderEvent
from recon_pipeline.events.stale import mark_night_stale
from recon_pipeline.events.store import store_event

NOW = datetime.now(UTC)


def receive(engine: Engine, *event_ids: str) -> None:
    with engine.begin() as connection:
        for event_id in event_ids:
            event = ProviderEvent(event_id, "payment_intent.succeeded", 1, f"pi_{event_id}", None)
            store_event(connection, "stripe", event, "{}", NOW - timedelta(minutes=3))


def evaluate(
    sensor: dg.SensorDefinition, instance: dg.DagsterInstance, url: str, cursor: str | None
) -> dg.SensorResult:
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"recon_db": ReconDatabase(database_url=url)}
    )
    result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


@pytest.mark.slow  # Dagster runs of the event job
def test_pending_events_request_one_run_per_unit_of_work(database_url: str) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with dg.instance_for_test() as instance:
        idle = evaluate(pending_events_sensor, instance, database_url, None)
        assert (idle.run_requests, idle.cursor) == ([], "0")
        receive(engine, "evt_a", "evt_b", "evt_c")
        first = evaluate(pending_events_sensor, instance, database_url, idle.cursor)
        [request] = first.run_requests or []
        assert request.run_key is not None and request.run_key.startswith("events-1-3-")
        assert request.tags["recon/backlog_depth"] == "3"
        assert int(request.tags["recon/oldest_pending_age_s"]) >= 180
        assert first.cursor == "3"
        repeat = evaluate(pending_events_sensor, instance, database_url, first.cursor)
        assert [r.run_key for r in repeat.run_requests or []] == [request.run_key]  # same work, same key
        receive(engine, "evt_d")
        grown = evaluate(pending_events_sensor, instance, database_url, repeat.cursor)
        assert grown.cursor == "4"
        assert [r.run_key for r in grown.run_requests or []] != [request.run_key]
        assert evaluate(pending_events_sensor, instance, database_url, "9").cursor == "9"  # never backwards


@pytest.mark.slow  # Dagster runs of the event job
def test_a_late_event_reopens_a_reconciled_night_once_per_generation(database_url: str) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    key = PropertyNight("lisbon-riverside", "2026-11-30").partition_key
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PROPERTY_DIMENSION, ["lisbon-riverside"])
        with engine.begin() as connection:
            mark_night_stale(
                connection, "lisbon-riverside", "2026-11-30", "late payment_intent.succeeded", NOW
            )
            mark_night_stale(connection, "lisbon-riverside", "2026-11-29", "late refund", NOW)
        assert not evaluate(
            stale_nights_sensor, instance, database_url, None
        ).run_requests  # never reconciled
        instance.report_runless_asset_event(dg.AssetMaterialization("discrepancy_report", partition=str(key)))
        [request] = evaluate(stale_nights_sensor, instance, database_url, None).run_requests or []
        assert (str(request.partition_key), request.run_key) == (str(key), f"reopen:{key}:g1")
        with engine.begin() as connection:
            mark_night_stale(connection, "lisbon-riverside", "2026-11-30", "another late event", NOW)
        [again] = evaluate(stale_nights_sensor, instance, database_url, None).run_requests or []
        assert again.run_key == f"reopen:{key}:g2"
