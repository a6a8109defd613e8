"""Submit ``RunRequest``s to the Dagster instance in ``DAGSTER_HOME`` and read back their runs' states, from
a process that is not Dagster's: ``recon reconcile-night``.

It does what ``dagster job launch`` does (dagster/_cli/job.py, 1.13): load the code location, take the
job from it, build the execution plan, ``instance.create_run`` from the remote job and
``instance.submit_run``; and what the sensor daemon adds for a partitioned request (dagster/_daemon/
sensor.py): the job's run tags and the partition's tags. Those are Dagster's internal APIs (there is no
public "submit a run" API short of GraphQL), so they are confined here.

Runs are only *queued*: the instance must use the QueuedRunCoordinator, and dagster-daemon launches them
within the deployment's concurrency limits. An instance that would launch runs itself is refused: the run
workers would be children of this short-lived command's code location.

The code location is loaded in this process from ``recon_pipeline.definitions`` (what workspace.yaml
names), or from a workspace file (``--workspace``): a deployment whose daemon loads code from a code
server points it at the same server (deploy/workspace.yaml), so the runs carry that server's origin.
The location is named after the module, ``recon_pipeline.definitions``, however it is loaded (``-m``,
workspace.yaml, pyproject's ``[tool.dagster]`` and ``[tool.dg]``): a daemon started any of those ways
finds the runs' location, and ``dagster schedule stop -m …`` stops the schedules the daemon ticks.

Whether anything will launch the queued runs is read from the instance too: the queued-run daemon's
heartbeat (``daemon_live``); a run that failed before or outside its steps says why in its own event log
(``run_failure``). ``execute_here`` runs a batch in this process instead, for a box without a daemon.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.events import DagsterEventType
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.remote_representation.code_location import CodeLocation
from dagster._core.remote_representation.external import RemoteJob, RemoteRepository
from dagster._core.remote_representation.external_data import partition_set_snap_name_for_job_name
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster._core.storage.tags import AUTO_RETRY_RUN_ID_TAG, WILL_RETRY_TAG
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext, WorkspaceRequestContext
from dagster._core.workspace.load_target import (
    InProcessWorkspaceLoadTarget,
    WorkspaceFileTarget,
    WorkspaceLoadTarget,
)
from dagster._daemon.controller import DEFAULT_HEARTBEAT_INTERVAL_SECONDS
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon
from dagster._utils.error import SerializableErrorInfo

from recon_pipeline.batches import submit
from recon_pipeline.errors import ConfigError, ServiceUnavailable

DEFINITIONS_MODULE = "recon_pipeline.definitions"
DEFINITIONS_ATTRIBUTE = "defs"  # the module's @dg.definitions function
# The name `dagster … -m recon_pipeline.definitions` gives the location, so every way of loading the code
# agrees: workspace.yaml, deploy/workspace.yaml and pyproject.toml name it the same.
LOCATION_NAME = DEFINITIONS_MODULE
MAX_RETRY_HOPS = 10  # a batch's retry chain followed per poll (run_retries allows a couple)
# A running daemon writes a heartbeat every DEFAULT_HEARTBEAT_INTERVAL_SECONDS (30 s); one missed beat is
# tolerated, two are a daemon that is not running.
LIVE_HEARTBEAT_S = 2 * DEFAULT_HEARTBEAT_INTERVAL_SECONDS
FAILURE_EVENTS = {DagsterEventType.RUN_FAILURE, DagsterEventType.ENGINE_EVENT}
FAILURE_EVENTS_READ = 100  # of a failed run's last failure and engine events, newest first

_QUEUED = {dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED}
_RUNNING = {dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING}


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["(no message)"])[0]


def _error_line(error: SerializableErrorInfo) -> str:
    """An error's first line without its qualified class name (``dagster._core.errors.X: reason``)."""
    line = _first_line(error.message)
    qualified_name, _, rest = line.partition(": ")
    return rest if rest and qualified_name.rsplit(".", 1)[-1] == error.cls_name else line


def _error_chain(error: SerializableErrorInfo) -> list[SerializableErrorInfo]:
    chain = [error]
    while chain[-1].cause is not None:
        chain.append(chain[-1].cause)  # type: ignore[arg-type]
    return chain


