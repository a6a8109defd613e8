"""The reconciliation assets of one night, materialized by runs that each reconcile a batch of properties
(``recon_pipeline.batches``): a thin wrapper over ``reconcile_batch``, which does the work and writes every
result to the reconciliation database. Nothing passes between steps, so no IO manager stores anything on
a run worker's disk, and any executor (in-process, multiprocess, Celery, Kubernetes) runs it unchanged.

A run launched with no properties (the UI's materialize or backfill of nights) queues the night's batch
runs instead (``defs/fanout.py``) and materializes the assets with the night's figures so far.

One step materializes the night's three assets for the batch's properties:
- ``adjustments``: proposed ledger corrections that follow the ledger (inserted once per business key,
  stale proposals withdrawn or superseded, approved/posted/rejected rows never touched);
- ``findings``: the night's findings in ``discrepancies`` (those no longer seen cleared);
- ``discrepancy_report``: the batch's summary in the UI (counts and amounts per category, per-property
  results); report files are rendered on demand from the tables, never in the nightly path.
Each also carries the night's figures summed over every batch so far (``night/…``, from
``night_reconciliations``); the ``night_reconciled`` check says whether the night is whole.

With RECON_REVIEW_BASE_URL set, each materialization links to the night in the review desk
(``review_desk``), and the per-property results link each property's night there.

Each property's outcome (succeeded with its counts, or failed with a one-line error) is kept in
``night_reconciliations``. A property that failed fails the run after every other property of the batch
was reconciled and committed, naming it; its re-execution is idempotent. When no failure of the batch can
change on a retry (the provider refused a request for good, a bad ``properties`` row), neither the step
nor the run is retried.
"""

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import dagster as dg
from sqlalchemy import Engine

from recon_pipeline.batches.work import FINDING_COUNTS, BatchRequest, BatchResult, reconcile_batch
from recon_pipeline.defs.batches import (
    BATCH_OP,
    BATCH_TAG,
    NIGHT_TAG,
    PROPERTIES_TAG,
    QUEUED_BATCHES_TAG,
    BatchConfig,
)
from recon_pipeline.defs.concurrency import (
    PROVIDER_BOUND_TAG,
    PROVIDER_POOL,
    failing_once_on_config_error,
    provider_step_retry_policy,
    refuse_run_retries,
)
from recon_pipeline.defs.fanout import night_batches, queue_batches, queues_runs
from recon_pipeline.defs.partitions import night_partitions, partition_night
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.ledger.queries import list_properties
from recon_pipeline.properties import split_valid_properties
from recon_pipeline.reconcile.lifecycle import ADJUSTMENT_COUNTS
from recon_pipeline.reconcile.report import combined_report, markdown_table
from recon_pipeline.review.links import BASE_URL_ENV, night_link, nights_link, web_root_from_env
from recon_pipeline.storage.night_outcomes import NightTotals, night_totals

GROUP = "reconciliation"
PROPERTIES_LISTED = 250  # per-property rows shown in the report's metadata (a batch is ≤ 100 by default)

ADJUSTMENTS = dg.AssetKey("adjustments")
FINDINGS = dg.AssetKey("findings")
DISCREPANCY_REPORT = dg.AssetKey("discrepancy_report")


def _night_specs() -> list[dg.AssetSpec]:
    """The three assets one batch step materializes (built here, not at module level: the defs loader
    would take a module-level spec for an asset of its own).

    No dependencies between them: one step writes all three in order, and with internal dependencies
    Dagster 1.13's GraphQL refuses a backfill of the assets from the asset graph ("Targeted subset must
    match between every key in a non-subsettable multi-asset"; ``test_ui_backfill.py``)."""

    def spec(key: dg.AssetKey, description: str) -> dg.AssetSpec:
        return dg.AssetSpec(
            key, group_name=GROUP, kinds={"sql"}, partitions_def=night_partitions, description=description
        )

    return [
        spec(
            ADJUSTMENTS, "Proposed ledger corrections of the night, per business key (table `adjustments`)."
        ),
        spec(FINDINGS, "The night's findings (table `discrepancies`); those no longer seen are cleared."),
        spec(
            DISCREPANCY_REPORT,
            "The batch's summary: findings per category and currency, and each property's result. "
            "Files on demand: `recon report night`.",
        ),
    ]


