"""Settings from the environment (the contract's variables), resolved in one place.

Nothing here is read at import time: commands and Dagster resources call these functions when they run,
so a test or a deployment can set the variables first.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from recon_pipeline.errors import ConfigError
from recon_pipeline.keys import parse_night

if TYPE_CHECKING:
    from recon_pipeline.providers.interface import ClientSettings, Provider

# RECON_PROVIDER is a registered provider's name, or this: the simulator, which speaks any registered
# provider's API (RECON_PROVIDER_FLAVOUR, default DEFAULT_FLAVOUR).
SIMULATOR = "simulator"
DEFAULT_FLAVOUR = "stripe"
DEFAULT_MAX_CONCURRENCY = 8
DEFAULT_MAX_RETRY_AFTER_S = 30
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


@dataclass(frozen=True)
class ProviderSettings:
    """Where and how to reach the payment provider; ``flavour`` is the API it speaks."""

    kind: str
    base_url: str
    api_key: str | None
    max_concurrency: int
    flavour: str = DEFAULT_FLAVOUR

    def client_settings(self) -> ClientSettings:
        """What the provider's client factory is given (no provider-specific options configured here)."""
        from recon_pipeline.providers.interface import ClientSettings  # see _registered

        return ClientSettings(self.base_url, self.api_key, {})

    def __repr__(self) -> str:  # never show the key
        return (
            f"ProviderSettings(kind={self.kind!r}, flavour={self.flavour!r}, base_url={self.base_url!r}, "
            "api_key=***)"
        )


def provider_settings(
    kind: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    max_concurrency: int | None = None,
    flavour: str | None = None,
) -> ProviderSettings:
    """Provider settings: each argument given wins, the rest come from the RECON_PROVIDER* variables.

    ``flavour`` only applies to the simulator (a real provider speaks its own API)."""
    kind = kind or os.environ.get("RECON_PROVIDER", "").strip() or SIMULATOR
    if kind not in provider_kinds():
        raise ConfigError(f"RECON_PROVIDER must be one of {', '.join(provider_kinds())}, not {kind[:40]!r}")
    provider = _registered(kind if kind != SIMULATOR else simulator_flavour(flavour))
    base_url = base_url or os.environ.get("RECON_PROVIDER_BASE_URL", "").strip()
    if not base_url:
        if kind == SIMULATOR:
            raise ConfigError(
                "RECON_PROVIDER=simulator needs RECON_PROVIDER_BASE_URL (the simulator's address)"
            )
        base_url = provider.public_api_root
    _check_base_url(base_url)
    api_key = api_key or os.environ.get("RECON_PROVIDER_API_KEY") or None
    if kind != SIMULATOR and not api_key:
        raise ConfigError(f"RECON_PROVIDER={kind} needs RECON_PROVIDER_API_KEY")
    if api_key is not None and not (api_key.isascii() and api_key.isprintable() and " " not in api_key):
        # An HTTP client would refuse the header later, quoting it: say so now, without the key.
        raise ConfigError("RECON_PROVIDER_API_KEY holds spaces or unprintable characters")
    reason = None if api_key is None else provider.check_api_key(api_key)
    if reason is not None:
        raise ConfigError(reason)
    flavour = provider.name
    return ProviderSettings(
        kind, base_url.rstrip("/"), api_key, max_concurrency or max_concurrency_from_env(), flavour
    )


def _check_base_url(base_url: str) -> None:
    """An http(s) URL with a host; the value is not repeated, since a URL may carry credentials."""
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL:
        raise ConfigError("RECON_PROVIDER_BASE_URL is not a valid URL") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError("RECON_PROVIDER_BASE_URL must be an http:// or https:// URL with a host")


def simulator_flavour(flavour: str | None = None) -> str:
    """The API the simulator speaks: ``flavour`` if given, else RECON_PROVIDER_FLAVOUR, else the default."""
    flavour = flavour or os.environ.get("RECON_PROVIDER_FLAVOUR", "").strip() or DEFAULT_FLAVOUR
    try:
        return _registered(flavour).name
    except ConfigError as error:
        raise ConfigError(f"RECON_PROVIDER_FLAVOUR: {error}") from None


def provider_kinds() -> tuple[str, ...]:
    """RECON_PROVIDER's allowed values: every registered provider, and the simulator."""
    from recon_pipeline.providers import PROVIDER_NAMES  # the registry imports this module: import late

    return (SIMULATOR, *PROVIDER_NAMES)


def _registered(name: str) -> Provider:
    from recon_pipeline.providers import provider_named  # the registry imports this module: import late

    return provider_named(name)


def max_concurrency_from_env() -> int:
    """RECON_PROVIDER_MAX_CONCURRENCY as a positive integer."""
    return positive_int_from_env("RECON_PROVIDER_MAX_CONCURRENCY", DEFAULT_MAX_CONCURRENCY)


def max_retry_after_s_from_env() -> int:
    """RECON_PROVIDER_MAX_RETRY_AFTER_S: the longest ``Retry-After`` (seconds) a provider client waits out;
    a longer one fails the request at once rather than stall the run."""
    return positive_int_from_env("RECON_PROVIDER_MAX_RETRY_AFTER_S", DEFAULT_MAX_RETRY_AFTER_S)


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
