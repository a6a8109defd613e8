"""Jobs over the reconciliation assets."""

from __future__ import annotations

import dagster as dg

from recon_pipeline.config import positive_int_from_env
from recon_pipeline.defs.assets import GROUP
from recon_pipeline.defs.batches import JOB_NAME
from recon_pipeline.defs.checks import finding_checks
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.defs.partitions import night_partitions

reconcile_night_job = dg.define_asset_job(
    JOB_NAME,
    # The batch's own checks, not the SLO check over every property (slo_checks_job runs that).
    selection=dg.AssetSelection.groups(GROUP).without_checks()
    | dg.AssetSelection.checks(*finding_checks),
    partitions_def=night_partitions,
    description="Reconcile a batch of properties of one night (run config `ops.reconcile_batch.config."
    "properties`): pull, diff, write adjustments and findings, summarise. Launched with no properties, "
    "the run queues the night's batches as runs of their own, as the nightly schedule does.",
    # max_runtime: run monitoring fails a run whose worker died (it would hold its pool slot for ever).
    tags={
        PROVIDER_BOUND_TAG: "true",
        "dagster/max_runtime": str(positive_int_from_env("RECON_RUN_MAX_RUNTIME_S", 3600)),
    },
)