def _per_property_markdown(batch: BatchResult, night: str, desk_url: str | None) -> str:
    """Each property's result; with a review desk (RECON_REVIEW_BASE_URL), its id links to its night there."""
    by_id = {result.property_row.property_id: result for result in batch.results}
    rows = []
    for outcome in sorted(batch.outcomes, key=lambda o: (o.succeeded, o.property_id))[:PROPERTIES_LISTED]:
        result = by_id.get(outcome.property_id)
        name = outcome.property_id
        if desk_url is not None:
            name = f"[{name}]({night_link(desk_url, outcome.property_id, night)})"
        if result is None:
            rows.append([name, "failed", "", "", "", outcome.error or ""])
        else:
            window = f"{result.window.start:%m-%d %H:%M}–{result.window.end:%m-%d %H:%M} UTC"
            rows.append([name, "ok", window, str(result.pulled), str(len(result.report.findings)), ""])
    more = len(batch.outcomes) - PROPERTIES_LISTED
    table = markdown_table(["property", "result", "window", "pulled", "findings", "error"], rows)
    return table + (f"\n\n_and {more} more in `night_reconciliations`._" if more > 0 else "")


def _tag_run(context: dg.AssetExecutionContext, tags: dict[str, str]) -> None:
    """Add to the run the tags it was launched without (a run from the UI carries none of ours)."""
    missing = {key: value for key, value in tags.items() if context.run.tags.get(key) != value}
    if missing:
        context.instance.add_run_tags(context.run_id, missing)


def _night_metadata(totals: NightTotals, properties: int) -> "dict[str, dg.RawMetadataValue]":
    """The night's figures over every batch that reconciled it (``night_reconciliations``)."""
    return {
        "night/properties_reconciled": totals.succeeded,
        "night/properties_failed": totals.failed,
        "night/properties_valid": properties,
        "night/findings": totals.findings,
        "night/adjustments_proposed": totals.adjustments_proposed,
    }


def _queue_night(
    context: dg.AssetExecutionContext, engine: Engine, night: str
) -> Iterator[dg.MaterializeResult]:
    """A night run without properties on a queued instance: queue the night's batch runs (``fanout``)."""
    batches = night_batches(engine, night)
    run_ids = queue_batches(context, batches)
    properties = sum(len(batch.property_ids) for batch in batches)
    _tag_run(context, {QUEUED_BATCHES_TAG: str(len(batches)), PROPERTIES_TAG: str(properties)})
    context.log.info(f"queued {len(run_ids)} batch runs of {len(batches)} for {properties} properties")
    with engine.connect() as connection:
        totals = night_totals(connection, night)
    metadata: dict[str, dg.RawMetadataValue] = {
        **_night_metadata(totals, properties),
        "batches_queued": len(batches),
        "batch": "queued",
    }
    for key in (ADJUSTMENTS, FINDINGS, DISCREPANCY_REPORT):
        yield dg.MaterializeResult(asset_key=key, metadata=metadata)


