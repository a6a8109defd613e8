"""How every fan-out asks for work: one ``reconcile_night`` run per batch of a night's properties.

The nightly schedule, the stale-night sensor and ``recon reconcile-night`` all plan with
``recon_pipeline.batches.plan`` and request runs through :func:`batch_run_request`, so a night is a few
dozen runs whoever asks (the schedule's window by window as they close, the others' windows packed). The
batch is the run config of the ``reconcile_batch`` op (so a re-execution from the UI reconciles the same
properties) and, for the eye and for run filters, tags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from recon_pipeline.batches.plan import DEFAULT_BATCH_SIZE, NightBatch
from recon_pipeline.config import positive_int_from_env

JOB_NAME = "reconcile_night"  # the job (defs/jobs.py) whose runs each reconcile one batch
BATCH_OP = "reconcile_batch"
NIGHT_TAG = "recon/night"
BATCH_TAG = "recon/batch"
PROPERTIES_TAG = "recon/properties"
# A night run launched without properties (the UI's materialize or backfill) queues the night's batches:
# it carries the number it queued, each batch run the id of the run that queued it.
QUEUED_BATCHES_TAG = "recon/queued_batches"
QUEUED_BY_TAG = "recon/queued_by"


def batch_size() -> int:
    """RECON_BATCH_SIZE: at most this many properties per run (a shared account's group may exceed it)."""
    return positive_int_from_env("RECON_BATCH_SIZE", DEFAULT_BATCH_SIZE)


class BatchConfig(dg.Config):
    """The properties this run reconciles for its night. Empty: every valid property of the table, in the
    night's batch runs that this run queues (``fanout``), or in this run when it runs in its caller's
    process."""

    properties: list[str] = []
    orphan_grace_minutes: int = 60
    workers: int = 8


def batch_run_config(property_ids: Sequence[str]) -> dict[str, Any]:
    """Run config of a ``reconcile_night`` run over ``property_ids``."""
    return {"ops": {BATCH_OP: {"config": {"properties": list(property_ids)}}}}


def batch_properties(run_config: Mapping[str, Any]) -> list[str]:
    """The properties a run's config names (empty: every property)."""
    config = run_config.get("ops", {}).get(BATCH_OP, {}).get("config", {})
    return list(config.get("properties", []))


def with_properties(run_config: Mapping[str, Any], property_ids: Sequence[str]) -> dict[str, Any]:
    """``run_config`` with its batch's properties set to ``property_ids`` (the rest of it kept)."""
    ops = dict(run_config.get("ops", {}))
    op = dict(ops.get(BATCH_OP, {}))
    op["config"] = {**op.get("config", {}), "properties": list(property_ids)}
    return {**run_config, "ops": {**ops, BATCH_OP: op}}


def batch_tags(batch: NightBatch) -> dict[str, str]:
    return {
        NIGHT_TAG: batch.night.isoformat(),
        BATCH_TAG: batch.key,
        PROPERTIES_TAG: str(len(batch.property_ids)),
    }


def batch_run_request(
    batch: NightBatch, run_key: str, tags: Mapping[str, str] | None = None
) -> dg.RunRequest:
    """The run that reconciles ``batch``: its night's partition, its properties in run config."""
    return dg.RunRequest(
        run_key=run_key,
        partition_key=batch.night.isoformat(),
        run_config=batch_run_config(batch.property_ids),
        tags={**batch_tags(batch), **(tags or {})},
    )
