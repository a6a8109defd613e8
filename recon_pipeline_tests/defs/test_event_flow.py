"""Orphan sweep → pending-events sensor → processor job → bookings confirmed → late night re-opened."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg
from sqlalchemy import func, select

from recon_pipeline.db.schema import booking_confirmations, bookings, payment_event_processing, stale_nights
from recon_pipeline.defs.batches import BATCH_TAG, NIGHT_TAG, PROPERTIES_TAG, batch_run_config
from recon_pipeline.defs.events import pending_events_sensor, process_payment_events_job, stale_nights_sensor
from recon_pipeline.events.recovery import enqueue_orphaned_payments
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline


def test_orphans_are_confirmed_through_the_event_pipeline(seeded_pipeline: SeededPipeline) -> None:
    engine, instance = seeded_pipeline.engine, seeded_pipeline.instance
    first = DEMO_PROPERTIES[0].property_id
    assert seeded_pipeline.materialize(first).success  # this night is reconciled before the events arrive
    orphans = sum(
        n
        for (_p, _n, category), n in seeded_pipeline.world.expected.items()
        if category == "orphaned_captured_payment"
    )

    swept = enqueue_orphaned_payments(engine, datetime.now(UTC), timedelta(minutes=60))
    assert swept.stored == orphans == 6

    context = dg.build_sensor_context(instance=instance, resources=seeded_pipeline.resources)
    sensor_result = pending_events_sensor(context)
    assert isinstance(sensor_result, dg.SensorResult) and len(sensor_result.run_requests or []) == 1

    job = dg.Definitions(
        jobs=[process_payment_events_job], resources=seeded_pipeline.resources
    ).resolve_job_def(process_payment_events_job.name)
    assert job.execute_in_process(instance=instance).success

    with engine.connect() as connection:
        outcomes = connection.execute(
            select(payment_event_processing.c.status, payment_event_processing.c.outcome)
        ).all()
        still_confirming = connection.execute(
            select(func.count()).select_from(bookings).where(bookings.c.status == "confirming")
        ).scalar_one()
        confirmations = connection.execute(
            select(func.count()).select_from(booking_confirmations)
        ).scalar_one()
        stale = connection.execute(select(stale_nights.c.property_id, stale_nights.c.night)).all()
    assert [tuple(o) for o in outcomes] == [("processed", "booking_confirmed")] * orphans
    assert (still_confirming, confirmations) == (0, orphans)
    assert sorted(tuple(row) for row in stale) == sorted(
        (p.property_id, NIGHT.isoformat()) for p in DEMO_PROPERTIES
    )

    # Every property's night went stale, but only the one reconciled (successfully) is reconciled again:
    # one batch of it alone, its properties in run config and tags.
    stale_context = dg.build_sensor_context(instance=instance, resources=seeded_pipeline.resources)
    reopen = stale_nights_sensor(stale_context)
    assert isinstance(reopen, dg.SensorResult)
    [request] = reopen.run_requests or []
    assert request.partition_key == NIGHT.isoformat()
    assert request.run_config == batch_run_config([first])
    batch_key = request.tags[BATCH_TAG]
    assert batch_key.startswith(f"{NIGHT.isoformat()}@")
    assert (request.tags[NIGHT_TAG], request.tags[PROPERTIES_TAG]) == (NIGHT.isoformat(), "1")
    assert request.run_key is not None and request.run_key.startswith(f"reopen:{batch_key}:")
    # The same stale generation asks for the same run (Dagster dedupes it by run key).
    again = stale_nights_sensor(
        dg.build_sensor_context(instance=instance, resources=seeded_pipeline.resources)
    )
    assert isinstance(again, dg.SensorResult)
    assert [r.run_key for r in again.run_requests or []] == [request.run_key]
