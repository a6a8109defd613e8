"""Jobs over the reconciliation assets."""

from __future__ import annotations

import dagster as dg

from recon_pipeline.defs.assets import GROUP
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.defs.partitions import property_night_partitions

reconcile_night_job = dg.define_asset_job(
    "reconcile_night",
    selection=dg.AssetSelection.groups(GROUP),
    partitions_def=property_night_partitions,
    description="Reconcile one property-night: pull, diff, write adjustments and discrepancies.",
    tags={PROVIDER_BOUND_TAG: "true"},
)
