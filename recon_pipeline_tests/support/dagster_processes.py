"""Real Dagster processes for deployment tests: a PostgreSQL-backed instance built from deploy/dagster.yaml,
the code server, dagster-webserver and dagster-daemon as subprocesses, and a GraphQL client that talks to
the webserver the way the UI does.

The entry point is the ``pg_dagster_world`` fixture (registered in conftest): it starts the setup every
process test shares (a seeded world served by the simulator, the recon tables in one scratch PostgreSQL
database, the instance in another, the environment the processes need) and hands back a
``PgDagsterWorld``; ``PgDagsterWorld.deployment()`` starts the processes on it::

    def test_something(pg_dagster_world: StartWorld) -> None:
        w = pg_dagster_world(NIGHTS, bookings_per_night=8, properties=PROPERTIES)
        with w.deployment() as deployment:
            deployment.start_code_server(90)
            ...

Every wait is bounded; every process is started in its own session (process group) and stopped by that
group's id, so the run workers the code server spawns go down with it. Traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from unittest import mock

import dagster as dg
import httpx
import pytest
import yaml
from dagster._utils.merger import deep_merge_dicts
from sqlalchemy import URL
from sqlalchemy.engine import make_url

from recon_pipeline.batches.launch import LOCATION_NAME
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.defs.batches import QUEUED_BY_TAG, batch_run_config
from recon_pipeline.defs.concurrency import PROVIDER_POOL
from recon_pipeline.properties import PropertyRow
from recon_pipeline.reconcile.adjustments import ADJUSTMENT_POLICY
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.seed import seed_world
from recon_pipeline.simulation.demo.world import World, build_world
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline_tests.support.postgres import postgres_database

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DIR = REPO_ROOT / "deploy"
BIN_DIR = Path(sys.executable).parent  # the environment running pytest has the dagster entry points
REPOSITORY_NAME = "__repository__"  # the implicit repository of a Definitions object
JOB_NAME = "reconcile_night"
ADJUSTED_CATEGORIES = tuple(ADJUSTMENT_POLICY)  # the categories that propose a correction
LOCALHOST = "127.0.0.1"

T = TypeVar("T")


# ----- PostgreSQL ---------------------------------------------------------------------------------------
def dagster_pg_env(url: URL) -> dict[str, str]:
    """The DAGSTER_PG_* variables deploy/dagster.yaml reads, pointing at ``url``'s database."""
    return {
        "DAGSTER_PG_HOST": url.host or LOCALHOST,
        "DAGSTER_PG_PORT": str(url.port or 5432),
        "DAGSTER_PG_USER": url.username or "postgres",
        # `{env: ...}` fails on an unset variable, so trust auth needs it set and empty.
        "DAGSTER_PG_PASSWORD": url.password or "",
        "DAGSTER_PG_DB": str(url.database),
    }


# ----- the Dagster instance -----------------------------------------------------------------------------
def write_dagster_home(home: Path, overrides: Mapping[str, Any] | None = None) -> Path:
    """``home``/dagster.yaml = deploy/dagster.yaml with ``overrides`` merged in (mappings deep-merged)."""
    home.mkdir(parents=True, exist_ok=True)
    source = DEPLOY_DIR / "dagster.yaml"
    if not overrides:
        shutil.copyfile(source, home / "dagster.yaml")
        return home
    config = yaml.safe_load(source.read_text())
    (home / "dagster.yaml").write_text(yaml.safe_dump(deep_merge_dicts(config, overrides), sort_keys=False))
    return home


@contextmanager
def instance_from_home(home: Path, env: Mapping[str, str]) -> Iterator[dg.DagsterInstance]:
    """A DagsterInstance loaded from ``home``/dagster.yaml with ``env`` (DAGSTER_PG_*) and DAGSTER_HOME (which
    a dagster.yaml may name, as ``celery_workers.CELERY_DAGSTER_YAML`` does) set meanwhile, as in a process
    whose instance it is.

    The ``provider_api`` pool's limit is set explicitly, as deploy/README.md tells a deployment to: runs
    that first claim a pool with no limit row race to create it (dagster-io/dagster#33552).
    """
    process_env = {"DAGSTER_HOME": str(home), **env}
    with mock.patch.dict(os.environ, process_env), dg.DagsterInstance.from_config(str(home)) as instance:
        limit = instance.global_op_concurrency_default_limit
        if limit is not None:
            instance.event_log_storage.set_concurrency_slots(PROVIDER_POOL, limit)
        yield instance


