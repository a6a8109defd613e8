"""Warm child processes for the crash-window and concurrent-run suites, and what those children run.

A fresh interpreter needs seconds to import Dagster and the code location; 100 crash trials cannot pay
that each. The children here come from multiprocessing's fork server instead: one clean, single-threaded
interpreter, started once, that has imported this module (so Dagster, the definitions and the event
worker) and warmed Dagster up (``fork_server_preload``), and forks a child per request in ~20 ms. Not a
plain fork of the pytest process: that process runs threads (the simulator's uvicorn server), and a child
forked from a threaded process can inherit a lock one of them held.

Each child is a real process of its kind: ``execute_partition`` executes a Dagster run of the
``reconcile_night`` job in itself, exactly as a run worker does (the in-process executor), against the
instance named by its DAGSTER_HOME; ``run_event_worker`` is ``python -m recon_pipeline.events.worker``'s
``main``. The fork server does not see environment changes the test process makes after it started, so
every child gets the whole environment it must run under as an argument, and its output goes to its own
log file (the tests print the tail when something is off).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import dagster as dg

from recon_pipeline.definitions import build_definitions
from recon_pipeline.defs.batches import BATCH_OP, batch_run_config
from recon_pipeline.defs.postings import post_adjustments, post_approved_adjustments
from recon_pipeline.events import worker
from recon_pipeline_tests.support.crash_points import arm_from
from recon_pipeline_tests.support.dagster_processes import JOB_NAME

CONTEXT = multiprocessing.get_context("forkserver")
CONTEXT.set_forkserver_preload(["recon_pipeline_tests.support.fork_server_preload"])
BARRIER_TIMEOUT_S = 60.0
WARM_UP_TIMEOUT_S = 120.0  # the fork server imports Dagster and the code location, then one throwaway run
SEED_VARIABLE = "RECON_CRASH_SEED"
POSTINGS_JOB = post_adjustments.name
POSTINGS_OP = post_approved_adjustments.name


def crash_seed() -> int:
    """The trials' seed: ``RECON_CRASH_SEED`` to replay a failure, else a fresh one (failures print it)."""
    given = os.environ.get(SEED_VARIABLE)
    return int(given) if given else random.SystemRandom().randrange(2**32)


@dataclass(frozen=True)
class RunSpec:
    """One Dagster run of ``reconcile_night`` for a night (its partition) and a batch of properties (none:
    every property), ``workers`` of them reconciled at a time."""

    env: Mapping[str, str]
    log_path: Path
    night: str
    run_id: str
    properties: Sequence[str] = ()
    workers: int | None = None  # None: the job's default
    barrier: Barrier | None = None  # start together with the other holders of the barrier

    def run_config(self) -> dict[str, Any]:
        config = batch_run_config(self.properties)
        if self.workers is not None:
            config["ops"][BATCH_OP]["config"]["workers"] = self.workers
        return config


@dataclass(frozen=True)
class WorkerSpec:
    """One ``recon_pipeline.events.worker`` process."""

    env: Mapping[str, str]
    log_path: Path
    argv: Sequence[str]


@dataclass(frozen=True)
class PosterSpec:
    """One run of the ``post_adjustments`` job (the posting drain), ``concurrency`` posts in flight."""

    env: Mapping[str, str]
    log_path: Path
    concurrency: int = 1


def execute_partition(spec: RunSpec) -> None:
    """Child: execute the run in this process against DAGSTER_HOME's instance; exit 0 on success."""
    _enter(spec.env, spec.log_path)
    job = build_definitions().resolve_job_def(JOB_NAME)
    with dg.DagsterInstance.get() as instance:
        if spec.barrier is not None:
            spec.barrier.wait(BARRIER_TIMEOUT_S)
        result = job.execute_in_process(
            partition_key=spec.night,
            run_config=spec.run_config(),
            instance=instance,
            run_id=spec.run_id,
            raise_on_error=False,
        )
    sys.exit(0 if result.success else 1)


