"""Provider settings from the environment (the RECON_PROVIDER* variables), resolved beside the registry.

Which provider a deployment talks to, where and with which key: the registry (``providers/__init__.py``)
knows the allowed names and each provider's defaults, so the settings are checked here, against it.
Nothing is read at import time: commands and Dagster resources call these functions when they run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import httpx

from recon_pipeline.config import positive_int_from_env
from recon_pipeline.errors import ConfigError
from recon_pipeline.providers import PROVIDER_NAMES, provider_named
from recon_pipeline.providers.interface import ClientSettings

# RECON_PROVIDER is a registered provider's name, or this: the simulator, which speaks any registered
# provider's API (RECON_PROVIDER_FLAVOUR, default DEFAULT_FLAVOUR).
SIMULATOR = "simulator"
DEFAULT_FLAVOUR = "stripe"
DEFAULT_MAX_CONCURRENCY = 8


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
    provider = provider_named(kind if kind != SIMULATOR else simulator_flavour(flavour))
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
        return provider_named(flavour).name
    except ConfigError as error:
        raise ConfigError(f"RECON_PROVIDER_FLAVOUR: {error}") from None


def provider_kinds() -> tuple[str, ...]:
    """RECON_PROVIDER's allowed values: every registered provider, and the simulator."""
    return (SIMULATOR, *PROVIDER_NAMES)


def max_concurrency_from_env() -> int:
    """RECON_PROVIDER_MAX_CONCURRENCY as a positive integer."""
    return positive_int_from_env("RECON_PROVIDER_MAX_CONCURRENCY", DEFAULT_MAX_CONCURRENCY)