# ----- a seeded world over several nights ---------------------------------------------------------------
@dataclass
class NightsWorld:
    """The demo world for every (property, night) of ``properties`` × ``nights``, merged into one."""

    world: World
    properties: tuple[PropertyRow, ...]
    nights: tuple[date, ...]

    @property
    def property_ids(self) -> list[str]:
        return [p.property_id for p in self.properties]

    def partition_keys(self) -> list[str]:
        """The night partitions of the world."""
        return [night.isoformat() for night in self.nights]

    def property_nights(self) -> list[tuple[str, str]]:
        """(night, property_id) of every property-night, night by night."""
        return [(night, property_id) for night in self.partition_keys() for property_id in self.property_ids]

    def planted(
        self, property_ids: Collection[str] | None = None, nights: Collection[str] | None = None
    ) -> dict[tuple[str, str, str], int]:
        """(property, night, category) → findings planted, of ``property_ids`` and ``nights`` when given."""
        return {
            (p, night, category): n
            for (p, night, category), n in self.world.expected.items()
            if (property_ids is None or p in property_ids) and (nights is None or night in nights)
        }

    def planted_adjustments(
        self, property_ids: Collection[str] | None = None, nights: Collection[str] | None = None
    ) -> int:
        """Adjustments the planted findings call for, of ``property_ids`` and ``nights`` when given."""
        return sum(
            n
            for (_p, _night, category), n in self.planted(property_ids, nights).items()
            if category in ADJUSTED_CATEGORIES
        )


def build_nights_world(
    nights: Sequence[date],
    bookings_per_night: int,
    properties: tuple[PropertyRow, ...] = DEMO_PROPERTIES,
) -> NightsWorld:
    """One ``build_world`` per night (ids carry the night, so they never collide), merged."""
    merged = World()
    expected: Counter[tuple[str, str, str]] = Counter()
    for night in nights:
        part = build_world(
            {p.property_id: night for p in properties}, bookings_per_night, properties=properties
        )
        merged.properties = part.properties
        merged.bookings += part.bookings
        merged.payment_orders += part.payment_orders
        merged.ledger_entries += part.ledger_entries
        merged.store.absorb(part.store)
        expected += part.expected
    merged.store.reindex()
    merged.expected = expected
    return NightsWorld(merged, properties, tuple(nights))


def seed_database(url: str, world: NightsWorld) -> None:
    engine = make_engine(url)
    try:
        migrations.upgrade(engine)
        seed_world(engine, world.world)
    finally:
        engine.dispose()


# ----- processes ----------------------------------------------------------------------------------------
def free_port() -> int:
    """A port free right now on 127.0.0.1 (the child binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOCALHOST, 0))
        return int(sock.getsockname()[1])


def wait_until(what: str, probe: Callable[[], T | None], timeout_s: float, interval_s: float = 0.5) -> T:
    """Call ``probe`` until it returns something other than None, at most ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:g} s")
        time.sleep(interval_s)


@dataclass
class ManagedProcess:
    """A child process in its own session, its output in a log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 60) -> str:
        try:
            text_lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text_lines[-lines:])

    def check_alive(self) -> None:
        if not self.alive():
            raise RuntimeError(f"{self.name} exited with {self.popen.returncode}; log tail:\n{self.tail()}")

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM the process group this process leads, then SIGKILL it if it overruns the bound."""
        if self.popen.poll() is None:
            self._signal_group(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout_s)
        # Children (run workers, spawned code servers) may outlive a leader that exited on SIGTERM.
        self._signal_group(signal.SIGKILL)
        if self.popen.poll() is None:
            self.popen.wait(5)

    def _signal_group(self, sig: signal.Signals) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)  # the group id is the leader's pid (start_new_session)


