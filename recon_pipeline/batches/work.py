"""Reconcile a batch of properties of one night: the work a ``reconcile_night`` run does, without Dagster.

A batch goes through named steps, each in a module of its own: **read** the targets and the PMS input
(``read.py``), **pull** each provider account's window (``pull.py``), **compare** (pure: the ledgers and
captured payment orders as one frame each, then the matcher, run once over the chunk; ``compare.py``),
**look up** by id what the comparison left loose (``look_up.py``), **conclude** (pure: the diff, run once
over the chunk, then every finding, the orphaned captured payments, the proposals, the takings;
``conclude.py``), and **write** the adjustments, the findings, the matches, the provider's records they
name and the nights' takings in one transaction for the chunk, each table's rows in set-based statements,
so that a finding clears in the commit that withdraws its proposal (``write.py``; the rule:
``reconcile/lifecycle.py``; the crash window's checkpoints around its commit). The batch is read once; the
rest runs over chunks of up to ``DEFAULT_CHUNK_SIZE`` property-nights, each pulled while the one before it
is computed, so the provider's rate, which the deployment's runs share, is not left idle while a run
computes. What the steps hand each other is in ``property_nights.py``. A step run at once over a chunk
that one night's input breaks is run night by night (``at_once.py``), so that night fails alone. Every
result lands in the reconciliation database; the caller gets counts and a report to summarise, nothing
another host must read from this one's disk.

Properties that share a provider account and the night window (the platform account, attributed by
metadata) are pulled **once** and the pull is split by attribution; the account groups of a batch are
worked on by a bounded thread pool over one process-wide provider client, whose rate bound is the
deployment's. One property failing (a bad ``properties`` row, an incomplete pull, a database error) fails
that property alone, with a one-line error naming it; the rest of the batch still reconciles. A property
whose pull the provider refused for good (``errors.is_permanent``) is kept apart (``BatchResult.permanent``)
so that a batch no retry can change is not retried.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine

from recon_pipeline.batches.collector import fewer_collections
from recon_pipeline.batches.compare import compare
from recon_pipeline.batches.conclude import conclude_all
from recon_pipeline.batches.look_up import look_up_all
from recon_pipeline.batches.property_nights import NightInput, RunScope, Target
from recon_pipeline.batches.pull import pull_all, pull_chunks
from recon_pipeline.batches.read import read_pms_input, read_targets
from recon_pipeline.batches.write import PropertyNightResult, write
from recon_pipeline.providers.errors import is_permanent
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.storage.night_outcomes import FAILED, SUCCEEDED, PropertyOutcome, record_outcomes

logger = logging.getLogger(__name__)

DEFAULT_WORKERS = 8
# Property-nights computed at once while the next chunk's pulls wait on the provider's rate: a batch's
# steps over the provider (pull, look up) and over the CPU (compare, conclude, write) overlap, so the rate
# shared by the deployment's runs is not left idle while they compute; the batch's last ones come in
# smaller chunks (``pull_chunks``), whose computing no pull overlaps (benchmarks/results.md).
DEFAULT_CHUNK_SIZE = 100
FINDING_COUNTS = ("new", "unchanged", "cleared", "reopened")


@dataclass(frozen=True)
class BatchRequest:
    """What one run reconciles: a night and the properties (all valid ones of the table when empty)."""

    night: str
    property_ids: tuple[str, ...] = ()
    batch_key: str | None = None
    orphan_grace: timedelta = timedelta(minutes=60)
    workers: int = DEFAULT_WORKERS
    chunk_size: int = DEFAULT_CHUNK_SIZE


@dataclass
class BatchResult:
    """The batch's outcome per property, and the results of those that succeeded."""

    outcomes: list[PropertyOutcome] = field(default_factory=list)
    results: list[PropertyNightResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # invalid properties rows, when the batch is "all"
    unrunnable: list[str] = field(default_factory=list)  # named properties unknown or with an invalid row
    permanent: list[str] = field(default_factory=list)  # properties the provider refused for good

    @property
    def failed(self) -> list[PropertyOutcome]:
        return [o for o in self.outcomes if not o.succeeded]

    @property
    def retryable(self) -> bool:
        """Whether a retry could succeed where this attempt failed: some property failed on its way
        (provider unavailable, database), not only on its ``properties`` row or on a request the provider
        refused for good (a permanent 4xx), which no retry changes."""
        final = {*self.unrunnable, *self.permanent}
        return any(o.property_id not in final for o in self.failed)

    def total(self, part: str, name: str) -> int:
        """A count summed over the batch: ``part`` is "adjustments" or "findings"."""
        return sum(getattr(result, part)[name] for result in self.results)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text}"


