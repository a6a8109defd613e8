"""The code location ``benchmarks/ui_partitions.py`` serves to the webserver: the reconciliation assets'
partitioning in both designs, over the nights the benchmark seeded (``RECON_UI_BENCH_LAST_NIGHT``,
``RECON_UI_BENCH_NIGHTS``).

- ``by_night/*``: the new design, one daily partition per night (``adjustments`` and ``findings``, as the
  ``reconcile_batch`` multi-asset materializes them once per batch run of the night);
- ``by_property_night/findings``: the old design, property (dynamic) × night.

They are asset specs (the benchmark records their materializations without runs): what the asset page
costs depends on the partitions and the event log, not on the code that would materialize them.
"""

from __future__ import annotations

import os
from datetime import date, timedelta

import dagster as dg

PROPERTY_DIMENSION = "property"  # the old design's dynamic dimension, as it was named
NEW_ASSETS = (dg.AssetKey(["by_night", "adjustments"]), dg.AssetKey(["by_night", "findings"]))
OLD_ASSET = dg.AssetKey(["by_property_night", "findings"])


def bench_nights() -> tuple[date, int]:
    """The last night seeded and how many nights end there (the environment the benchmark sets)."""
    last = date.fromisoformat(os.environ.get("RECON_UI_BENCH_LAST_NIGHT", "2026-11-30"))
    return last, int(os.environ.get("RECON_UI_BENCH_NIGHTS", "365"))


def night_partitions() -> dg.DailyPartitionsDefinition:
    """Exactly the seeded nights: ``count`` daily partitions ending at ``last``."""
    last, count = bench_nights()
    first = last - timedelta(days=count - 1)
    return dg.DailyPartitionsDefinition(
        start_date=first.isoformat(), end_date=(last + timedelta(days=1)).isoformat()
    )


def property_night_partitions() -> dg.MultiPartitionsDefinition:
    return dg.MultiPartitionsDefinition(
        {
            "night": night_partitions(),
            PROPERTY_DIMENSION: dg.DynamicPartitionsDefinition(name=PROPERTY_DIMENSION),
        }
    )


defs = dg.Definitions(
    assets=[
        *(dg.AssetSpec(key, partitions_def=night_partitions(), group_name="by_night") for key in NEW_ASSETS),
        dg.AssetSpec(OLD_ASSET, partitions_def=property_night_partitions(), group_name="by_property_night"),
    ]
)