def start_process(name: str, args: Sequence[str], env: Mapping[str, str], log_dir: Path) -> ManagedProcess:
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log:
        popen = subprocess.Popen(
            list(args),
            env=dict(env),
            cwd=log_dir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return ManagedProcess(name, popen, log_path)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((LOCALHOST, port)) == 0


@dataclass
class DagsterDeployment:
    """The production process layout on one machine: code server, webserver, daemon (started apart, so
    a test can stop the code's schedules and sensors before the daemon would tick them).

    ``env`` must hold DAGSTER_HOME, DAGSTER_PG_* and the RECON_* variables; run workers inherit the code
    server's environment, so that is where RECON_* matter."""

    env: Mapping[str, str]
    log_dir: Path
    code_module: str = "recon_pipeline.definitions"  # the code location's module (benchmarks use their own)
    code_port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    processes: list[ManagedProcess] = field(default_factory=list)

    @property
    def process_env(self) -> dict[str, str]:
        inherited = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("RECON_", "DAGSTER_"))  # hermetic: only what the test sets
        }
        return {
            **inherited,
            **self.env,
            "PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
            "DAGSTER_CODE_SERVER_HOST": LOCALHOST,
            "DAGSTER_CODE_SERVER_PORT": str(self.code_port),
            "PYTHONUNBUFFERED": "1",
        }

    @property
    def base_url(self) -> str:
        return f"http://{LOCALHOST}:{self.web_port}"

    def _start(self, name: str, args: Sequence[str]) -> ManagedProcess:
        process = start_process(name, args, self.process_env, self.log_dir)
        self.processes.append(process)
        return process

    def start_code_server(self, timeout_s: float = 60) -> ManagedProcess:
        process = self._start(
            "code-server",
            [
                str(BIN_DIR / "dagster"),
                "code-server",
                "start",
                "-m",
                self.code_module,
                "--location-name",
                LOCATION_NAME,
                "--use-python-environment-entry-point",
                "--startup-timeout",
                str(int(timeout_s)),
            ],
        )

        def listening() -> bool | None:
            process.check_alive()
            return True if _port_open(self.code_port) else None

        wait_until("code server listening", listening, timeout_s, 0.2)
        return process

    def start_webserver(self, timeout_s: float = 60) -> GraphQL:
        process = self._start(
            "webserver",
            [
                str(BIN_DIR / "dagster-webserver"),
                "-h",
                LOCALHOST,
                "-p",
                str(self.web_port),
                "-w",
                str(DEPLOY_DIR / "workspace.yaml"),
            ],
        )
        client = GraphQL(self.base_url)

        def server_info() -> bool | None:
            process.check_alive()
            try:
                return True if httpx.get(f"{self.base_url}/server_info", timeout=2).is_success else None
            except httpx.HTTPError:
                return None

        wait_until("webserver /server_info", server_info, timeout_s)
        return client

    def start_daemon(self) -> ManagedProcess:
        return self._start(
            "daemon",
            [str(BIN_DIR / "dagster-daemon"), "run", "-w", str(DEPLOY_DIR / "workspace.yaml")],
        )

    def check_alive(self) -> None:
        for process in self.processes:
            process.check_alive()

    def logs(self) -> str:
        return "\n".join(f"----- {p.name} -----\n{p.tail()}" for p in self.processes)

    def stop(self) -> None:
        # Daemon first (no new launches), then webserver, then the code server and its run workers.
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()

    @contextmanager
    def logs_on_failure(self) -> Iterator[None]:
        """Print every process's log tail if the block fails, then re-raise: a failed process test shows
        what the code server, webserver and daemon said."""
        try:
            yield
        except Exception:
            print(self.logs())
            raise

    def __enter__(self) -> DagsterDeployment:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


# ----- GraphQL, as the UI sends it ----------------------------------------------------------------------
WORKSPACE_QUERY = """
query Workspace {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError { __typename ... on PythonError { message } }
      }
    }
    ... on PythonError { message }
  }
}
"""

INSTIGATORS_QUERY = """
query Instigators($selector: RepositorySelector!) {
  repositoryOrError(repositorySelector: $selector) {
    __typename
    ... on Repository {
      schedules { name scheduleState { id status } }
      sensors { name sensorState { id status } }
    }
    ... on PythonError { message }
  }
}
"""

STOP_SCHEDULE_MUTATION = """
mutation StopSchedule($id: String) {
  stopRunningSchedule(id: $id) { __typename ... on PythonError { message } }
}
"""

