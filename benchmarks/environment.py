"""What the figures were measured on: the machine, its load, and the versions of everything timed."""

from __future__ import annotations

import argparse
import os
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from sqlalchemy import create_engine, text

from recon_pipeline_tests.support.scratch import DEFAULT_ADMIN_URL

PACKAGES = (
    "pandas",
    "numpy",
    "pyarrow",
    "datacompy",
    "dagster",
    "sqlalchemy",
    "psycopg",
    "alembic",
    "httpx",
    "starlette",
    "uvicorn",
)


def add_postgres_url(parser: argparse.ArgumentParser, what: str = "the scratch databases") -> None:
    """``--postgres-url``: the server ``what`` is created on (RECON_TEST_POSTGRES_URL's, else local)."""
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("RECON_TEST_POSTGRES_URL", DEFAULT_ADMIN_URL),
        help=f"server to create {what} on",
    )


def machine() -> dict[str, str]:
    """CPU model, logical cores, RAM and OS (Linux's /proc; "unknown" where it is not available)."""
    return {
        "cpu": _cpuinfo_field("model name"),
        "cores": str(os.cpu_count() or "unknown"),
        "ram_gb": _ram_gb(),
        "os": platform.platform(),
    }


def load_average() -> float:
    """The one-minute load average: above the core count, other processes were competing for the CPU."""
    return round(os.getloadavg()[0], 2)


def versions(postgres_url: str | None) -> dict[str, str]:
    """Python, the timed packages and the PostgreSQL server (or why it could not be asked)."""
    found = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "not installed"
    if postgres_url is not None:
        found["postgresql"] = _postgres_version(postgres_url)
    return found


def _cpuinfo_field(name: str) -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return platform.processor() or "unknown"


def _ram_gb() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024**2:.1f}"
    except OSError:
        pass
    return "unknown"


def _postgres_version(url: str) -> str:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return str(connection.execute(text("SHOW server_version")).scalar_one())
    except Exception as error:  # reported, not raised: the other suites still run
        return f"unreachable ({type(error).__name__})"
    finally:
        engine.dispose()
