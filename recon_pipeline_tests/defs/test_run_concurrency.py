"""The run queue's tag limit on recon/provider_bound holds with the real daemon.

Six provider-bound runs (three night partitions, each run a batch of one property) are queued through
the webserver's GraphQL API against a DAGSTER_HOME whose dagster.yaml is deploy/dagster.yaml with the tag
limit at 2 (the `concurrency:` block, so the QueuedRunCoordinator). The simulator answers slowly, so runs
overlap unless the queue holds them back; the run records' start and end times then show how many were in
progress at once.
"""

from __future__ import annotations

import time
from datetime import date

import dagster as dg
import httpx
import pytest

from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.support.dagster_processes import StartWorld, wait_for_runs
from recon_pipeline_tests.support.run_intervals import max_in_progress

NIGHTS = (date(2026, 11, 27), date(2026, 11, 28), date(2026, 11, 29))
PROPERTIES = (DEMO_PROPERTIES[0], DEMO_PROPERTIES[2])  # 3 nights × 2 one-property batches = 6 runs
TAG_LIMIT = 2
SLOW_MS = 700  # every provider response; a run makes several requests, so it lasts a few seconds
STARTUP_TIMEOUT_S = 90
RUNS_TIMEOUT_S = 400  # six runs, two at a time: over 200 s on a loaded 2-core machine


def test_max_in_progress() -> None:
    assert max_in_progress([(0, 2), (1, 3), (2, 4)]) == 2
    assert max_in_progress([(0, 10), (1, 3), (2, 4)]) == 3
    assert max_in_progress([(0, 1), (1, 2)]) == 1


@pytest.mark.slow
@pytest.mark.postgres
def test_tag_limit_caps_provider_bound_runs_through_the_daemon(pg_dagster_world: StartWorld) -> None:
    started = time.monotonic()
    w = pg_dagster_world(
        NIGHTS,
        bookings_per_night=8,
        properties=PROPERTIES,
        dagster_yaml={
            "concurrency": {
                "runs": {
                    "max_concurrent_runs": 10,
                    "tag_concurrency_limits": [{"key": PROVIDER_BOUND_TAG, "limit": TAG_LIMIT}],
                }
            },
            "run_queue": {"dequeue_interval_seconds": 1},
        },
    )
    instance = w.instance
    batches = w.world.property_nights()  # one run per property-night: a batch of one property
    assert len(batches) == 6
    slow = httpx.post(f"{w.simulator_url}/_simulator/faults", json={"slow_ms": SLOW_MS}, timeout=5)
    slow.raise_for_status()
    config = instance.get_concurrency_config().run_queue_config
    assert config is not None
    assert config.tag_concurrency_limits == [{"key": PROVIDER_BOUND_TAG, "limit": TAG_LIMIT}]
    with w.deployment() as deployment:
        deployment.start_code_server(STARTUP_TIMEOUT_S)
        client = deployment.start_webserver(STARTUP_TIMEOUT_S)
        client.wait_for_location(STARTUP_TIMEOUT_S, deployment)
        # Stopped for the same reason as in test_ui_backfill: a schedule tick would add
        # provider-bound runs of these nights that compete for the same two slots.
        client.stop_all_instigators()
        # Queue all six before the daemon exists, so the queue alone decides what starts when.
        run_ids = [client.launch_partition_run(night, [property_id]) for night, property_id in batches]
        queued = instance.get_run_records(dg.RunsFilter(run_ids=run_ids))
        assert {r.dagster_run.status for r in queued} == {dg.DagsterRunStatus.QUEUED}
        deployment.start_daemon()
        with deployment.logs_on_failure():
            records = wait_for_runs(instance, run_ids, RUNS_TIMEOUT_S, deployment)

    statuses = {r.dagster_run.run_id: r.dagster_run.status for r in records}
    assert set(statuses.values()) == {dg.DagsterRunStatus.SUCCESS}, statuses
    assert all(r.dagster_run.tags[PROVIDER_BOUND_TAG] == "true" for r in records)
    intervals = [(float(r.start_time or 0), float(r.end_time or 0)) for r in records]
    assert all(0 < start < end for start, end in intervals), intervals
    peak = max_in_progress(intervals)
    # Exactly the limit: never more, and the slow provider makes the runs overlap up to it (a
    # queue that ran them one by one would also be wrong for the deployment's throughput).
    assert peak == TAG_LIMIT, intervals
    stats = httpx.get(f"{w.simulator_url}/_simulator/stats", timeout=5).json()
    assert stats["api_requests"] >= len(batches)  # the runs really went through the slow simulator
    assert stats["in_flight"] == 0
    print(f"concurrency test: peak {peak}, {stats['api_requests']} provider requests, intervals {intervals}")
    print(f"concurrency test wall time: {time.monotonic() - started:.1f} s")
