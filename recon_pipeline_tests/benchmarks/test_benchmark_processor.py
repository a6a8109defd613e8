"""The processor benchmark runs end to end at a tiny N (fresh PostgreSQL databases, worker processes, the
simulator) and accounts for every event; its timings are printed, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from recon_pipeline_tests.support.postgres import admin_url

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "processor.py"


@pytest.mark.postgres
@pytest.mark.slow
def test_benchmark_script_processes_every_event(postgres_url: str) -> None:
    # postgres_url only proves the server is reachable (or fails/skips as the suite requires); the script
    # creates and drops its own databases on that server.
    command = [sys.executable, str(SCRIPT), "--n", "40", "--workers", "1", "2", "--batch-size", "10"]
    completed = subprocess.run(
        [*command, "--postgres-url", admin_url(), "--json"], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    figures = json.loads(completed.stdout)
    assert figures["n"] == 40
    assert [(run["workers"], run["processed"], run["max_attempts"]) for run in figures["runs"]] == [
        (1, 40, 1),
        (2, 40, 1),
    ]
    assert all(sum(run["per_worker"]) == 40 for run in figures["runs"])
