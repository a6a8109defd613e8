"""Jobs over the reconciliation assets."""

from __future__ import annotations

import dagster as dg

from recon_pipeline.config import positive_int_from_env
from recon_pipeline.defs.assets import GROUP
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.defs.partitions import night_partitions

reconcile_night_job = dg.define_asset_job(
    "reconcile_night",
    selection=dg.AssetSelection.groups(GROUP),
    partitions_def=night_partitions,
    description="Reconcile a batch of properties of one night (run config `ops.reconcile_batch.config."
    "properties`; empty: every property): pull, diff, write adjustments and findings, summarise.",
    # max_runtime: run monitoring fails a run whose worker died (it would hold its pool slot for ever).
    tags={
        PROVIDER_BOUND_TAG: "true",
        "dagster/max_runtime": str(positive_int_from_env("RECON_RUN_MAX_RUNTIME_S", 3600)),
    },
)
