"""The webhook intake benchmark runs end to end at a tiny N and stores exactly the distinct events sent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "webhooks.py"


@pytest.mark.postgres
@pytest.mark.slow
def test_benchmark_stores_every_distinct_event_once(postgres_url: str) -> None:
    # postgres_url is only the server to create the benchmark's own database on (and proves it is up).
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--events", "200", "--connections", "4", "--workers", "1"]
        + ["--repeat", "2", "--postgres-url", postgres_url, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    figures = json.loads(completed.stdout)
    assert figures["distinct_sent"] == 200 and figures["duplicates_sent"] == 20
    assert figures["stored"] == figures["stored_sent"] == figures["stored_processing"] == 200
    assert figures["accepted"] == 220 and figures["refused"] == 0
    assert figures["accepted_new"] == 200 and figures["duplicate_answers"] == 20
    assert len(figures["runs"]) == 2 and all(run["accepted_per_second"] > 0 for run in figures["runs"])
    engine = create_engine(postgres_url)
    try:
        with engine.connect() as connection:
            leftover = connection.execute(
                text("SELECT count(*) FROM pg_database WHERE datname = :name"), {"name": figures["database"]}
            ).scalar_one()
    finally:
        engine.dispose()
    assert figures["database"].startswith("recon_bench_") and leftover == 0  # dropped at the end
