"""Dagster resources: the reconciliation database and the payment provider.

Fields left unset fall back to the contract's environment variables when a run starts (``config.py`` and
``providers/settings.py`` read them then, and a bad value fails the run with a ConfigError naming its
variable), so the same definitions serve the demo, a developer laptop and a deployment; secrets never
appear in run config.
"""

from __future__ import annotations

import atexit
import functools
import os
import threading

import dagster as dg
from sqlalchemy import Engine

from recon_pipeline import config
from recon_pipeline.db.engine import make_engine
from recon_pipeline.postings.adapter import PostingAdapter
from recon_pipeline.postings.factory import ADAPTER_VARIABLE, build_adapter
from recon_pipeline.providers import build_client
from recon_pipeline.providers.http import MAX_RPS_VARIABLE, ProviderHttp, RetryPolicy, max_rps_from_env
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.ratelimit import deployment_limiter, deployment_rate
from recon_pipeline.providers.settings import ProviderSettings, provider_settings


@functools.cache
def _engine_for(url: str) -> Engine:
    """One pooled engine per URL and process, shared by every op of a run."""
    return make_engine(url)


class ReconDatabase(dg.ConfigurableResource):
    """The database holding the contract's tables (PMS tables and our results)."""

    database_url: str | None = None

    def url(self) -> str:
        return self.database_url or config.database_url()

    def engine(self) -> Engine:
        return _engine_for(self.url())


_clients: dict[tuple[object, ...], ProviderHttp] = {}
_clients_lock = threading.Lock()


@atexit.register
def _close_clients() -> None:
    """Close every process-wide provider client when the process ends."""
    with _clients_lock:
        for http in _clients.values():
            http.close()
        _clients.clear()


class ProviderResource(dg.ConfigurableResource):
    """The payment provider's API, with bounded concurrency, bounded retries and a request rate shared by
    the whole deployment (``max_rps``, else RECON_PROVIDER_MAX_RPS, else the provider's documented limit;
    against the simulator, unset means no client-side rate).

    One HTTP client per process and settings, shared by every step of the process (one connection pool,
    one concurrency bound) and closed at exit; its rate is taken from a bucket in the reconciliation
    database (``recon_pipeline.providers.ratelimit``), which every process and run shares."""

    database_url: str | None = None  # where the rate bucket lives: RECON_DATABASE_URL's database
    provider: str | None = None
    flavour: str | None = None  # the simulator's API: a registered provider's (RECON_PROVIDER_FLAVOUR)
    base_url: str | None = None
    api_key: str | None = None
    max_concurrency: int | None = None
    max_rps: int | None = None
    max_attempts: int = 5
    base_delay_s: float = 0.25
    max_delay_s: float = 8.0

    def settings(self) -> ProviderSettings:
        return provider_settings(
            self.provider, self.base_url, self.api_key, self.max_concurrency, self.flavour
        )

    def rate(self, settings: ProviderSettings) -> float | None:
        """Requests a second for the deployment, validated (a ConfigError naming RECON_PROVIDER_MAX_RPS);
        unset, the provider's documented limit (``deployment_rate``)."""
        if self.max_rps is not None:
            return float(config.positive_int(MAX_RPS_VARIABLE, str(self.max_rps)))
        return deployment_rate(settings, max_rps_from_env())

    def http(self) -> ProviderHttp:
        """This process's client for these settings, made on first use."""
        settings = self.settings()
        policy = RetryPolicy(
            max_attempts=self.max_attempts, base_delay_s=self.base_delay_s, max_delay_s=self.max_delay_s
        )
        rate, database_url = self.rate(settings), ReconDatabase(database_url=self.database_url).url()
        key = (settings, policy, rate, database_url)
        with _clients_lock:
            http = _clients.get(key)
            if http is None:
                limiter = deployment_limiter(database_url, settings, rate)
                http = ProviderHttp(
                    settings.base_url,
                    settings.api_key,
                    settings.max_concurrency,
                    policy,
                    max_rps=rate or float("inf"),
                    limiter=limiter,
                    provider=settings.flavour,
                )
                _clients[key] = http
        return http

    def adapter(self) -> ProviderClient:
        """The client of the provider's flavour (the registered provider whose API it speaks) over the
        process's HTTP client."""
        settings = self.settings()
        return build_client(settings.flavour, self.http(), settings.client_settings())


class PostingResource(dg.ConfigurableResource):
    """The PMS that approved adjustments are posted to: ``adapter`` ``sql`` (default, the PMS database's
    ``ledger_entries``) or ``http`` (the posting API at ``base_url``, authenticated with ``api_key``)."""

    adapter: str | None = None  # RECON_POSTING_ADAPTER
    base_url: str | None = None  # RECON_PMS_POSTING_URL
    api_key: str | None = None  # RECON_PMS_API_KEY, an EnvVar: never in run config
    timeout_s: float = 10.0

    def build(self, engine: Engine) -> PostingAdapter:
        name = self.adapter or config.text_from_env(ADAPTER_VARIABLE, "sql")
        return build_adapter(name, engine, self.base_url, self.api_key, self.timeout_s)


def _from_env(name: str) -> dg.EnvVar | None:
    """An EnvVar (resolved when a run starts, never stored in run config) if the variable is set; unset,
    the field stays None and ``config.py`` applies the contract's default when a run starts."""
    return dg.EnvVar(name) if os.environ.get(name) else None


@dg.definitions
def resources() -> dg.Definitions:
    """The resources of the code location, bound when it loads (never at import)."""
    database_url = _from_env("RECON_DATABASE_URL")
    provider = ProviderResource(database_url=database_url, api_key=_from_env("RECON_PROVIDER_API_KEY"))
    recon_db = ReconDatabase(database_url=database_url)
    posting = PostingResource(
        adapter=_from_env(ADAPTER_VARIABLE),
        base_url=_from_env("RECON_PMS_POSTING_URL"),
        api_key=_from_env("RECON_PMS_API_KEY"),
    )
    return dg.Definitions(resources={"recon_db": recon_db, "provider": provider, "posting": posting})