def _readable_line(chain: Sequence[SerializableErrorInfo]) -> str:
    """The deepest error of the chain a person can read, in one line without its class name: a bad
    setting names its variable there, while the top is Dagster's wrapper ("error occurred during the
    loading", "Exceeded max_retries") and gRPC's own ``_InactiveRpcError`` at the bottom says nothing."""
    readable = next(
        e for e in reversed(chain) if not e.cls_name or not e.cls_name.startswith("_") or e is chain[0]
    )
    return _error_line(readable)


def _load_failure(error: SerializableErrorInfo) -> Exception:
    """One line for a code location that did not load (``_readable_line``). An unreachable code server
    is a service down (exit 1), anything else configuration (exit 2)."""
    chain = _error_chain(error)
    message = f"code location {LOCATION_NAME!r} does not load: {_readable_line(chain)}"
    if any(e.cls_name == "DagsterUserCodeUnreachableError" for e in chain):
        return ServiceUnavailable(message)
    return ConfigError(message)


def dagster_home() -> Path:
    """DAGSTER_HOME, which must name an existing folder (the instance the runs are submitted to)."""
    home = os.environ.get("DAGSTER_HOME", "").strip()
    if not home:
        raise ConfigError("DAGSTER_HOME is not set: it names the Dagster instance to submit the runs to")
    if not Path(home).is_dir():
        raise ConfigError(f"DAGSTER_HOME={home} is not a folder")
    return Path(home)


@contextmanager
def home_instance() -> Iterator[dg.DagsterInstance]:
    """The instance in DAGSTER_HOME; one that does not load is a service down, in one line."""
    home = dagster_home()
    try:
        instance = dg.DagsterInstance.get()
    except Exception as error:  # storage unreachable, bad dagster.yaml: Dagster raises many kinds
        raise ServiceUnavailable(
            f"the Dagster instance in DAGSTER_HOME={home} does not load: {_first_line(str(error))}"
        ) from None
    with instance:
        yield instance


@contextmanager
def queued_instance() -> Iterator[dg.DagsterInstance]:
    """The instance in DAGSTER_HOME, which must queue runs for its daemon (QueuedRunCoordinator)."""
    home = dagster_home()
    with home_instance() as instance:
        if not isinstance(instance.run_coordinator, QueuedRunCoordinator):
            raise ConfigError(
                f"the Dagster instance in DAGSTER_HOME={home} launches runs itself "
                f"({type(instance.run_coordinator).__name__}): reconcile-night queues them for "
                "dagster-daemon, so configure the QueuedRunCoordinator (dagster.yaml `concurrency.runs`)"
            )
        yield instance


def load_target(workspace: Path | None) -> WorkspaceLoadTarget:
    """``workspace``'s code locations, else ``recon_pipeline.definitions`` loaded in this process."""
    if workspace is not None:
        if not workspace.is_file():
            raise ConfigError(f"--workspace {workspace}: no such file")
        return WorkspaceFileTarget(paths=[str(workspace)])
    origin = LoadableTargetOrigin(
        executable_path=sys.executable, module_name=DEFINITIONS_MODULE, working_directory=os.getcwd()
    )
    return InProcessWorkspaceLoadTarget([InProcessCodeLocationOrigin(origin, location_name=LOCATION_NAME)])


