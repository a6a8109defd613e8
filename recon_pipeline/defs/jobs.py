"""Jobs over the reconciliation assets."""

from __future__ import annotations

import dagster as dg

from recon_pipeline.defs.assets import GROUP
from recon_pipeline.defs.partitions import property_night_partitions

# Runs with this tag call the provider; dagster.yaml caps how many run at once.
PROVIDER_BOUND_TAG = "recon/provider_bound"

reconcile_night_job = dg.define_asset_job(
    "reconcile_night",
    selection=dg.AssetSelection.groups(GROUP),
    partitions_def=property_night_partitions,
    description="Reconcile one property-night: pull, diff, write adjustments and discrepancies.",
    tags={PROVIDER_BOUND_TAG: "true"},
)
