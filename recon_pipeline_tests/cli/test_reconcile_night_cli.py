"""`recon reconcile-night`: which properties it submits, the runs it queues on a real Dagster instance (the
repo's dagster.yaml in a temporary DAGSTER_HOME, the code location loaded from recon_pipeline.definitions),
how it waits on them, and its one-line refusals. Runs are finished here through the instance's own event
API (no daemon); the process test with the daemon is test_reconcile_night_deploy.py."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.storage.tags import AUTO_RETRY_RUN_ID_TAG, PARTITION_NAME_TAG
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon
from dagster._daemon.types import DaemonHeartbeat
from sqlalchemy import insert

from recon_pipeline import cli
from recon_pipeline.batches import launch
from recon_pipeline.batches.plan import NightBatch
from recon_pipeline.batches.submit import (
    FAILED,
    QUEUED,
    RUNNING,
    SUCCEEDED,
    BatchRun,
    UnknownPropertiesError,
    failure_summary,
    pending_summary,
    progress,
    select_properties,
)
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import properties
from recon_pipeline.defs.batches import BATCH_OP, BATCH_TAG, NIGHT_TAG, PROPERTIES_TAG
from recon_pipeline.properties import PropertyRow
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.storage.night_outcomes import FAILED as OUTCOME_FAILED
from recon_pipeline.storage.night_outcomes import PropertyOutcome, record_outcomes
from recon_pipeline_tests.support.dagster_processes import start_process

REPO_ROOT = Path(__file__).resolve().parents[2]
NIGHT = "2026-11-30"
BAD_ROW = PropertyRow("broken-zone", "Broken", "Mars/Olympus", "EUR", "00:00", None)
IDS = sorted(p.property_id for p in DEMO_PROPERTIES)


def batch(*property_ids: str) -> NightBatch:
    return NightBatch(date(2026, 11, 30), datetime(2026, 11, 30, 0, 0, tzinfo=UTC), property_ids)


# ----- pure ----------------------------------------------------------------------------------------------
def test_progress_line_counts_batches_and_properties_by_state() -> None:
    runs = [
        BatchRun(batch("a", "b"), "r1", SUCCEEDED),
        BatchRun(batch("c"), "r2", FAILED),
        BatchRun(batch("d", "e", "f"), "r3", RUNNING),
        BatchRun(batch("g"), "r4", QUEUED),
    ]
    state = progress(NIGHT, runs)
    assert state.line() == "2026-11-30: 2/4 batches done (3/7 properties), 1 failed, 1 running, 1 queued"
    assert not state.done and not state.succeeded
    assert [r.run_id for r in state.pending_runs] == ["r3", "r4"]
    done = progress(NIGHT, [BatchRun(batch(*(f"p{i}" for i in range(1180))), "r", SUCCEEDED)])
    assert (
        done.line() == "2026-11-30: 1/1 batches done (1,180/1,180 properties), 0 failed, 0 running, 0 queued"
    )
    assert done.done and done.succeeded
    with pytest.raises(ValueError, match="unknown batch states"):
        progress(NIGHT, [BatchRun(batch("a"), "r", "paused")])


def test_failure_summary_names_each_failed_run_its_reason_and_its_properties_errors() -> None:
    failed = [BatchRun(batch("a", "b", "c"), "run-1", FAILED), BatchRun(batch("d"), "run-2", FAILED)]
    errors = {"b": "property 'b' is invalid: bad timezone", "zz": "not in the batch"}
    lines = failure_summary(failed, errors, {"run-1": "Steps failed: ['reconcile_batch']."})
    key = batch("a", "b", "c").key
    assert lines == [
        f"failed: run run-1, batch {key} (3 properties): Steps failed: ['reconcile_batch'].",
        "  b: property 'b' is invalid: bad timezone",
        f"failed: run run-2, batch {batch('d').key} (1 properties)",
    ]


def test_pending_summary_names_five_runs_and_counts_the_rest() -> None:
    pending = [BatchRun(batch(f"p{i}"), f"run-{i}", QUEUED) for i in range(7)]
    line = pending_summary(pending)
    assert line.startswith("7 batches not done: run run-0 (queued, batch 2026-11-30@0000-1-")
    assert "run-4" in line and "run-5" not in line and line.endswith(" and 2 more")


def test_select_properties_skips_invalid_rows_and_refuses_unknown_ids() -> None:
    rows = [*DEMO_PROPERTIES, BAD_ROW]
    every = select_properties(rows)
    assert sorted(p.property_id for p in every.valid) == IDS
    assert [e.property_id for e in every.invalid] == ["broken-zone"]
    named = select_properties(rows, ["kyoto-gion"])
    assert ([p.property_id for p in named.valid], named.invalid) == (["kyoto-gion"], [])
    with pytest.raises(UnknownPropertiesError, match="^no such property: nowhere, nowhere-2 "):
        select_properties(rows, ["kyoto-gion", "nowhere-2", "nowhere"])
    # An empty batch would mean every property to the job: nothing valid is an error, never a run.
    with pytest.raises(LookupError, match="nothing to reconcile"):
        select_properties(rows, ["broken-zone"])
    with pytest.raises(LookupError, match="nothing to reconcile"):
        select_properties([])


# ----- the command on a real instance --------------------------------------------------------------------
@pytest.fixture
def seeded(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """RECON_DATABASE_URL with the demo properties and one invalid row."""
    engine = make_engine(sqlite_url)
    try:
        migrations.upgrade(engine)
        with engine.begin() as connection:
            connection.execute(insert(properties), [p.row() for p in (*DEMO_PROPERTIES, BAD_ROW)])
    finally:
        engine.dispose()
    monkeypatch.setenv("RECON_DATABASE_URL", sqlite_url)
    return sqlite_url


def write_home(home: Path, **overrides: object) -> Path:
    """The repo's local dagster.yaml (SQLite storage in the home, QueuedRunCoordinator), overridden."""
    home.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((REPO_ROOT / "dagster.yaml").read_text())
    (home / "dagster.yaml").write_text(yaml.safe_dump({**config, **overrides}))
    return home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """DAGSTER_HOME with run retries off (a failed run is final at once: no daemon here to retry it)."""
    path = write_home(tmp_path / "dagster_home", run_retries={"enabled": False})
    monkeypatch.setenv("DAGSTER_HOME", str(path))
    monkeypatch.setenv("RECON_FIRST_NIGHT", "2026-01-01")
    night_runs(path)  # creates the instance's storage now: two first openings at once race on its schema
    yield path
    shutil.rmtree(path, ignore_errors=True)