STOP_SENSOR_MUTATION = """
mutation StopSensor($id: String) {
  stopSensor(id: $id) { __typename ... on PythonError { message } }
}
"""

LAUNCH_BACKFILL_MUTATION = """
mutation LaunchPartitionBackfill($backfillParams: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $backfillParams) {
    __typename
    ... on LaunchBackfillSuccess { backfillId launchedRunIds }
    ... on PythonError { message stack }
    ... on Error { message }
  }
}
"""

BACKFILL_QUERY = """
query Backfill($backfillId: String!) {
  partitionBackfillOrError(backfillId: $backfillId) {
    __typename
    ... on PartitionBackfill { id status numPartitions error { message } }
    ... on PythonError { message }
    ... on Error { message }
  }
}
"""

# The UI's one-time "Join the Dagster community" dialog (shown on 127.0.0.1 origins) is stored as seen here.
SET_NUX_SEEN_MUTATION = "mutation SetNuxSeen { setNuxSeen }"
SHOULD_SHOW_NUX_QUERY = "query ShouldShowNux { shouldShowNux }"

BACKFILL_DONE = {"COMPLETED", "COMPLETED_SUCCESS"}
BACKFILL_FAILED = {"FAILED", "COMPLETED_FAILED", "CANCELED", "CANCELING", "FAILING"}


class GraphQLError(RuntimeError):
    pass


