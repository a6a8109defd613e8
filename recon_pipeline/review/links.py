"""Links between the review desk and the Dagster UI, both ways (pure URL building).

- From Dagster's asset metadata to the desk's page of a night, under RECON_REVIEW_BASE_URL (read when a
  run starts). The query names are the nights overview's (``night_from``, ``night_to``), a contract with
  ``pages/nights``.
- From a finding on the desk to the Dagster UI, under RECON_DAGSTER_UI_URL (read when the desk starts):
  the run that last detected it and its asset's night partition. The desk does not import the Dagster
  definitions (that would load Dagster and read the partitions' first night when the desk starts); the
  asset names are repeated here and a test holds them equal to ``defs.assets.FINDINGS`` and
  ``defs.payouts.PAYOUTS``. A partition's key is its night (``YYYY-MM-DD``, ``defs.partitions``).

With either variable unset, nothing links that way at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, urlencode

import httpx

from recon_pipeline.categories import PAYOUT_CATEGORIES
from recon_pipeline.errors import ConfigError

BASE_URL_ENV: Final = "RECON_REVIEW_BASE_URL"
DAGSTER_UI_URL_ENV: Final = "RECON_DAGSTER_UI_URL"
FINDINGS_ASSET: Final = "findings"  # the night's reconciliation writes every category but the payouts'
PAYOUTS_ASSET: Final = "payouts"  # writes PAYOUT_CATEGORIES


def web_root_from_env(name: str) -> str | None:
    """The environment variable ``name`` as a web root (``parse_web_root``); None when unset or empty."""
    raw = os.environ.get(name, "").strip()
    return parse_web_root(raw, name) if raw else None


def parse_web_root(raw: str, name: str) -> str:
    """An http(s) URL with a host and no credentials, query or fragment (links append a path and their
    own query), without a trailing slash. The error names ``name`` but not the value: a URL may carry
    credentials."""
    try:
        url = httpx.URL(raw.strip())
    except httpx.InvalidURL:
        raise ConfigError(f"{name} is not a valid URL") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(f"{name} must be an http:// or https:// URL with a host")
    if url.userinfo or url.query or url.fragment or "?" in raw or "#" in raw:
        raise ConfigError(f"{name} must not carry credentials, a query or a fragment")
    return raw.strip().rstrip("/")


def nights_link(base_url: str, night: str) -> str:
    """The nights overview narrowed to one night ('YYYY-MM-DD'): every property of it the reader may see."""
    query = urlencode({"night_from": night, "night_to": night})
    return f"{base_url}/nights?{query}"


def night_link(base_url: str, property_id: str, night: str) -> str:
    """One property-night's page."""
    return f"{base_url}/nights/{quote(property_id, safe='')}/{quote(night, safe='')}"


@dataclass(frozen=True)
class DagsterLinks:
    """The Dagster UI pages of one finding: its run (None when no run is recorded) and its partition."""

    run: str | None
    partition: str


def finding_links(dagster_ui_url: str | None, finding: Mapping[Any, Any]) -> DagsterLinks | None:
    """The finding's run and partition pages in the Dagster UI; None without a Dagster UI to link to."""
    if dagster_ui_url is None:
        return None
    asset = PAYOUTS_ASSET if finding["category"] in PAYOUT_CATEGORIES else FINDINGS_ASSET
    query = urlencode({"view": "partitions", "partition": finding["night"]})
    run_id = finding["run_id"]
    return DagsterLinks(
        run=None if not run_id else f"{dagster_ui_url}/runs/{quote(str(run_id), safe='')}",
        partition=f"{dagster_ui_url}/assets/{quote(asset)}?{query}",
    )
