"""`recon reconcile-night NIGHT --wait` against the deployment: a PostgreSQL-backed instance
(deploy/dagster.yaml), the code server and dagster-daemon as processes. The command runs as a child
process; the daemon launches the runs it queued, and the findings of the planted discrepancies land in the
reconciliation database.

One deployment serves two submissions, in order: ``--property`` for one property (only its batch is
submitted and only its findings are written), then the whole night (every property, one batch each).
The first loads the code location from the code server (``--workspace deploy/workspace.yaml``, as
production does), the second in the command's own process (the default): the daemon launches both.
Without any daemon, ``--in-process`` reconciles the night in the command's own process.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.tags import PARTITION_NAME_TAG

from recon_pipeline.db.engine import make_engine
from recon_pipeline.defs.batches import BATCH_OP, BATCH_TAG, NIGHT_TAG
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.run import found_by_category
from recon_pipeline.storage.night_outcomes import SUCCEEDED, load_outcomes
from recon_pipeline_tests.support.dagster_processes import (
    DEPLOY_DIR,
    DagsterDeployment,
    PgDagsterWorld,
    StartWorld,
)

NIGHT = date(2026, 11, 29)
RECON = Path(sys.executable).with_name("recon")
STARTUP_TIMEOUT_S = 120
WAIT_TIMEOUT_S = 400


def reconcile_night(deployment: DagsterDeployment, *options: str) -> subprocess.CompletedProcess[str]:
    argv = [str(RECON), "reconcile-night", NIGHT.isoformat(), "--wait", "--timeout", str(WAIT_TIMEOUT_S)]
    return subprocess.run(
        [*argv, *options],
        env=deployment.process_env,
        capture_output=True,
        text=True,
        timeout=WAIT_TIMEOUT_S + 60,
    )


def planted(w: PgDagsterWorld, property_id: str) -> dict[str, int]:
    night = NIGHT.isoformat()
    return {cat: n for (p, nt, cat), n in w.world.world.expected.items() if (p, nt) == (property_id, night)}


def found(w: PgDagsterWorld) -> dict[str, dict[str, int]]:
    engine = make_engine(w.recon_url)
    try:
        return {p: found_by_category(engine, p, NIGHT.isoformat()) for p in w.world.property_ids}
    finally:
        engine.dispose()


def cli_runs(w: PgDagsterWorld) -> list[dg.DagsterRun]:
    runs = w.instance.get_runs(dg.RunsFilter(tags={NIGHT_TAG: NIGHT.isoformat(), "recon/trigger": "cli"}))
    return list(reversed(runs))


@pytest.mark.slow
@pytest.mark.postgres
def test_reconcile_night_waits_for_the_daemons_runs_and_the_findings_land(
    pg_dagster_world: StartWorld,
) -> None:
    w = pg_dagster_world([NIGHT], 10, DEMO_PROPERTIES)
    ids = w.world.property_ids
    one = "kyoto-gion"
    assert all(planted(w, p) for p in ids)  # every property has discrepancies to find
    with w.deployment() as deployment, deployment.logs_on_failure():
        deployment.start_code_server(STARTUP_TIMEOUT_S)
        client = deployment.start_webserver(STARTUP_TIMEOUT_S)
        client.wait_for_location(STARTUP_TIMEOUT_S, deployment)
        client.stop_all_instigators()  # no schedule or sensor reconciles this night meanwhile
        deployment.start_daemon()

        done = reconcile_night(
            deployment, "--property", one, "--workspace", str(DEPLOY_DIR / "workspace.yaml")
        )
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        progress = [line for line in lines if line.startswith(f"{NIGHT}: ") and "batches done" in line]
        assert progress[-1] == f"{NIGHT}: 1/1 batches done (1/1 properties), 0 failed, 0 running, 0 queued"
        assert lines[-1] == f"{NIGHT}: every batch succeeded"
        (run,) = cli_runs(w)
        assert run.status == dg.DagsterRunStatus.SUCCESS
        assert run.run_config["ops"][BATCH_OP]["config"]["properties"] == [one]
        after_one = found(w)
        assert after_one[one] == planted(w, one)
        assert all(after_one[p] == {} for p in ids if p != one)  # only its batch ran

        done = reconcile_night(deployment, "--batch-size", "1")  # the code location loaded in-process
        assert done.returncode == 0, done.stdout + done.stderr
        progress = [line for line in done.stdout.splitlines() if "batches done" in line]
        assert progress[0].startswith(f"{NIGHT}: 0/3 batches done (0/3 properties), 0 failed, ")
        assert progress[-1] == f"{NIGHT}: 3/3 batches done (3/3 properties), 0 failed, 0 running, 0 queued"
        runs = cli_runs(w)
        assert len(runs) == 4 and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        assert found(w) == {p: planted(w, p) for p in ids}


@pytest.mark.slow
@pytest.mark.postgres
def test_in_process_reconciles_the_night_without_a_daemon(pg_dagster_world: StartWorld) -> None:
    """No daemon, no code server: ``--in-process`` runs each batch in the command's own process, recorded
    as runs in the instance with the tags a submission gives; every property-night succeeds and the
    planted findings land."""
    w = pg_dagster_world([NIGHT], 10, DEMO_PROPERTIES)
    ids = w.world.property_ids
    deployment = w.deployment()  # its environment only: nothing is started
    done = subprocess.run(
        [str(RECON), "reconcile-night", NIGHT.isoformat(), "--in-process", "--batch-size", "1"],
        env=deployment.process_env,
        capture_output=True,
        text=True,
        timeout=WAIT_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{NIGHT}: reconciling here 3 runs of reconcile_night for 3 properties")
    progress = [line for line in lines if "batches done" in line]
    assert progress[0] == f"{NIGHT}: 0/3 batches done (0/3 properties), 0 failed, 1 running, 2 queued"
    assert progress[-1] == f"{NIGHT}: 3/3 batches done (3/3 properties), 0 failed, 0 running, 0 queued"
    assert lines[-1] == f"{NIGHT}: every batch succeeded"
    runs = cli_runs(w)
    assert len(runs) == 3 and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    assert all(r.tags[PARTITION_NAME_TAG] == NIGHT.isoformat() and PROVIDER_BOUND_TAG in r.tags for r in runs)
    reconciled = [p for r in runs for p in r.run_config["ops"][BATCH_OP]["config"]["properties"]]
    assert sorted(reconciled) == sorted(ids)
    assert all(f"  run {r.run_id}: batch {r.tags[BATCH_TAG]} (1 properties)" in lines for r in runs)
    engine = make_engine(w.recon_url)
    try:
        with engine.connect() as connection:
            outcomes = load_outcomes(connection, NIGHT.isoformat(), ids)
    finally:
        engine.dispose()
    assert {p: o.status for p, o in outcomes.items()} == {p: SUCCEEDED for p in ids}
    assert found(w) == {p: planted(w, p) for p in ids}
