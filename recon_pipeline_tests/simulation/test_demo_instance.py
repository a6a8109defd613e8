"""The Dagster instance `recon demo` leaves is safe to open: its schedules and sensors are stored as
stopped, so a daemon started on it, with the demo's simulator gone, launches nothing and fails nothing;
the demo's last lines say how to open the UI and how to turn the automations on."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef
from dagster._core.scheduler.instigation import InstigatorStatus

from recon_pipeline.batches.launch import DEFINITIONS_MODULE
from recon_pipeline.definitions import build_definitions
from recon_pipeline_tests.support.dagster_processes import BIN_DIR, start_process, wait_until
from recon_pipeline_tests.support.demo_runs import fresh_env, run_recon

# Sensors tick at least every 60 s once running (stale_nights_sensor, reports_automation_sensor), the
# pending-events one every 15 s: 70 s of a live sensor daemon would have ticked every running one.
DAEMON_WATCH_S = 70


@pytest.mark.slow  # `recon demo`, then dagster-daemon for over a minute
def test_a_daemon_on_the_demos_instance_launches_nothing_until_automations_are_turned_on(
    tmp_path: Path,
) -> None:
    env = fresh_env(tmp_path)
    demo = run_recon("demo", "--bookings", "60", env=env)
    assert demo.returncode == 0, demo.stderr
    last = demo.stdout.strip().splitlines()[-4:]
    defs = build_definitions()
    automations = len(list(defs.schedules or [])) + len(list(defs.sensors or []))
    assert last[0].startswith(f"automations off: the {automations} schedules and sensors")
    assert f"dagster schedule start --start-all -m {DEFINITIONS_MODULE}" in last[0]
    assert last[2].strip().startswith("recon simulator serve --flavour stripe --port 12111")
    ui = shlex.split(last[3])
    assert ui[-3:] == ["dev", "-m", DEFINITIONS_MODULE] and ui[-4] == "dagster"
    printed = dict(word.split("=", 1) for word in ui[:-4])
    home = Path(printed["DAGSTER_HOME"])
    assert home == Path(env["RECON_HOME"]) / "dagster_home"
    assert printed["RECON_PROVIDER"] == "simulator"
    assert re.fullmatch(r"http://127\.0\.0\.1:12111", printed["RECON_PROVIDER_BASE_URL"])

    # The printed environment, with no simulator listening: what opened the original demo to 46 failures.
    daemon_env = {**env, **printed}
    command = [str(BIN_DIR / "dagster-daemon"), "run", "-m", DEFINITIONS_MODULE]
    daemon = start_process("daemon", command, daemon_env, tmp_path / "logs")
    try:
        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
            runs_after_demo = {r.run_id for r in instance.get_runs()}
            assert runs_after_demo  # the demo's own, all succeeded
            assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in instance.get_runs())

            def watching() -> bool | None:
                daemon.check_alive()
                beats = instance.get_daemon_heartbeats()
                return True if {"SENSOR", "SCHEDULER"} <= set(beats) else None

            wait_until("sensor and scheduler daemons beating", watching, 90)
            time.sleep(DAEMON_WATCH_S)
            daemon.check_alive()
            states = instance.all_instigator_state()
            assert len(states) == automations
            assert {state.status for state in states} == {InstigatorStatus.STOPPED}
            assert all(not instance.get_ticks(s.instigator_origin_id, s.selector_id) for s in states)
            assert {r.run_id for r in instance.get_runs()} == runs_after_demo
    finally:
        daemon.stop()