def run_poster(spec: PosterSpec) -> None:
    """Child: execute a ``post_adjustments`` run in this process, as a run worker does; exit 0 on success.

    An ephemeral instance: what the crash suite checks is the outbox and the PMS, not Dagster's records."""
    _enter(spec.env, spec.log_path)
    job = build_definitions().resolve_job_def(POSTINGS_JOB)
    with dg.DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(
            run_config={"ops": {POSTINGS_OP: {"config": {"concurrency": spec.concurrency}}}},
            instance=instance,
            raise_on_error=False,
        )
    sys.exit(0 if result.success else 1)


def run_event_worker(spec: WorkerSpec) -> None:
    """Child: the standalone event worker's ``main``."""
    _enter(spec.env, spec.log_path)
    sys.exit(worker.main(list(spec.argv)))


def _enter(env: Mapping[str, str], log_path: Path) -> None:
    """Adopt the test's environment (arming the crash hook it names) and send stdout and stderr to the
    child's own log file."""
    os.environ.clear()
    os.environ.update(env)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    arm_from(env)  # after the redirect: a misspelt switch's error lands in the child's log


@dataclass
class Child:
    """A started child, and how long it ran."""

    process: BaseProcess
    log_path: Path
    started: float = field(default_factory=time.monotonic)
    started_at: float = field(default_factory=time.time)  # wall clock, to compare with Dagster's event times
    seconds: float = 0.0

    @property
    def exitcode(self) -> int | None:
        return self.process.exitcode

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGKILL the child if it still runs (a test that failed half-way leaves none behind)."""
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join(5)

    def wait(self, timeout_s: float, kill_after_s: float | None = None) -> int:
        """Join within ``timeout_s`` (then SIGKILL and raise); with ``kill_after_s``, SIGKILL the child
        that long after its start, if it still runs. Returns the exit code (-9: killed)."""
        if kill_after_s is not None:
            self.process.join(max(0.0, self.started + kill_after_s - time.monotonic()))
            if self.process.exitcode is None:
                self.process.kill()
        self.process.join(max(0.0, self.started + timeout_s - time.monotonic()))
        self.seconds = time.monotonic() - self.started
        if self.process.exitcode is None:
            self.stop()
            raise TimeoutError(f"child did not end within {timeout_s:g} s; log tail:\n{self.tail()}")
        return int(self.process.exitcode)


def start_child(target: Callable[[Any], None], spec: RunSpec | WorkerSpec | PosterSpec) -> Child:
    """Fork ``target(spec)`` from the warm fork server."""
    spec.log_path.parent.mkdir(parents=True, exist_ok=True)
    process = CONTEXT.Process(target=target, args=(spec,), daemon=True)
    child = Child(process, spec.log_path)
    process.start()
    return child


def warm_up() -> None:
    """Start the fork server now (seconds: it imports and warms Dagster), so no child's life includes it."""
    process = CONTEXT.Process(target=_nothing, daemon=True)
    process.start()
    process.join(WARM_UP_TIMEOUT_S)
    if process.exitcode != 0:
        process.kill()
        raise RuntimeError(f"the fork server's first child ended with {process.exitcode}")


def _nothing() -> None:
    return None


def reported_metadata(instance: dg.DagsterInstance, run_id: str, asset: str) -> dict[str, Any] | None:
    """The metadata of ``asset``'s materialization as the run reported it; None when it reported none."""
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION):
        materialization = entry.asset_materialization
        if materialization is not None and materialization.asset_key == dg.AssetKey(asset):
            return {name: value.value for name, value in materialization.metadata.items()}
    return None


def inherited_env(**overrides: str) -> dict[str, str]:
    """The test process's environment minus RECON_*/DAGSTER_* (hermetic: only what a test sets), plus
    ``overrides``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "DAGSTER_"))}
    return {**base, **overrides}