def _outcome(
    request: BatchRequest,
    run_id: str,
    property_id: str,
    started: datetime,
    finished: datetime,
    result: PropertyNightResult | str,
) -> PropertyOutcome:
    """The property's ``night_reconciliations`` row: succeeded with its counts, or failed with ``result``,
    its one-line error."""
    if isinstance(result, str):
        return PropertyOutcome(
            property_id, request.night, run_id, request.batch_key, FAILED, started, finished, result
        )
    return PropertyOutcome(
        property_id,
        request.night,
        run_id,
        request.batch_key,
        SUCCEEDED,
        started,
        finished,
        findings=len(result.report.findings),
        adjustments_proposed=result.proposed,
    )


@fewer_collections()  # a batch's many short-lived objects: collector.py
def reconcile_batch(
    engine: Engine,
    client: ProviderClient,
    request: BatchRequest,
    run_id: str,
    progress: Callable[[str], None] = logger.info,
) -> BatchResult:
    """Reconcile the batch, record each property's outcome (``night_reconciliations``), and return them.

    Never raises for one property's failure: the caller decides what a failed property does to the run.

    The PMS input of the whole batch (ledger, captured payment orders) is read once, before the first
    pull, rather than as each property's turn comes (up to a few minutes later): every property of the
    batch is recorded as started at that read, so a late event marked after it, which may be missing from
    what a property reconciled, still makes the stale-night sensor re-run that night. Findings stay true
    as of the read, as they did as of each property's own read."""
    with engine.connect() as connection:
        targets, errors, skipped = read_targets(connection, request.night, request.property_ids)
    batch = BatchResult(skipped=skipped, unrunnable=list(errors))
    started = datetime.now(UTC)
    for property_id, error in errors.items():
        batch.outcomes.append(_outcome(request, run_id, property_id, started, started, error))
    pms = read_pms_input(engine, targets, request.night)  # its error, should the database fail the read
    run = RunScope(request.night, run_id, request.orphan_grace)
    workers = max(1, request.workers)

    def record(target: Target, outcome: PropertyNightResult | BaseException) -> None:
        property_id = target.row.property_id
        if isinstance(outcome, PropertyNightResult):
            batch.results.append(outcome)
            said: PropertyNightResult | str = outcome
        else:
            said = f"property {property_id} night {request.night}: {_one_line(outcome)}"
            if is_permanent(outcome):
                batch.permanent.append(property_id)
        batch.outcomes.append(_outcome(request, run_id, property_id, started, datetime.now(UTC), said))
        reconciled = len(batch.outcomes) - len(errors)
        progress(f"{reconciled}/{len(targets)} properties of {request.night} reconciled")

    def pulled(chunk: list[Target]) -> list[tuple[Target, NightInput | BaseException]]:
        return pull_all(engine, client, chunk, pms, workers)

    def reconciled(chunk: list[tuple[Target, NightInput | BaseException]]) -> None:
        inputs: list[NightInput] = []
        for target, night_input in chunk:
            if isinstance(night_input, BaseException):
                record(target, night_input)
            else:
                inputs.append(night_input)
        compared = compare(inputs)
        found, states = look_up_all(engine, client, inputs, compared, workers)
        concluded = conclude_all(inputs, found, states, run)
        ready = [(n, c) for n, c in zip(inputs, concluded, strict=True) if not isinstance(c, BaseException)]
        written = iter(write(engine, client, ready, run))
        for night, outcome in zip(inputs, concluded, strict=True):
            record(night.target, outcome if isinstance(outcome, BaseException) else next(written))

    # The chunks are pulled one after another, ahead of the computing, which takes each as it comes in.
    ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recon-pull-ahead")
    try:
        for pulling in [ahead.submit(pulled, chunk) for chunk in pull_chunks(targets, request.chunk_size)]:
            reconciled(pulling.result())
    finally:
        ahead.shutdown(cancel_futures=True)
    with engine.begin() as connection:
        record_outcomes(connection, batch.outcomes)
    return batch
