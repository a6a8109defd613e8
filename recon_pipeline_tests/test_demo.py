"""`recon demo` as a user runs it: a subprocess, a fresh RECON_HOME, twice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from recon_pipeline.demo.properties import DEMO_PROPERTIES


def run_recon(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recon_pipeline.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_demo_twice_finds_the_same_and_writes_nothing_new(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "DAGSTER_"))}
    env["RECON_HOME"] = str(tmp_path / "home")
    first = run_recon("demo", "--bookings", "150", env=env)
    assert first.returncode == 0, first.stderr
    for prop in DEMO_PROPERTIES:
        assert f"== {prop.property_id}" in first.stdout
    assert "differs" not in first.stdout
    assert "already committed" in first.stdout

    second = run_recon("demo", "--bookings", "150", env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("adjustments: 0 new") == len(DEMO_PROPERTIES)
    assert "seeded: properties +0, bookings +0, payment_orders +0, ledger_entries +0" in second.stdout

    dagster_home = tmp_path / "home" / "dagster_home"
    assert (dagster_home / "dagster.yaml").exists()
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    try:
        with dg.DagsterInstance.get() as instance:
            runs = instance.get_runs()
            assert len(runs) == 2 * len(DEMO_PROPERTIES)
            assert all(run.is_success for run in runs)
    finally:
        del os.environ["DAGSTER_HOME"]


def test_bad_input_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "RECON_HOME": str(tmp_path), "RECON_DATABASE_URL": "mysql+nothing://x"}
    result = run_recon("db", "init", env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    env["RECON_DATABASE_URL"] = f"sqlite:///{tmp_path / 'r.sqlite'}"
    assert run_recon("db", "init", env=env).stdout.startswith("created tables:")
    assert run_recon("db", "init", env=env).stdout.strip() == "all tables already exist"