@dg.multi_asset(
    specs=_night_specs(),
    name=BATCH_OP,
    partitions_def=night_partitions,
    pool=PROVIDER_POOL,
    retry_policy=provider_step_retry_policy(),
)
def reconcile_batch_assets(
    context: dg.AssetExecutionContext,
    config: BatchConfig,
    recon_db: ReconDatabase,
    provider: ProviderResource,
) -> Iterator[dg.MaterializeResult]:
    """Reconcile the run's batch of properties for its night and report each asset's part of it; a run
    named no properties on a queued instance queues the night's batches instead (``fanout``)."""
    night = partition_night(context.partition_key)
    _tag_run(context, {NIGHT_TAG: night, PROVIDER_BOUND_TAG: "true"})
    # Before any work: a bad setting fails once, never retried, naming the setting.
    with failing_once_on_config_error(context):
        desk_url = web_root_from_env(BASE_URL_ENV)
        engine = recon_db.engine()
        if not config.properties and queues_runs(context):
            yield from _queue_night(context, engine, night)
            return
        client = provider.adapter()
    if config.properties:
        _tag_run(context, {PROPERTIES_TAG: str(len(config.properties))})
    request = BatchRequest(
        night=night,
        property_ids=tuple(config.properties),
        batch_key=context.run.tags.get(BATCH_TAG),
        orphan_grace=timedelta(minutes=config.orphan_grace_minutes),
        workers=config.workers,
    )
    batch = reconcile_batch(engine, client, request, context.run_id, context.log.info)
    if not config.properties:
        _tag_run(context, {PROPERTIES_TAG: str(len(batch.outcomes))})
    for skipped in batch.skipped:
        context.log.error(f"skipped: {skipped}")
    if batch.failed:
        failed = batch.failed
        if not batch.retryable:
            refuse_run_retries(context)
        raise dg.Failure(
            description=f"{len(failed)} of {len(batch.outcomes)} properties failed for night {night}; "
            f"first: {failed[0].error}",
            metadata={"failed": dg.MetadataValue.md(_per_property_markdown(batch, night, desk_url))},
            # A bad properties row or a request the provider refused for good fails every attempt: no
            # retry re-reconciles the batch (and re-sends the refused requests) for nothing.
            allow_retries=batch.retryable,
        )
    report = combined_report([result.report for result in batch.results])
    fees = Counter[str]()
    for result in batch.results:
        fees.update(result.fees_by_status)
    with engine.connect() as connection:
        totals = night_totals(connection, night)
        valid = len(split_valid_properties(list_properties(connection))[0])
    batch_metadata: dict[str, dg.RawMetadataValue] = {
        **_night_metadata(totals, valid),
        "properties": len(batch.results),
        "batch": request.batch_key or "all",
    }
    if desk_url is not None:
        batch_metadata["review_desk"] = dg.MetadataValue.url(nights_link(desk_url, night))
    yield dg.MaterializeResult(
        asset_key=ADJUSTMENTS,
        metadata={
            **batch_metadata,
            "proposed": sum(result.proposed for result in batch.results),
            **{name: batch.total("adjustments", name) for name in ADJUSTMENT_COUNTS},
        },
    )
    yield dg.MaterializeResult(
        asset_key=FINDINGS,
        metadata={
            **batch_metadata,
            "dagster/row_count": totals.findings,
            **{f"discrepancies_{name}": batch.total("findings", name) for name in FINDING_COUNTS},
        },
    )
    yield dg.MaterializeResult(
        asset_key=DISCREPANCY_REPORT,
        metadata={
            **batch_metadata,
            **report.as_metadata(),
            "dagster/row_count": totals.findings,
            "pulled": sum(result.pulled for result in batch.results),
            "unattributed": sum(result.unattributed for result in batch.results),
            "looked_up_by_id": sum(result.looked_up for result in batch.results),
            "found_in_other_nights": sum(result.found_elsewhere for result in batch.results),
            "invalid_entries": sum(result.invalid_entries for result in batch.results),
            **{f"fees/{status}": n for status, n in sorted(fees.items())},
            "totals": dg.MetadataValue.md(report.totals_markdown()),
            "takings": dg.MetadataValue.md(report.takings_markdown()),
            "categories": dg.MetadataValue.md(report.summary_markdown()),
            "top_discrepancies": dg.MetadataValue.md(report.top_findings_markdown()),
            "per_property": dg.MetadataValue.md(_per_property_markdown(batch, night, desk_url)),
        },
    )


reconciliation_assets = [reconcile_batch_assets]