@contextmanager
def loaded_workspace(
    instance: dg.DagsterInstance, workspace: Path | None
) -> Iterator[WorkspaceRequestContext]:
    """``workspace`` (see ``load_target``) with its recon_pipeline code location loaded; a load error is
    one line naming the location."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Error loading repository location", UserWarning)  # see below
        with WorkspaceProcessContext(instance, load_target(workspace)) as process_context:
            context = process_context.create_request_context()
            names = context.code_location_names
            if LOCATION_NAME not in names:
                raise ConfigError(f"--workspace {workspace} has no code location {LOCATION_NAME!r} ({names})")
            error = context.get_code_location_error(LOCATION_NAME)
            if error is not None:
                raise _load_failure(error)
            yield context


def _repository(location: CodeLocation) -> RemoteRepository:
    repositories = list(location.get_repositories().values())
    if len(repositories) != 1:
        raise ConfigError(f"code location {location.name!r} holds {len(repositories)} repositories, not 1")
    return repositories[0]


def remote_job(location: CodeLocation, job_name: str) -> RemoteJob:
    repository = _repository(location)
    if not repository.has_job(job_name):
        raise ConfigError(f"code location {location.name!r} has no job {job_name!r}")
    return repository.get_full_job(job_name)


def partition_tags(location: CodeLocation, job_name: str, partition_key: str) -> Mapping[str, str]:
    """The partition's run tags (``dagster/partition``), once the key is known to be one of the job's
    partitions now: a night before the first partition or not yet begun is refused in one line."""
    repository = _repository(location)
    name = partition_set_snap_name_for_job_name(job_name)
    if not repository.has_partition_set(name):
        raise ConfigError(f"job {job_name!r} is not partitioned")
    partition_set = repository.get_partition_set(name)
    if not partition_set.has_partitions_definition():
        raise ConfigError(f"job {job_name!r}: its partitions are not known outside its code")
    partitions = partition_set.get_partitions_definition()
    if not partitions.has_partition_key(partition_key):
        first, last = partitions.get_first_partition_key(), partitions.get_last_partition_key()
        raise ConfigError(
            f"{partition_key} is not a partition of job {job_name!r} (partitions now: {first} to {last})"
        )
    return partitions.get_tags_for_partition_key(partition_key)


def run_tags(location: CodeLocation, job: RemoteJob, request: dg.RunRequest) -> dict[str, str]:
    """A request's run tags as the sensor daemon would set them: the job's, the request's, the partition's."""
    tags = {**(job.run_tags or {}), **request.tags}
    if request.partition_key is not None:
        tags.update(partition_tags(location, job.name, request.partition_key))
    return tags


def submit_requests(
    instance: dg.DagsterInstance,
    workspace: WorkspaceRequestContext,
    job_name: str,
    requests: Sequence[dg.RunRequest],
) -> list[str]:
    """Create one run per request (its config, tags and partition) and queue it; the run ids, in order.

    A request's run key is not used: the command submits what it is asked to, every time (a sensor's
    run key dedupes its own ticks, not deliberate submissions)."""
    location = workspace.get_code_location(LOCATION_NAME)
    job = remote_job(location, job_name)
    repository = _repository(location)
    run_ids = []
    for request in requests:
        tags = run_tags(location, job, request)
        plan = location.get_execution_plan(
            job, request.run_config, step_keys_to_execute=None, known_state=None, instance=instance
        )
        run = instance.create_run(
            job_name=job_name,
            run_id=None,
            run_config=request.run_config,
            resolved_op_selection=job.resolved_op_selection,
            step_keys_to_execute=plan.execution_plan_snapshot.step_keys_to_execute,
            status=None,
            op_selection=None,
            root_run_id=None,
            parent_run_id=None,
            tags=tags,
            job_snapshot=job.job_snapshot,
            execution_plan_snapshot=plan.execution_plan_snapshot,
            parent_job_snapshot=job.parent_job_snapshot,
            remote_job_origin=job.get_remote_origin(),
            job_code_origin=job.get_python_origin(),
            asset_selection=None,
            asset_check_selection=None,
            asset_graph=repository.asset_graph,
        )
        instance.submit_run(run.run_id, workspace)
        run_ids.append(run.run_id)
    return run_ids


def run_state(run: dg.DagsterRun, retries_enabled: bool) -> str:
    """A run's state for the wait: a failed run the daemon will retry (or has not yet decided about,
    with run retries on) is still running; its retry's state is followed by ``latest_runs``."""
    if run.status in _QUEUED:
        return submit.QUEUED
    if run.status in _RUNNING:
        return submit.RUNNING
    if run.status == dg.DagsterRunStatus.SUCCESS:
        return submit.SUCCEEDED
    if run.status == dg.DagsterRunStatus.FAILURE and (
        run.is_complete_and_waiting_to_retry
        or run.tags.get(AUTO_RETRY_RUN_ID_TAG)
        or (retries_enabled and WILL_RETRY_TAG not in run.tags)
    ):
        return submit.RUNNING
    return submit.FAILED  # failed for good, or canceled