def night_runs(home: Path) -> list[dg.DagsterRun]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return list(reversed(instance.get_runs(dg.RunsFilter(tags={NIGHT_TAG: NIGHT}))))


def assert_one_line(err: str, name: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1 and name in err, err


@pytest.mark.slow  # loads the code location in-process (~5-10 s)
def test_queues_one_run_per_batch_with_its_properties_partition_and_tags(
    seeded: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["reconcile-night", NIGHT, "--batch-size", "1"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("skipped: property 'broken-zone' is invalid: ") and err.count("\n") == 1
    runs = night_runs(home)
    assert len(runs) == 3 and f"{NIGHT}: queued 3 runs of reconcile_night for 3 properties" in out
    submitted = []
    for run in runs:
        assert run.job_name == "reconcile_night" and run.status == dg.DagsterRunStatus.QUEUED
        members = run.run_config["ops"][BATCH_OP]["config"]["properties"]
        assert len(members) == 1
        assert run.tags[PARTITION_NAME_TAG] == NIGHT
        assert run.tags["recon/trigger"] == "cli" and run.tags[PROPERTIES_TAG] == "1"
        assert run.tags[BATCH_TAG].startswith(f"{NIGHT}@") and f"run {run.run_id}: batch " in out
        submitted += members
    assert sorted(submitted) == IDS


@pytest.mark.slow  # loads the code location in-process (~5-10 s)
def test_a_named_property_is_its_own_batch(seeded: str, home: Path) -> None:
    assert cli.main(["reconcile-night", NIGHT, "--property", "denver-lodge"]) == 0
    (run,) = night_runs(home)
    assert run.run_config["ops"][BATCH_OP]["config"]["properties"] == ["denver-lodge"]


@pytest.mark.slow  # loads the code location in-process (~5-10 s)
def test_wait_times_out_naming_the_runs_still_queued(
    seeded: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No daemon: the runs stay queued, and the wait gives up at its timeout with exit 3."""
    started = time.monotonic()
    code = cli.main(["reconcile-night", NIGHT, "--property", "kyoto-gion", "--wait", "--timeout", "1"])
    assert code == 3 and time.monotonic() - started < 30
    out, err = capsys.readouterr()
    assert f"{NIGHT}: 0/1 batches done (0/1 properties), 0 failed, 0 running, 1 queued\n" in out
    (run,) = night_runs(home)
    assert_one_line(err, f"timed out after 1 s, the runs go on: 1 batches not done: run {run.run_id} (queued")


@pytest.mark.slow  # waits out the daemon's 30 s, then starts dagster-daemon
def test_without_a_daemon_wait_says_so_and_a_daemon_lacking_the_location_fails_runs_with_the_reason(
    seeded: str, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No daemon: one line naming what to start, exit 3 within 40 s, the run left queued. Then a daemon
    that holds no code location (as one started with another location name does): the run it fails is
    reported with the run's own failure reason, read from the instance, and how to start a daemon."""
    started = time.monotonic()
    assert cli.main(["reconcile-night", NIGHT, "--property", "kyoto-gion", "--wait"]) == 3
    assert time.monotonic() - started < 40
    out, err = capsys.readouterr()
    assert f"{NIGHT}: 0/1 batches done (0/1 properties), 0 failed, 0 running, 1 queued\n" in out
    assert_one_line(
        err, "no dagster-daemon is running for the instance in DAGSTER_HOME (no live heartbeat in 30 s)"
    )
    assert "start `dagster-daemon run -w workspace.yaml` in the project folder (or `dagster dev`)" in err
    (queued,) = night_runs(home)
    assert queued.status == dg.DagsterRunStatus.QUEUED

    daemon = start_process(
        "daemon",
        [str(Path(sys.executable).with_name("dagster-daemon")), "run", "--empty-workspace"],
        os.environ,
        tmp_path / "logs",
    )
    try:
        code = cli.main(
            ["reconcile-night", NIGHT, "--property", "denver-lodge", "--wait", "--timeout", "120"]
        )
        out, err = capsys.readouterr()
        assert code == 1, out + err + daemon.tail()
    finally:
        daemon.stop()
    run = next(r for r in night_runs(home) if r.run_id != queued.run_id)
    assert run.status == dg.DagsterRunStatus.FAILURE
    assert out.splitlines()[-1] == (
        f"failed: run {run.run_id}, batch {run.tags[BATCH_TAG]} (1 properties): Location "
        "recon_pipeline.definitions does not exist in workspace (the daemon has no code location "
        "'recon_pipeline.definitions': start it in the project folder with `dagster-daemon run -w "
        "workspace.yaml`)"
    )


@pytest.mark.slow  # loads the code location and runs the job in-process (~10 s)
def test_in_process_names_a_failed_run_with_its_steps_own_error_and_exits_1(
    seeded: str, home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--in-process needs no daemon (the run is here, recorded in the instance); a run whose step failed
    after its retries is named with the step's own error, not Dagster's "Exceeded max_retries"."""
    monkeypatch.setenv("RECON_PROVIDER", "simulator")
    monkeypatch.delenv("RECON_PROVIDER_BASE_URL", raising=False)
    monkeypatch.setenv("RECON_STEP_RETRY_DELAY_S", "0.1")
    assert cli.main(["reconcile-night", NIGHT, "--property", "kyoto-gion", "--in-process"]) == 1
    out = capsys.readouterr().out
    (run,) = night_runs(home)
    assert run.status == dg.DagsterRunStatus.FAILURE and run.tags["recon/trigger"] == "cli"
    assert run.tags[PARTITION_NAME_TAG] == NIGHT
    assert f"{NIGHT}: 1/1 batches done (1/1 properties), 1 failed, 0 running, 0 queued\n" in out
    assert out.splitlines()[-1] == (
        f"failed: run {run.run_id}, batch {run.tags[BATCH_TAG]} (1 properties): "
        "RECON_PROVIDER=simulator needs RECON_PROVIDER_BASE_URL (the simulator's address)"
    )


def finish_runs_when_queued(home: Path, expected: int, fail: str) -> threading.Thread:
    """A thread that stands in for the daemon: it beats the run queue's heartbeat (so the command never
    takes it for a missing daemon, however slowly a loaded machine queues the runs) and, once ``expected``
    runs of the night are queued (their submission recorded), ends them as a run worker would: the one
    reconciling property ``fail`` fails (with its outcome recorded), the others succeed."""

    def finish() -> None:
        deadline = time.monotonic() + 60
        with dg.DagsterInstance.from_config(str(home)) as instance:
            beat = DaemonHeartbeat(time.time(), QueuedRunCoordinatorDaemon.daemon_type(), "test-finisher")
            instance.add_daemon_heartbeat(beat)
            while time.monotonic() < deadline:
                runs = instance.get_runs(dg.RunsFilter(tags={NIGHT_TAG: NIGHT}))
                # Queued, not only created: a run ended before its submission is recorded would be put
                # back in the queue by that submission, and wait there for a daemon that never comes.
                if len(runs) == expected and all(r.status == dg.DagsterRunStatus.QUEUED for r in runs):
                    break
                time.sleep(0.1)
            for run in runs:
                if fail in run.run_config["ops"][BATCH_OP]["config"]["properties"]:
                    record_failure(run.run_id, fail)
                    instance.report_run_failed(run, "1 of 1 properties failed")
                else:
                    success = DagsterEvent(DagsterEventType.RUN_SUCCESS.value, run.job_name)
                    instance.report_dagster_event(success, run.run_id)

    thread = threading.Thread(target=finish, daemon=True)
    thread.start()
    return thread


def record_failure(run_id: str, property_id: str) -> None:
    engine = make_engine(os.environ["RECON_DATABASE_URL"])
    now = datetime.now(UTC)
    outcome = PropertyOutcome(
        property_id, NIGHT, run_id, None, OUTCOME_FAILED, now, now, error="the provider pull was cut short"
    )
    try:
        with engine.begin() as connection:
            record_outcomes(connection, [outcome])
    finally:
        engine.dispose()


@pytest.mark.slow  # loads the code location in-process (~5-10 s)
def test_wait_exits_1_naming_the_failed_run_and_its_property_error(
    seeded: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    finisher = finish_runs_when_queued(home, expected=3, fail="kyoto-gion")
    code = cli.main(["reconcile-night", NIGHT, "--batch-size", "1", "--wait", "--timeout", "60"])
    finisher.join(timeout=10)
    out, _err = capsys.readouterr()
    assert code == 1, out
    failed = next(r for r in night_runs(home) if r.status == dg.DagsterRunStatus.FAILURE)
    assert f"{NIGHT}: 3/3 batches done (3/3 properties), 1 failed, 0 running, 0 queued\n" in out
    batch_line = f"failed: run {failed.run_id}, batch {failed.tags[BATCH_TAG]} (1 properties)"
    assert f"{batch_line}: 1 of 1 properties failed\n" in out  # the run's own failure message
    assert "  kyoto-gion: the provider pull was cut short\n" in out


@pytest.mark.slow  # loads the code location in-process (~5-10 s)
def test_a_failed_run_being_retried_is_followed_to_its_retry(seeded: str, tmp_path: Path) -> None:
    """With run retries on, a failed run the daemon will retry is not done; once retried, the batch's
    state is its retry's."""
    retried_home = write_home(tmp_path / "retried_home")
    with dg.DagsterInstance.from_config(str(retried_home)) as instance:
        assert instance.run_retries_enabled
        with launch.loaded_workspace(instance, None) as workspace:
            request = dg.RunRequest(partition_key=NIGHT, run_config={}, tags={NIGHT_TAG: NIGHT})
            first, retry = launch.submit_requests(instance, workspace, "reconcile_night", [request] * 2)
        instance.report_run_failed(instance.get_run_by_id(first))
        (run,) = launch.latest_runs(instance, [first])
        assert run.run_id == first and launch.run_state(run, True) == RUNNING
        instance.add_run_tags(first, {AUTO_RETRY_RUN_ID_TAG: retry})
        instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_SUCCESS.value, run.job_name), retry)
        (run,) = launch.latest_runs(instance, [first])
        assert run.run_id == retry and launch.run_state(run, True) == SUCCEEDED


def test_help_says_what_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["reconcile-night", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "DAGSTER_HOME" in out and "QueuedRunCoordinator" in out and "--property ID" in out
    assert "exit 0 iff all succeeded" in out


# ----- refusals: one line, nothing submitted -------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["reconcile-night", "2026-13-01"], "night"),
        (["reconcile-night", "30-11-2026"], "night"),
        (["reconcile-night", NIGHT, "--property", "a,b"], "--property"),
        (["reconcile-night", NIGHT, "--batch-size", "0"], "--batch-size"),
        (["reconcile-night", NIGHT, "--timeout", "-1"], "--timeout"),
        (["reconcile-night", NIGHT, "--wait", "--in-process"], "--in-process"),
    ],
)
def test_bad_arguments_are_one_line(argv: list[str], name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert_one_line(err, name)


def test_unknown_property_is_one_line_naming_it(
    seeded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    before = sorted(tmp_path.iterdir())
    assert cli.main(["reconcile-night", NIGHT, "--property", "kyoto-gion", "--property", "nowhere"]) == 2
    assert_one_line(capsys.readouterr().err, "no such property: nowhere")
    assert sorted(tmp_path.iterdir()) == before  # refused before the instance was opened


def test_dagster_home_unset_or_not_a_folder_is_one_line(
    seeded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert cli.main(["reconcile-night", NIGHT]) == 2
    assert_one_line(capsys.readouterr().err, "DAGSTER_HOME is not set")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "nowhere"))
    assert cli.main(["reconcile-night", NIGHT]) == 2
    assert_one_line(capsys.readouterr().err, f"DAGSTER_HOME={tmp_path / 'nowhere'} is not a folder")


@pytest.mark.slow  # loads the code location in-process (~5-10 s)
def test_an_instance_that_launches_runs_itself_is_refused(
    seeded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "default_coordinator"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        "run_coordinator:\n  module: dagster._core.run_coordinator\n  class: DefaultRunCoordinator\n"
    )
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert cli.main(["reconcile-night", NIGHT]) == 2
    assert_one_line(capsys.readouterr().err, "launches runs itself (")


@pytest.mark.slow  # loads the code location in-process (~5-10 s)
def test_a_night_that_is_not_a_partition_is_one_line(
    seeded: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["reconcile-night", "2025-06-01"]) == 2
    assert_one_line(capsys.readouterr().err, "2025-06-01 is not a partition of job 'reconcile_night'")
    assert night_runs(home) == []


@pytest.mark.slow  # a `recon` process: it imports the definitions afresh, as an operator's shell does
def test_a_code_location_that_does_not_load_is_one_line_naming_the_setting(seeded: str, home: Path) -> None:
    recon = Path(sys.executable).with_name("recon")
    env = {**os.environ, "RECON_FIRST_NIGHT": "bogus"}
    done = subprocess.run(
        [str(recon), "reconcile-night", NIGHT], env=env, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: code location 'recon_pipeline.definitions' does not load: "
        "RECON_FIRST_NIGHT: night must be 'YYYY-MM-DD', not 'bogus'\n"
    )
    assert night_runs(home) == []


@pytest.mark.slow  # gRPC tries the closed port for a while
def test_an_unreachable_code_server_is_one_line_and_exit_1(
    seeded: str, home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("DAGSTER_CODE_SERVER_HOST", "127.0.0.1")
    monkeypatch.setenv("DAGSTER_CODE_SERVER_PORT", str(port))
    workspace = REPO_ROOT / "deploy" / "workspace.yaml"
    assert cli.main(["reconcile-night", NIGHT, "--workspace", str(workspace)]) == 1
    assert capsys.readouterr().err == (
        "error: code location 'recon_pipeline.definitions' does not load: "
        "Could not reach user code server. gRPC Error code: UNAVAILABLE\n"
    )
    assert night_runs(home) == []
