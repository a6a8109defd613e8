"""Running a benchmark script as CI does, against the test server, and reading its one JSON line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from recon_pipeline_tests.support.postgres import admin_url

REPO = Path(__file__).resolve().parents[2]


def benchmark_json(module: str, *args: str, timeout_s: float) -> dict[str, Any]:
    """Run ``python -m <module> … --json`` against the test server; the one JSON line it prints."""
    completed = subprocess.run(
        [sys.executable, "-m", module, *args, "--json", "--postgres-url", admin_url()],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    figures: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return figures
