"""Links from a finding to the Dagster UI: the run that last detected it and its asset's night partition.

The desk does not import the Dagster definitions (that would load Dagster and read the partitions' first
night when the desk starts); the asset names are repeated here and a test holds them equal to
``defs.assets.FINDINGS`` and ``defs.payouts.PAYOUTS``. A partition's key is its night (``YYYY-MM-DD``,
``defs.partitions``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from recon_pipeline.reconcile.categories import PAYOUT_CATEGORIES

FINDINGS_ASSET = "findings"  # the night's reconciliation writes every category but the payouts'
PAYOUTS_ASSET = "payouts"  # writes PAYOUT_CATEGORIES


@dataclass(frozen=True)
class DagsterLinks:
    """The Dagster UI pages of one finding: its run (None when no run is recorded) and its partition."""

    run: str | None
    partition: str


def parse_dagster_ui_url(text: str) -> str | None:
    """RECON_DAGSTER_UI_URL's value without a trailing slash; None when empty; ValueError unless http(s)."""
    cleaned = text.strip()
    if not cleaned:
        return None
    parts = urlsplit(cleaned)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(
            f"RECON_DAGSTER_UI_URL must be the Dagster UI's http(s) root, e.g. http://localhost:3000, "
            f"not {cleaned!r}"
        )
    return cleaned.rstrip("/")


def finding_links(base_url: str | None, finding: Mapping[Any, Any]) -> DagsterLinks | None:
    """The finding's run and partition pages under ``base_url``; None without a Dagster UI to link to."""
    if base_url is None:
        return None
    asset = PAYOUTS_ASSET if finding["category"] in PAYOUT_CATEGORIES else FINDINGS_ASSET
    query = urlencode({"view": "partitions", "partition": finding["night"]})
    run_id = finding["run_id"]
    return DagsterLinks(
        run=None if not run_id else f"{base_url}/runs/{quote(str(run_id), safe='')}",
        partition=f"{base_url}/assets/{quote(asset)}?{query}",
    )
