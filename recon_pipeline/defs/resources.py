"""Dagster resources: the reconciliation database and the payment provider.

Fields left unset fall back to the contract's environment variables when a run starts, so the same
definitions serve the demo, a developer laptop and a deployment; secrets never appear in run config.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
from sqlalchemy import Engine

from recon_pipeline import config
from recon_pipeline.db.engine import make_engine
from recon_pipeline.providers import build_client
from recon_pipeline.providers.http import ProviderHttp, RetryPolicy
from recon_pipeline.providers.interface import ProviderClient


@functools.cache
def _engine_for(url: str) -> Engine:
    """One pooled engine per URL and process, shared by every op of a run."""
    return make_engine(url)


class ReconDatabase(dg.ConfigurableResource):
    """The database holding the contract's tables (PMS tables and our results)."""

    database_url: str | None = None

    def engine(self) -> Engine:
        return _engine_for(self.database_url or config.database_url())


class ProviderResource(dg.ConfigurableResource):
    """The payment provider's API, with bounded concurrency and bounded retries."""

    provider: str | None = None
    flavour: str | None = None  # the simulator's API: a registered provider's (RECON_PROVIDER_FLAVOUR)
    base_url: str | None = None
    api_key: str | None = None
    max_concurrency: int | None = None
    max_attempts: int = 5
    base_delay_s: float = 0.25
    max_delay_s: float = 8.0

    def settings(self) -> config.ProviderSettings:
        return config.provider_settings(
            self.provider, self.base_url, self.api_key, self.max_concurrency, self.flavour
        )

    @contextmanager
    def adapter(self) -> Iterator[ProviderClient]:
        """The client of the provider's flavour (the registered provider whose API it speaks), closed
        after use."""
        settings = self.settings()
        policy = RetryPolicy(
            max_attempts=self.max_attempts, base_delay_s=self.base_delay_s, max_delay_s=self.max_delay_s
        )
        with ProviderHttp(settings.base_url, settings.api_key, settings.max_concurrency, policy) as http:
            yield build_client(settings.flavour, http, settings.client_settings())