@dataclass
class GraphQL:
    """POST /graphql on the webserver, like the UI."""

    base_url: str
    timeout_s: float = 30.0

    def execute(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        response = httpx.post(
            f"{self.base_url}/graphql",
            json={"query": query, "variables": dict(variables or {})},
            timeout=self.timeout_s,
        )
        try:
            body: dict[str, Any] = response.json()
        except ValueError:
            raise GraphQLError(f"HTTP {response.status_code}: {response.text[:2000]}") from None
        if body.get("errors") or not response.is_success:
            raise GraphQLError(f"HTTP {response.status_code}: {body.get('errors') or response.text[:2000]}")
        data: dict[str, Any] = body["data"]
        return data

    @property
    def repository_selector(self) -> dict[str, str]:
        return {"repositoryLocationName": LOCATION_NAME, "repositoryName": REPOSITORY_NAME}

    def wait_for_location(self, timeout_s: float, deployment: DagsterDeployment) -> None:
        """Until the code location is LOADED; a load error fails at once with its message."""

        def loaded() -> bool | None:
            deployment.check_alive()
            workspace = self.execute(WORKSPACE_QUERY)["workspaceOrError"]
            for entry in workspace.get("locationEntries", []):
                if entry["name"] != LOCATION_NAME or entry["loadStatus"] != "LOADED":
                    continue
                location = entry["locationOrLoadError"] or {}
                if location.get("__typename") == "PythonError":
                    raise GraphQLError(f"code location failed to load: {location['message']}")
                if location.get("__typename") == "RepositoryLocation":
                    return True
            return None

        wait_until("code location loaded", loaded, timeout_s)

    def stop_all_instigators(self) -> list[str]:
        """Stop every schedule and sensor of the location (stored state overrides default RUNNING)."""
        repo = self.execute(INSTIGATORS_QUERY, {"selector": self.repository_selector})["repositoryOrError"]
        if repo["__typename"] != "Repository":
            raise GraphQLError(f"repository: {repo}")
        stopped = []
        for schedule in repo["schedules"]:
            if schedule["scheduleState"]["status"] != "STOPPED":
                self._check(self.execute(STOP_SCHEDULE_MUTATION, {"id": schedule["scheduleState"]["id"]}))
            stopped.append(schedule["name"])
        for sensor in repo["sensors"]:
            if sensor["sensorState"]["status"] != "STOPPED":
                self._check(self.execute(STOP_SENSOR_MUTATION, {"id": sensor["sensorState"]["id"]}))
            stopped.append(sensor["name"])
        after = self.execute(INSTIGATORS_QUERY, {"selector": self.repository_selector})["repositoryOrError"]
        running = [s["name"] for s in after["schedules"] if s["scheduleState"]["status"] != "STOPPED"] + [
            s["name"] for s in after["sensors"] if s["sensorState"]["status"] != "STOPPED"
        ]
        if running:
            raise GraphQLError(f"still running after stop: {running}")
        return stopped

    def dismiss_community_dialog(self) -> None:
        """Mark the UI's community dialog seen, as clicking "Skip" does: it would cover every page."""
        self.execute(SET_NUX_SEEN_MUTATION)
        if self.execute(SHOULD_SHOW_NUX_QUERY)["shouldShowNux"]:
            raise GraphQLError("the community dialog is still due after setNuxSeen")

    @staticmethod
    def _check(data: dict[str, Any]) -> None:
        for value in data.values():
            if isinstance(value, dict) and value.get("__typename") in ("PythonError", "UnauthorizedError"):
                raise GraphQLError(str(value))

    def launch_partition_run(
        self,
        night: str,
        property_ids: Sequence[str] = (),
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """Launch (queue) one run of the job for a night and a batch of properties (none: every one), as
        the launchpad does (Dagster's own GraphQL client)."""
        # Imported here: conftest loads this module for every session, the fast tier needs no GraphQL client.
        from dagster_graphql import DagsterGraphQLClient

        url = httpx.URL(self.base_url)
        client = DagsterGraphQLClient(url.host, url.port, timeout=int(self.timeout_s))
        return client.submit_job_execution(
            JOB_NAME,
            repository_location_name=LOCATION_NAME,
            repository_name=REPOSITORY_NAME,
            run_config=batch_run_config(property_ids),
            tags={"dagster/partition": night, **(tags or {})},
        )

    def launch_asset_backfill(
        self,
        asset_keys: Sequence[str],
        partition_names: Sequence[str],
        run_config: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
        job_name: str | None = None,
    ) -> str:
        """launchPartitionBackfill with an asset selection and partition names, as the UI's materialize
        dialog sends it: with ``job_name``, the dialog of assets of that job (the job's partition set as
        selector, so runs are runs of the job with its tags), else a pure asset backfill. ``run_config``
        is the launchpad's config, sent as the YAML text the UI sends."""
        params: dict[str, Any] = {
            "assetSelection": [{"path": [key]} for key in asset_keys],
            "partitionNames": list(partition_names),
            "fromFailure": False,
            "title": "test backfill",
            "tags": [{"key": k, "value": v} for k, v in (tags or {}).items()],
        }
        if job_name:
            params["selector"] = {
                "partitionSetName": f"{job_name}_partition_set",
                "repositorySelector": self.repository_selector,
            }
        if run_config:
            params["runConfigData"] = yaml.safe_dump(dict(run_config), sort_keys=False)
        result = self.execute(LAUNCH_BACKFILL_MUTATION, {"backfillParams": params})["launchPartitionBackfill"]
        if result["__typename"] != "LaunchBackfillSuccess":
            raise GraphQLError(f"launchPartitionBackfill: {result}")
        backfill_id: str = result["backfillId"]
        return backfill_id

    def backfill_status(self, backfill_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.execute(BACKFILL_QUERY, {"backfillId": backfill_id})[
            "partitionBackfillOrError"
        ]
        if result["__typename"] != "PartitionBackfill":
            raise GraphQLError(f"partitionBackfillOrError: {result}")
        return result

    def wait_for_backfill(self, backfill_id: str, timeout_s: float, deployment: DagsterDeployment) -> str:
        def finished() -> str | None:
            deployment.check_alive()
            backfill = self.backfill_status(backfill_id)
            if backfill["status"] in BACKFILL_FAILED:
                raise GraphQLError(f"backfill ended {backfill['status']}: {backfill.get('error')}")
            return str(backfill["status"]) if backfill["status"] in BACKFILL_DONE else None

        return wait_until(f"backfill {backfill_id} completed", finished, timeout_s, 2.0)


def wait_for_runs(
    instance: dg.DagsterInstance, run_ids: Sequence[str], timeout_s: float, deployment: DagsterDeployment
) -> list[dg.RunRecord]:
    """Until every run is finished (success, failure or canceled); their records, in ``run_ids`` order."""

    def finished() -> list[dg.RunRecord] | None:
        deployment.check_alive()
        records = {r.dagster_run.run_id: r for r in instance.get_run_records(dg.RunsFilter(run_ids=run_ids))}
        if len(records) == len(run_ids) and all(r.dagster_run.is_finished for r in records.values()):
            return [records[run_id] for run_id in run_ids]
        return None

    return wait_until(f"{len(run_ids)} runs finished", finished, timeout_s, 1.0)


def recon_env(database_url: str, simulator_base_url: str, first_night: date) -> dict[str, str]:
    """The contract's variables for the code server (and so for every run worker)."""
    return {
        "RECON_DATABASE_URL": database_url,
        "RECON_PROVIDER": "simulator",
        "RECON_PROVIDER_BASE_URL": simulator_base_url,
        "RECON_FIRST_NIGHT": first_night.isoformat(),
        "RECON_PROVIDER_MAX_CONCURRENCY": "4",
    }


# ----- the setup the process tests share ----------------------------------------------------------------
@dataclass
class PgDagsterWorld:
    """What a process test runs against: the seeded ``world``, its recon database, the simulator serving
    it, and the PostgreSQL-backed instance. ``env`` is everything a Dagster process needs (DAGSTER_HOME,
    DAGSTER_PG_*, RECON_*); ``instance`` is this process's handle on the same instance."""

    world: NightsWorld
    recon_url: str
    dagster_url: str
    simulator_url: str
    home: Path
    env: dict[str, str]
    instance: dg.DagsterInstance
    log_dir: Path

    @property
    def pg_env(self) -> dict[str, str]:
        return dagster_pg_env(make_url(self.dagster_url))

    def deployment(self) -> DagsterDeployment:
        """The code server, webserver and daemon on this world, each started by the test when it wants."""
        return DagsterDeployment(self.env, self.log_dir)


StartWorld = Callable[..., PgDagsterWorld]


@contextmanager
def pg_dagster_world_in(
    tmp_path: Path,
    nights: Sequence[date],
    bookings_per_night: int,
    properties: tuple[PropertyRow, ...] = DEMO_PROPERTIES,
    dagster_yaml: Mapping[str, Any] | None = None,
) -> Iterator[PgDagsterWorld]:
    """Two scratch databases (recon tables, Dagster storage), the simulator, the world seeded, and
    ``tmp_path``/dagster_home = deploy/dagster.yaml with ``dagster_yaml`` merged in; all gone afterwards."""
    world = build_nights_world(nights, bookings_per_night, properties)
    with (
        postgres_database("recon_dagster") as dagster_url,
        postgres_database("recon_data") as recon_url,
        ServerThread(build_app(world.world.store)) as simulator,
    ):
        seed_database(recon_url, world)
        home = write_dagster_home(tmp_path / "dagster_home", dagster_yaml)
        pg_env = dagster_pg_env(make_url(dagster_url))
        env = {
            "DAGSTER_HOME": str(home),
            "RECON_HOME": str(tmp_path / "recon_home"),  # where runs leave files (reports)
            **pg_env,
            **recon_env(recon_url, simulator.base_url, nights[0]),
        }
        with instance_from_home(home, pg_env) as instance:
            yield PgDagsterWorld(
                world, recon_url, dagster_url, simulator.base_url, home, env, instance, tmp_path / "logs"
            )


@pytest.fixture
def pg_dagster_world(tmp_path: Path) -> Iterator[StartWorld]:
    """``pg_dagster_world(nights, bookings_per_night, properties=..., dagster_yaml=...)`` starts the shared
    setup (``pg_dagster_world_in``) once per call; the test's end tears it down. The conftest puts every
    test that uses it in the ``postgres`` tier."""
    with ExitStack() as stack:

        def start(*args: Any, **kwargs: Any) -> PgDagsterWorld:
            return stack.enter_context(pg_dagster_world_in(tmp_path, *args, **kwargs))

        yield start


def queued_batch_runs(instance: dg.DagsterInstance, backfill_id: str) -> tuple[list[str], list[str]]:
    """The backfill's night runs, and the batch runs they queued (``recon/queued_by``), by run id."""
    backfill = dg.RunsFilter(tags={"dagster/backfill": backfill_id})
    nights = [r.dagster_run.run_id for r in instance.get_run_records(backfill)]
    batches = [
        r.dagster_run.run_id
        for night in nights
        for r in instance.get_run_records(dg.RunsFilter(tags={QUEUED_BY_TAG: night}))
    ]
    return nights, batches
