"""Real Celery workers for the distributed-executor tests: ``dagster-celery worker start`` processes on the
local RabbitMQ, serving steps of runs on the PostgreSQL-backed instance of ``pg_dagster_world``.

Each worker stands for another host: it has its OWN working directory, DAGSTER_HOME (a copy of the run's
dagster.yaml, whose local storage follows the process's own DAGSTER_HOME, see ``CELERY_DAGSTER_YAML``)
and RECON_HOME, so a step that relied on a file another process wrote fails here as it would across
machines. The workers share with the run worker only what a deployment shares: the Dagster instance in
PostgreSQL, the reconciliation database, the provider, and the broker.

Workers start as deploy/celery/ says (its ``celery.yaml``, the environment of ``celery_env``), and each
set listens on a queue of its own (``recon-test-<random>``, RECON_CELERY_QUEUE of the code server whose
runs it serves): a leftover worker of another test, or a deployment on the same broker, never takes its
tasks. Every wait is bounded; every worker is stopped by its process group at teardown; logs are kept
for failure messages.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from kombu import Connection

from recon_pipeline.batches.plan import NightBatch, plan_batches
from recon_pipeline.defs.batches import batch_tags
from recon_pipeline.defs.executor import CELERY_BROKER_VARIABLE, CELERY_QUEUE_VARIABLE
from recon_pipeline.money import MAX_AMOUNT_MINOR
from recon_pipeline.review.limits import THRESHOLD_ENV
from recon_pipeline_tests.support.dagster_processes import (
    BIN_DIR,
    DEPLOY_DIR,
    DagsterDeployment,
    ManagedProcess,
    PgDagsterWorld,
    start_process,
    wait_for_runs,
    wait_until,
)

BROKER_URL = os.environ.get("RECON_TEST_CELERY_BROKER", "pyamqp://guest:guest@127.0.0.1:5672//")
WORKER_CONFIG = DEPLOY_DIR / "celery" / "celery.yaml"
# Merged into deploy/dagster.yaml for these tests (the run worker's and every Celery worker's instance):
# artifacts and compute logs go under the DAGSTER_HOME of the process that writes them, resolved in that
# process. The default would be the run worker's absolute path, passed to every Celery worker in the
# instance ref, so on one machine they would all share the run worker's folder and hide a step that reads
# another's file. And the run queue looks for queued runs every second (default 5).
CELERY_DAGSTER_YAML: dict[str, Any] = {
    "run_queue": {"dequeue_interval_seconds": 1},
    "local_artifact_storage": {
        "module": "dagster._core.storage.root",
        "class": "LocalArtifactStorage",
        "config": {"base_dir": {"env": "DAGSTER_HOME"}},
    },
    "compute_logs": {
        "module": "dagster._core.storage.local_compute_log_manager",
        "class": "LocalComputeLogManager",
        "config": {"base_dir": {"env": "DAGSTER_HOME"}},
    },
}
# The planted findings of a yen or rupee fleet property exceed the default unexplained-amount threshold,
# which fails its run by design (test_finding_checks.py); a night on Celery is about where steps run.
NO_THRESHOLD = {THRESHOLD_ENV: str(MAX_AMOUNT_MINOR)}
WORKER_TASK = "Celery worker"  # the metadata key of dagster-celery's "Executing steps ... in celery worker"


def broker_reachable(url: str = BROKER_URL) -> str | None:
    """None if the broker answers, else the reason it does not."""
    try:
        with Connection(url, connect_timeout=3) as connection:
            connection.ensure_connection(max_retries=1)
    except Exception as error:  # kombu raises the transport's own errors
        return f"{type(error).__name__}: {error}"
    return None


def require_broker() -> None:
    """Skip without RabbitMQ, or fail where it is required (CI sets RECON_REQUIRE_POSTGRES, and starts
    both servers): like the PostgreSQL tests, a CI run can never pass by not running these."""
    reason = broker_reachable()
    if reason is None:
        return
    if os.environ.get("RECON_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"RabbitMQ is required here but unreachable at {BROKER_URL}: {reason}")
    pytest.skip(f"RabbitMQ unreachable at {BROKER_URL}: {reason}")


def celery_env(queue: str) -> dict[str, str]:
    """What the code server (so every run worker) and every Celery worker need beside the world's
    variables: the Celery executor, the test broker and ``queue``."""
    return {"RECON_EXECUTOR": "celery", CELERY_BROKER_VARIABLE: BROKER_URL, CELERY_QUEUE_VARIABLE: queue}


def new_queue() -> str:
    return f"recon-test-{uuid.uuid4().hex[:12]}"


@dataclass
class CeleryWorkers:
    """Started workers: their ``queue``, their processes, and ``env``: what the code server whose runs
    they serve needs beside the world's variables."""

    queue: str
    processes: list[ManagedProcess]

    @property
    def env(self) -> dict[str, str]:
        return celery_env(self.queue)