def latest_runs(instance: dg.DagsterInstance, run_ids: Sequence[str]) -> list[dg.DagsterRun]:
    """The latest run of each of ``run_ids``' retry chains (the run itself when not retried), in order."""
    latest = list(run_ids)
    for hop in range(MAX_RETRY_HOPS + 1):
        runs = {run.run_id: run for run in instance.get_runs(dg.RunsFilter(run_ids=sorted(set(latest))))}
        missing = [run_id for run_id in latest if run_id not in runs]
        if missing:
            raise LookupError(f"runs {', '.join(missing[:3])} are not in the instance any more")
        retries = [runs[run_id].tags.get(AUTO_RETRY_RUN_ID_TAG) for run_id in latest]
        if hop == MAX_RETRY_HOPS or not any(retries):
            break
        latest = [retry or run_id for run_id, retry in zip(latest, retries, strict=True)]
    return [runs[run_id] for run_id in latest]


def execute_here(
    instance: dg.DagsterInstance, job_name: str, run_config: Mapping[str, object], tags: Mapping[str, str]
) -> dg.DagsterRun:
    """Run ``job_name`` in this process (its executor's step processes its children), recorded in
    ``instance`` as any run; the finished run. The job is loaded from the module as a run worker loads it,
    so a multiprocess executor's steps can load it again."""
    repository = ReconstructableRepository.for_module(DEFINITIONS_MODULE, DEFINITIONS_ATTRIBUTE, os.getcwd())
    result = dg.execute_job(
        repository.get_reconstructable_job(job_name), instance, run_config=run_config, tags=tags
    )
    run = instance.get_run_by_id(result.run_id)
    if run is None:
        raise LookupError(f"run {result.run_id} is not in the instance")
    return run


def daemon_live(instance: dg.DagsterInstance) -> bool:
    """Whether the daemon that launches queued runs has beaten within ``LIVE_HEARTBEAT_S``."""
    heartbeat = instance.get_daemon_heartbeats().get(QueuedRunCoordinatorDaemon.daemon_type())
    return heartbeat is not None and time.time() - heartbeat.timestamp <= LIVE_HEARTBEAT_S


def run_failure(instance: dg.DagsterInstance, run_id: str) -> tuple[str, bool]:
    """Why a failed run failed, from its own event log: the newest error an engine event or the run's
    failure carries (a location the daemon could not find, a run worker that died, the error that
    failed a step after its retries), else the failure's message; and whether the daemon lacked the
    run's code location."""
    records = instance.get_records_for_run(
        run_id, of_type=FAILURE_EVENTS, limit=FAILURE_EVENTS_READ, ascending=False
    ).records
    message = None
    for record in records:
        event = record.event_log_entry.dagster_event
        if event is None:
            continue
        error = getattr(event.event_specific_data, "error", None)
        if isinstance(error, SerializableErrorInfo):
            chain = _error_chain(error)
            missing = any(e.cls_name == "DagsterCodeLocationNotFoundError" for e in chain)
            return _readable_line(chain), missing
        if message is None and event.event_type == DagsterEventType.RUN_FAILURE:
            message = _first_line(event.message or record.event_log_entry.user_message)
    return message or "the run failed without saying why", False


def stop_automations(instance: dg.DagsterInstance) -> list[str]:
    """Store every schedule and sensor of the code location as stopped on ``instance`` (what the UI's
    toggles and ``dagster schedule|sensor stop`` store), so a daemon started on it launches nothing until
    someone turns them on; their names."""
    with loaded_workspace(instance, None) as workspace:
        repository = _repository(workspace.get_code_location(LOCATION_NAME))
        stopped = []
        for schedule in repository.get_schedules():
            instance.stop_schedule(schedule.get_remote_origin_id(), schedule.selector_id, schedule)
            stopped.append(schedule.name)
        for sensor in repository.get_sensors():
            instance.stop_sensor(sensor.get_remote_origin_id(), sensor.selector_id, sensor)
            stopped.append(sensor.name)
    return stopped
