"""A night run launched without properties (the UI's "Materialize" of a night, its backfill of nights, a
launchpad run with empty config) queues the night's batches, one run each, instead of reconciling every
property in one run: the schedule's batch size, tags and run-queue limits, the night's windows packed
together as for any night asked for whole (``batches/plan.py``).

The batch runs copy the launching run (its job, asset selection, code origin and snapshots) with the batch
in their run config, and are queued for the daemon like any run. Dagster has no public API to submit a run
from a run; ``instance.create_run`` and ``instance.submit_run`` are what its own sensor daemon calls.
A run executed in its caller's process (``materialize``, ``execute_in_process``), or on an instance
without a run queue, keeps the whole night in the one run.
"""

from __future__ import annotations

from datetime import date

import dagster as dg
from dagster._core.run_coordinator import QueuedRunCoordinator
from sqlalchemy import Engine

from recon_pipeline.batches.plan import NightBatch, plan_batches
from recon_pipeline.batches.submit import TRIGGER_TAG
from recon_pipeline.defs.batches import (
    BATCH_TAG,
    QUEUED_BY_TAG,
    batch_size,
    batch_tags,
    with_properties,
)
from recon_pipeline.defs.concurrency import PROVIDER_BOUND_TAG
from recon_pipeline.ledger.queries import list_properties
from recon_pipeline.properties import split_valid_properties

KEPT_TAG_PREFIXES = ("dagster/partition", "dagster/max_runtime", "recon/trigger")


def queues_runs(context: dg.AssetExecutionContext) -> bool:
    """Whether batch runs can be queued from this run: its instance queues runs for a daemon, and the run
    has a code origin a daemon can launch a copy from (a run of ``materialize`` or ``execute_in_process``
    has none: it reconciles the whole night itself)."""
    return context.run.remote_job_origin is not None and isinstance(
        context.instance.run_coordinator, QueuedRunCoordinator
    )


def night_batches(engine: Engine, night: str) -> list[NightBatch]:
    """The night's valid properties in batches, its windows packed together (the night asked for whole)."""
    with engine.connect() as connection:
        properties, _invalid = split_valid_properties(list_properties(connection))
    return plan_batches(properties, date.fromisoformat(night), batch_size(), one_window_each=False)


def queue_batches(context: dg.AssetExecutionContext, batches: list[NightBatch]) -> list[str]:
    """Create and queue one run per batch not already queued by this run or a retry of it; their ids."""
    instance, parent = context.instance, context.run
    root = parent.root_run_id or parent.run_id
    queued = {
        run.tags.get(BATCH_TAG) for run in instance.get_runs(dg.RunsFilter(tags={QUEUED_BY_TAG: root}))
    }
    job_snapshot = instance.get_job_snapshot(parent.job_snapshot_id) if parent.job_snapshot_id else None
    plan_snapshot = (
        instance.get_execution_plan_snapshot(parent.execution_plan_snapshot_id)
        if parent.execution_plan_snapshot_id
        else None
    )
    kept = {k: v for k, v in parent.tags.items() if k.startswith(KEPT_TAG_PREFIXES)}
    run_ids = []
    for batch in batches:
        if batch.key in queued:
            continue
        tags = {
            TRIGGER_TAG: "night_run",
            **kept,
            **batch_tags(batch),
            PROVIDER_BOUND_TAG: "true",
            QUEUED_BY_TAG: root,
        }
        run = instance.create_run(
            job_name=parent.job_name,
            run_id=None,
            run_config=with_properties(parent.run_config, batch.property_ids),
            status=None,
            tags=tags,
            root_run_id=None,
            parent_run_id=None,
            step_keys_to_execute=parent.step_keys_to_execute,
            execution_plan_snapshot=plan_snapshot,
            job_snapshot=job_snapshot,
            parent_job_snapshot=None,
            asset_selection=parent.asset_selection,
            asset_check_selection=parent.asset_check_selection,
            resolved_op_selection=parent.resolved_op_selection,
            op_selection=parent.op_selection,
            remote_job_origin=parent.remote_job_origin,
            job_code_origin=parent.job_code_origin,
            asset_graph=context.repository_def.asset_graph,
        )
        # The queued-run coordinator only records the run as queued; it reads no workspace.
        instance.submit_run(run.run_id, None)  # type: ignore[arg-type]
        run_ids.append(run.run_id)
    return run_ids