def step_workers(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    """step key → the Celery worker (``name@host``) that ran it, from the run's event log: dagster-celery
    records an engine event naming its worker each time a worker starts a step."""
    ran_by: dict[str, str] = {}
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = record.dagster_event
        if event is None or event.step_key is None:
            continue
        data = event.engine_event_data
        worker = data.metadata.get(WORKER_TASK) if data is not None else None
        if worker is not None:
            ran_by[event.step_key] = str(worker.value)
    return ran_by


def _wait_ready(workers: list[ManagedProcess], timeout_s: float) -> None:
    """Until every worker's log says it is ready (connected and consuming its queue)."""

    def ready() -> bool | None:
        for worker in workers:
            worker.check_alive()
        return True if all(" ready." in w.tail(200) for w in workers) else None

    wait_until(f"{len(workers)} Celery workers ready", ready, timeout_s)


@contextmanager
def celery_workers(
    world: PgDagsterWorld,
    root: Path,
    count: int,
    concurrency: int = 1,
    timeout_s: float = 90,
    env: Mapping[str, str] | None = None,
) -> Iterator[CeleryWorkers]:
    """``count`` workers ``worker-0``… under ``root``, each with ``concurrency`` task slots, on a fresh
    queue, serving ``world``'s instance with ``env`` added to its variables. Stopped on exit, whatever
    happened."""
    queue = new_queue()
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "DAGSTER_"))}
    processes: list[ManagedProcess] = []
    try:
        for index in range(count):
            name = f"worker-{index}"
            own = root / name
            home = own / "dagster_home"
            home.mkdir(parents=True)
            shutil.copyfile(world.home / "dagster.yaml", home / "dagster.yaml")
            worker_env = {
                **inherited,
                **world.env,
                **(env or {}),
                **celery_env(queue),
                "DAGSTER_HOME": str(home),
                "RECON_HOME": str(own / "recon_home"),
                "PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
                "PYTHONUNBUFFERED": "1",
            }
            args = [
                str(BIN_DIR / "dagster-celery"),
                "worker",
                "start",
                "--app",
                "dagster_celery.app",
                "--name",
                name,
                "--config-yaml",
                str(WORKER_CONFIG),
                "--queue",
                queue,
                "--",  # celery's own options from here on
                f"--concurrency={concurrency}",
                "--without-gossip",  # workers of other tests on the broker are none of ours
                "--without-mingle",
            ]
            processes.append(start_process(name, args, worker_env, own))
        workers = CeleryWorkers(queue, processes)
        _wait_ready(processes, timeout_s)
        yield workers
    finally:
        for process in processes:
            process.stop()


@dataclass
class CeleryNight:
    """A night run through Celery: its batches, their runs' records (in batch order), which worker ran
    each step of each run (run id → step key → worker), and the wall time from the first submission to
    the last run's end."""

    batches: list[NightBatch]
    records: list[dg.RunRecord]
    ran_by: dict[str, dict[str, str]]
    wall_s: float

    @property
    def statuses(self) -> set[dg.DagsterRunStatus]:
        return {record.dagster_run.status for record in self.records}

    def steps_per_worker(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for steps in self.ran_by.values():
            for worker in steps.values():
                counts[worker] = counts.get(worker, 0) + 1
        return counts


def celery_night(
    world: PgDagsterWorld,
    root: Path,
    night: date,
    workers: int,
    batch_size: int,
    concurrency: int = 1,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600,
    startup_timeout_s: float = 120,
) -> CeleryNight:
    """Reconcile ``night`` for every property of ``world`` as a deployment does with RECON_EXECUTOR=celery:
    code server, webserver and daemon (deploy/dagster.yaml's run queue and limits), ``workers`` Celery
    workers of ``concurrency`` task slots each, and one ``reconcile_night`` run per batch submitted
    through GraphQL; returns when every run has finished. ``env`` is added to the world's variables of
    the code server and of the workers. Every process's log tail is printed if anything fails."""
    with celery_workers(world, root / "celery", workers, concurrency, startup_timeout_s, env) as cw:
        deployment = DagsterDeployment({**world.env, **(env or {}), **cw.env}, world.log_dir)
        deployment.processes.extend(cw.processes)  # watched (check_alive) and logged with the rest
        with deployment, deployment.logs_on_failure():
            deployment.start_code_server(startup_timeout_s)
            client = deployment.start_webserver(startup_timeout_s)
            client.wait_for_location(startup_timeout_s, deployment)
            client.stop_all_instigators()  # the nightly schedule would request nights of its own
            deployment.start_daemon()
            batches = plan_batches(world.world.properties, night, batch_size, one_window_each=True)
            started = time.monotonic()
            run_ids = [
                client.launch_partition_run(night.isoformat(), batch.property_ids, tags=batch_tags(batch))
                for batch in batches
            ]
            records = wait_for_runs(world.instance, run_ids, timeout_s, deployment)
            wall_s = time.monotonic() - started
    ran_by = {run_id: step_workers(world.instance, run_id) for run_id in run_ids}
    return CeleryNight(batches, records, ran_by, wall_s)
