"""Which posting adapter a deployment uses (``RECON_POSTING_ADAPTER``: ``sql``, the default, or ``http``),
built when a run starts; the ``http`` adapter is imported only when chosen."""

from __future__ import annotations

from typing import Final

from sqlalchemy import Engine

from recon_pipeline.errors import ConfigError
from recon_pipeline.postings.adapter import PostingAdapter
from recon_pipeline.postings.sql_adapter import SqlPostingAdapter

ADAPTER_VARIABLE: Final = "RECON_POSTING_ADAPTER"
URL_VARIABLE: Final = "RECON_PMS_POSTING_URL"
KEY_VARIABLE: Final = "RECON_PMS_API_KEY"
ADAPTER_NAMES: Final = ("sql", "http")


def build_adapter(
    name: str, engine: Engine, base_url: str | None, api_key: str | None, timeout_s: float
) -> PostingAdapter:
    """The adapter ``name``: ``sql`` books into ``engine``'s ``ledger_entries`` (the PMS tables live in the
    reconciliation database); ``http`` calls the PMS posting API at ``base_url`` with ``api_key``."""
    if name == "sql":
        return SqlPostingAdapter(engine)
    if name != "http":
        raise ConfigError(f"{ADAPTER_VARIABLE} must be one of {', '.join(ADAPTER_NAMES)}, not {name[:40]!r}")
    if not base_url:
        raise ConfigError(f"{URL_VARIABLE} must name the PMS posting API when {ADAPTER_VARIABLE}=http")
    if not api_key:
        raise ConfigError(f"{KEY_VARIABLE} must be set when {ADAPTER_VARIABLE}=http")
    from recon_pipeline.postings.http_adapter import HttpPostingAdapter

    return HttpPostingAdapter(base_url, api_key, timeout_s)
