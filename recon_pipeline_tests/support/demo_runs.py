"""`recon demo` run as a user runs it: a subprocess in a fresh RECON_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_recon(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recon_pipeline.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def fresh_env(tmp_path: Path) -> dict[str, str]:
    """The environment without any RECON_/DAGSTER_ setting, and a new RECON_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "DAGSTER_"))}
    env["RECON_HOME"] = str(tmp_path / "home")
    return env
