"""A night for 200 properties through dagster-celery's executor on the local RabbitMQ, across two Celery
workers that share no disk with each other or with the run workers (issue 13: "nothing on local disk that
another host needs").

The deployment is deploy/'s: code server, webserver and daemon on the PostgreSQL instance
(deploy/dagster.yaml, its run queue and limits), RECON_EXECUTOR=celery configured from the environment,
workers started with deploy/celery/celery.yaml (``celery_workers``). The night is the fleet's (eight
timezones, a quarter on the shared platform account), cut into batches as the nightly schedule cuts it;
each batch is one run submitted through GraphQL. Every step runs in a Celery worker; the planted
discrepancies must all be found, and nothing may pass between steps through an IO manager.
"""

from __future__ import annotations

from collections import Counter
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from sqlalchemy import create_engine, func, select

from recon_pipeline.db.schema import adjustments, discrepancies, night_reconciliations
from recon_pipeline.defs.checks import finding_checks
from recon_pipeline.simulation.demo.fleet import FLEET_BOOKINGS_PER_NIGHT, fleet_properties
from recon_pipeline.storage.night_outcomes import SUCCEEDED
from recon_pipeline_tests.support.celery_workers import (
    CELERY_DAGSTER_YAML,
    NO_THRESHOLD,
    celery_night,
    require_broker,
)
from recon_pipeline_tests.support.dagster_processes import StartWorld

NIGHT = date(2026, 11, 29)
PROPERTIES = 200
WORKERS = 2
# The fleet's night windows cut 200 properties into 15 batches (runs) whatever the size above 25; 50
# keeps the platform account's groups whole and the runs several at a time under the run queue's limit.
BATCH_SIZE = 50
STEPS_PER_RUN = 1 + len(finding_checks)  # reconcile_batch and the batch's own asset checks


@pytest.mark.slow
@pytest.mark.postgres
def test_a_night_for_200_properties_runs_on_two_celery_workers_and_finds_every_planted_discrepancy(
    pg_dagster_world: StartWorld, tmp_path: Path
) -> None:
    require_broker()
    w = pg_dagster_world(
        [NIGHT], FLEET_BOOKINGS_PER_NIGHT, fleet_properties(PROPERTIES), dagster_yaml=CELERY_DAGSTER_YAML
    )
    night = celery_night(w, tmp_path, NIGHT, WORKERS, BATCH_SIZE, env=NO_THRESHOLD)

    assert sum(len(batch.property_ids) for batch in night.batches) == PROPERTIES
    assert night.statuses == {dg.DagsterRunStatus.SUCCESS}, [
        (r.dagster_run.run_id, r.dagster_run.status) for r in night.records
    ]
    # Every step of every run ran in a Celery worker (dagster-celery's engine event names it), and
    # both workers took a share.
    assert all(len(steps) == STEPS_PER_RUN for steps in night.ran_by.values()), night.ran_by
    per_worker = night.steps_per_worker()
    assert sorted(name.split("@")[0] for name in per_worker) == ["worker-0", "worker-1"], per_worker
    assert sum(per_worker.values()) == STEPS_PER_RUN * len(night.records)
    # Nothing went from one step to another through storage: no outputs handled, no inputs loaded.
    passed = [
        event.event_type_value
        for record in night.records
        for event in (
            e.dagster_event for e in w.instance.all_logs(record.dagster_run.run_id) if e.dagster_event
        )
        if event.event_type in (dg.DagsterEventType.HANDLED_OUTPUT, dg.DagsterEventType.LOADED_INPUT)
    ]
    assert passed == []

    engine = create_engine(w.recon_url)
    try:
        with engine.connect() as connection:
            found = Counter(
                tuple(row)
                for row in connection.execute(
                    select(discrepancies.c.property_id, discrepancies.c.night, discrepancies.c.category)
                )
            )
            proposed = connection.execute(select(func.count()).select_from(adjustments)).scalar_one()
            outcomes = Counter(
                connection.execute(
                    select(night_reconciliations.c.status).where(
                        night_reconciliations.c.night == NIGHT.isoformat()
                    )
                ).scalars()
            )
    finally:
        engine.dispose()
    assert found == w.world.world.expected
    assert len({p for p, _night, _category in found}) == PROPERTIES
    assert proposed == w.world.planted_adjustments() > 0
    assert outcomes == {SUCCEEDED: PROPERTIES}
    print(
        f"celery night: {PROPERTIES} properties, {len(night.records)} runs, {WORKERS} workers "
        f"{per_worker}, {night.wall_s:.1f} s"
    )
