"""Settings from the environment (the contract's variables), resolved in one place.

Nothing here is read at import time: commands and Dagster resources call these functions when they run,
so a test or a deployment can set the variables first. The provider's own (RECON_PROVIDER*) are read in
``providers/settings.py``, beside the registry that knows which values are allowed.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from recon_pipeline.errors import ConfigError
from recon_pipeline.keys import parse_night

# Bound of every integer setting: beyond it a value is a typo, and it still fits an SQL Integer column.
MAX_INT_SETTING = 2**31 - 1


def recon_home() -> Path:
    """Folder of the embedded default's files (SQLite database, reports, demo Dagster home)."""
    home = Path(os.environ.get("RECON_HOME", "").strip() or "./.recon").resolve()
    if home.exists() and not home.is_dir():
        raise ConfigError(f"RECON_HOME must be a folder, and {str(home)!r} is a file")
    return home


def database_url() -> str:
    """SQLAlchemy URL of the reconciliation database; a SQLite file under RECON_HOME by default."""
    url = os.environ.get("RECON_DATABASE_URL", "").strip()
    return url or f"sqlite:///{recon_home() / 'recon.sqlite'}"


def text_from_env(name: str, default: str) -> str:
    """The variable ``name``, stripped; ``default`` when unset or blank."""
    return os.environ.get(name, "").strip() or default


def positive_int_from_env(name: str, default: int) -> int:
    """The variable ``name`` as a positive integer, ``default`` when unset, else a ConfigError naming it."""
    return positive_int(name, os.environ.get(name, str(default)))


def positive_int(name: str, raw: str) -> int:
    """Parse a positive integer setting (at most MAX_INT_SETTING) or raise a ConfigError naming it."""
    text = raw.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 10 and 1 <= int(text) <= MAX_INT_SETTING):
        raise ConfigError(f"{name} must be a positive integer up to {MAX_INT_SETTING}, not {raw[:40]!r}")
    return int(text)


def seconds_from_env(name: str, default: float) -> float:
    """The variable ``name`` as a finite number of seconds ≥ 0, else a ConfigError naming it."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{name} must be a number of seconds (0 or more), not {raw[:40]!r}")
    return value


def night_from_env(name: str, default: str) -> str:
    """The variable ``name`` as a night 'YYYY-MM-DD' (a real date), else a ConfigError naming it."""
    night = os.environ.get(name, "").strip() or default
    try:
        parse_night(night)
    except ValueError as error:
        raise ConfigError(f"{name}: {error}") from None
    return night


@dataclass(frozen=True)
class EventRetrySettings:
    """How long a failing payment event is retried (``budget_s`` from its first failed try) and how long
    to wait between tries (exponential from ``base_delay_s``, capped at ``max_delay_s``)."""

    budget_s: int
    base_delay_s: int
    max_delay_s: int


def event_retry_settings() -> EventRetrySettings:
    """RECON_EVENT_RETRY_BUDGET_S (6 h: a provider outage shorter than that dead-letters nothing),
    RECON_EVENT_RETRY_BASE_DELAY_S (30 s) and RECON_EVENT_RETRY_MAX_DELAY_S (30 min)."""
    return EventRetrySettings(
        budget_s=positive_int_from_env("RECON_EVENT_RETRY_BUDGET_S", 6 * 3600),
        base_delay_s=positive_int_from_env("RECON_EVENT_RETRY_BASE_DELAY_S", 30),
        max_delay_s=positive_int_from_env("RECON_EVENT_RETRY_MAX_DELAY_S", 30 * 60),
    )
