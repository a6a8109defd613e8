"""Links from elsewhere (Dagster's asset metadata) to the review desk's pages of a night.

Pure URL building over RECON_REVIEW_BASE_URL, read when a run starts rather than at import: the address of
a deployment's desk is the deployment's business, and with it unset nothing links to a desk at all. The
query names are the nights overview's (``night_from``, ``night_to``), a contract with ``pages/nights``.
"""

from __future__ import annotations

import os
from typing import Final
from urllib.parse import quote, urlencode

import httpx

from recon_pipeline.config import ConfigError

BASE_URL_ENV: Final = "RECON_REVIEW_BASE_URL"


def review_base_url() -> str | None:
    """RECON_REVIEW_BASE_URL, validated and without a trailing slash; None when unset or empty."""
    raw = os.environ.get(BASE_URL_ENV, "").strip()
    return parse_base_url(raw) if raw else None


def parse_base_url(raw: str) -> str:
    """An http(s) URL with a host and no credentials, query or fragment (links append a path and their
    own query). The value is not repeated in the error: a URL may carry credentials."""
    try:
        url = httpx.URL(raw)
    except httpx.InvalidURL:
        raise ConfigError(f"{BASE_URL_ENV} is not a valid URL") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(f"{BASE_URL_ENV} must be an http:// or https:// URL with a host")
    if url.userinfo or url.query or url.fragment or "?" in raw or "#" in raw:
        raise ConfigError(f"{BASE_URL_ENV} must not carry credentials, a query or a fragment")
    return raw.rstrip("/")


def nights_link(base_url: str, night: str) -> str:
    """The nights overview narrowed to one night ('YYYY-MM-DD'): every property of it the reader may see."""
    query = urlencode({"night_from": night, "night_to": night})
    return f"{base_url}/nights?{query}"


def night_link(base_url: str, property_id: str, night: str) -> str:
    """One property-night's page."""
    return f"{base_url}/nights/{quote(property_id, safe='')}/{quote(night, safe='')}"
