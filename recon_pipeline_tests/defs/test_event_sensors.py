"""The pending-events and stale-nights sensors, with build_sensor_context on a real instance and database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import dagster as dg
import pytest
from sqlalchemy import Engine, insert

from recon_pipeline.batches.plan import plan_batches
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import properties
from recon_pipeline.defs.batches import batch_properties, batch_size
from recon_pipeline.defs.events import pending_events_sensor, stale_nights_sensor
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.events.stale import mark_night_stale
from recon_pipeline.events.store import store_event
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.events import ProviderEvent
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.storage.night_outcomes import FAILED, SUCCEEDED, PropertyOutcome, record_outcomes

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


LISBON_ANNEX = PropertyRow("lisbon-annex", "Lisbon Annex", "Europe/Lisbon", "EUR", "00:00", None)


def reconciled(engine: Engine, property_id: str, night: str, at: datetime, status: str = SUCCEEDED) -> None:
    """The property-night's latest reconciliation, started ``at``, as a run records it
    (``night_reconciliations``)."""
    error = None if status == SUCCEEDED else f"property {property_id} night {night}: RuntimeError: boom"
    with engine.begin() as connection:
        record_outcomes(
            connection, [PropertyOutcome(property_id, night, "run-1", None, status, at, at, error)]
        )


def late_event(engine: Engine, property_id: str, night: str, at: datetime) -> None:
    with engine.begin() as connection:
        mark_night_stale(connection, property_id, night, "late payment_intent.succeeded", at)


def reopened(result: dg.SensorResult) -> dict[tuple[str, tuple[str, ...]], str]:
    """The run key of each of the sensor's requests, by (night, properties of its batch)."""
    return {
        (str(r.partition_key), tuple(batch_properties(r.run_config))): str(r.run_key)
        for r in result.run_requests or []
    }


NIGHT = "2026-11-30"
RIVERSIDE = (NIGHT, ("lisbon-riverside",))
KYOTO = (NIGHT, ("kyoto-gion",))


@pytest.mark.slow  # Dagster runs of the event job
def test_a_late_event_reopens_a_reconciled_night_once_per_generation(database_url: str) -> None:
    """Only property-nights whose latest reconciliation succeeded, and started before the late event, are
    reopened, batched per night and window as the schedule batches them, with a run key naming each
    member's generation."""
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(insert(properties), [p.row() for p in (*DEMO_PROPERTIES, LISBON_ANNEX)])
    minutes = [NOW - timedelta(minutes=60 - m) for m in range(61)]  # minutes[60] is NOW
    with dg.instance_for_test() as instance:
        for property_id in ("lisbon-riverside", "lisbon-annex", "kyoto-gion"):
            late_event(engine, property_id, NIGHT, minutes[10])
        late_event(engine, "lisbon-riverside", "2026-11-29", minutes[10])
        never = evaluate(stale_nights_sensor, instance, database_url, None)
        assert not never.run_requests and never.skip_reason == dg.SkipReason("no reconciled night went stale")
        reconciled(engine, "lisbon-riverside", NIGHT, minutes[0])
        reconciled(engine, "kyoto-gion", NIGHT, minutes[0])
        reconciled(
            engine, "lisbon-annex", NIGHT, minutes[0], FAILED
        )  # its failure is the schedule's to retry
        result = evaluate(stale_nights_sensor, instance, database_url, None)
        first = reopened(result)
        assert sorted(first) == [KYOTO, RIVERSIDE]
        [lisbon_batch] = plan_batches(
            [DEMO_PROPERTIES[0]], date(2026, 11, 30), batch_size(), one_window_each=True
        )
        [request] = [r for r in result.run_requests or [] if r.run_key == first[RIVERSIDE]]
        assert request.run_key is not None and request.run_key.startswith(f"reopen:{lisbon_batch.key}:")
        assert request.tags == {
            "recon/night": NIGHT,
            "recon/batch": lisbon_batch.key,
            "recon/properties": "1",
            "recon/reason": "late_event",
        }
        assert reopened(evaluate(stale_nights_sensor, instance, database_url, None)) == first  # same keys

        late_event(engine, "lisbon-riverside", NIGHT, minutes[20])
        again = reopened(evaluate(stale_nights_sensor, instance, database_url, None))
        assert again[RIVERSIDE] != first[RIVERSIDE]  # a new generation
        assert again[KYOTO] == first[KYOTO]

        # Riverside's reopen run reconciled it after its last late event; the annex's retry succeeded
        # before its own: only the annex is reopened, riverside is not reconciled again with it.
        reconciled(engine, "lisbon-riverside", NIGHT, minutes[30])
        reconciled(engine, "lisbon-annex", NIGHT, minutes[5])
        assert sorted(reopened(evaluate(stale_nights_sensor, instance, database_url, None))) == [
            KYOTO,
            (NIGHT, ("lisbon-annex",)),
        ]
        late_event(engine, "lisbon-riverside", NIGHT, minutes[40])  # a late event after its reopen run
        assert sorted(reopened(evaluate(stale_nights_sensor, instance, database_url, None))) == [
            KYOTO,
            (NIGHT, ("lisbon-annex", "lisbon-riverside")),
        ]
