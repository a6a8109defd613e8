"""Real Celery workers for the distributed-executor tests: ``dagster-celery worker start`` processes on the
local RabbitMQ, serving steps of runs on the PostgreSQL-backed instance of ``pg_dagster_world``.

Each worker stands for another host: it has its OWN working directory, DAGSTER_HOME (a copy of the run's
dagster.yaml, whose local storage follows the process's own DAGSTER_HOME, see ``PER_PROCESS_STORAGE``)
and RECON_HOME, so a step that relied on a file another process wrote fails here as it would across
machines. The workers share with the run worker only what a deployment shares: the Dagster instance in
PostgreSQL, the reconciliation database, the provider, and the broker.

Workers start as deploy/celery/ says (its ``celery.yaml``, the environment of ``celery_env``), and each
set listens on a queue of its own (``recon-test-<random>``, RECON_CELERY_QUEUE of the code server whose
runs it serves): a leftover worker of another test, or a deployment on the same broker, never takes its
tasks. Every wait is bounded; every worker is stopped by
its process group at teardown; logs are kept for failure messages.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from kombu import Connection

from recon_pipeline.defs.executor import CELERY_BROKER_VARIABLE, CELERY_QUEUE_VARIABLE
from recon_pipeline_tests.dagster_processes import (
    BIN_DIR,
    DEPLOY_DIR,
    ManagedProcess,
    PgDagsterWorld,
    start_process,
    wait_until,
)

BROKER_URL = os.environ.get("RECON_TEST_CELERY_BROKER", "pyamqp://guest:guest@127.0.0.1:5672//")
WORKER_CONFIG = DEPLOY_DIR / "celery" / "celery.yaml"
# Merged into the instance's dagster.yaml (the run worker's and every Celery worker's): artifacts and
# compute logs go under the DAGSTER_HOME of the process that writes them, resolved in that process. The
# default would be the run worker's absolute path, passed to every Celery worker in the instance ref, so
# on one machine they would all share the run worker's folder and hide a step that reads another's file.
PER_PROCESS_STORAGE: dict[str, Any] = {
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
    def names(self) -> list[str]:
        return [p.name for p in self.processes]

    @property
    def env(self) -> dict[str, str]:
        return celery_env(self.queue)

    def check_alive(self) -> None:
        for process in self.processes:
            process.check_alive()

    def logs(self) -> str:
        return "\n".join(f"----- {p.name} -----\n{p.tail()}" for p in self.processes)

    def stop(self) -> None:
        for process in self.processes:
            process.stop()


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
) -> Iterator[CeleryWorkers]:
    """``count`` workers ``worker-0``… under ``root``, each with ``concurrency`` task slots, on a fresh
    queue, serving ``world``'s instance. Stopped on exit, whatever happened."""
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
