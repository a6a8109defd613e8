"""What ``recon reconcile-night`` submits and how it reports the wait: pure, no I/O and no Dagster.

The command picks the night's properties (every valid one of the table, or the ones named), plans them
into batches (``plan.plan_batches``) and submits one run per batch; while it waits it folds each batch's
run state into one progress line, and at the end into a summary naming the failed batches' runs and the
errors of their properties. The Dagster side (loading the code location, creating and submitting the
runs, reading their status) is ``recon_pipeline.batches.launch``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from recon_pipeline.batches.plan import NightBatch
from recon_pipeline.properties import InvalidPropertyError, PropertyRow, split_valid_properties

TRIGGER_TAG = "recon/trigger"
CLI_TRIGGER = "cli"

# A batch's state, from its latest run (a run the daemon retries is not over until its retry is).
QUEUED = "queued"
RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
STATES = (QUEUED, RUNNING, SUCCEEDED, FAILED)
DONE_STATES = (SUCCEEDED, FAILED)
LISTED = 5  # batches named in one line (a timeout's); the rest are counted


class UnknownPropertiesError(LookupError):
    """``--property`` named ids the ``properties`` table does not hold (one line naming them)."""

    def __init__(self, property_ids: Sequence[str]) -> None:
        self.property_ids = tuple(property_ids)
        super().__init__(f"no such property: {', '.join(self.property_ids)} (not in the properties table)")


@dataclass(frozen=True)
class Selection:
    """The night's properties: the valid rows to reconcile and one error per invalid row (skipped)."""

    valid: list[PropertyRow]
    invalid: list[InvalidPropertyError]


def select_properties(rows: Iterable[PropertyRow], wanted: Sequence[str] = ()) -> Selection:
    """The rows to reconcile: every row, or only those ``wanted`` (all of which must exist), split into
    valid and invalid; an invalid row is skipped by name rather than failing the night's other properties.

    Raises UnknownPropertiesError for a wanted id the table lacks, and LookupError when nothing valid is
    left: an empty batch would mean *every* property to the job, never what was asked."""
    rows = list(rows)
    if wanted:
        known = {row.property_id for row in rows}
        unknown = sorted({property_id for property_id in wanted if property_id not in known})
        if unknown:
            raise UnknownPropertiesError(unknown)
        named = set(wanted)
        rows = [row for row in rows if row.property_id in named]
    valid, invalid = split_valid_properties(rows)
    if not valid:
        what = "the named properties are" if wanted else "the properties table holds"
        raise LookupError(f"nothing to reconcile: {what} no valid property")
    return Selection(valid, invalid)


@dataclass(frozen=True)
class BatchRun:
    """A submitted batch and the state of its latest run (the original, or the daemon's retry of it)."""

    batch: NightBatch
    run_id: str
    state: str


@dataclass(frozen=True)
class Progress:
    """The submitted batches of one night, counted by state."""

    night: str
    runs: tuple[BatchRun, ...]

    def count(self, *states: str) -> int:
        return sum(1 for run in self.runs if run.state in states)

    def properties(self, *states: str) -> int:
        return sum(len(run.batch.property_ids) for run in self.runs if run.state in states)

    @property
    def done(self) -> bool:
        return self.count(*DONE_STATES) == len(self.runs)

    @property
    def succeeded(self) -> bool:
        return self.count(SUCCEEDED) == len(self.runs)

    @property
    def failed_runs(self) -> list[BatchRun]:
        return [run for run in self.runs if run.state == FAILED]

    @property
    def pending_runs(self) -> list[BatchRun]:
        return [run for run in self.runs if run.state not in DONE_STATES]

    def line(self) -> str:
        """``2026-11-30: 12/24 batches done (1,180/2,000 properties), 0 failed, 3 running, 9 queued``."""
        return (
            f"{self.night}: {self.count(*DONE_STATES)}/{len(self.runs)} batches done "
            f"({self.properties(*DONE_STATES):,}/{self.properties(*STATES):,} properties), "
            f"{self.count(FAILED)} failed, {self.count(RUNNING)} running, {self.count(QUEUED)} queued"
        )


def progress(night: str, runs: Iterable[BatchRun]) -> Progress:
    runs = tuple(runs)
    unknown = {run.state for run in runs if run.state not in STATES}
    if unknown:
        raise ValueError(f"unknown batch states: {sorted(unknown)}")
    return Progress(night, runs)


def failure_summary(
    failed: Sequence[BatchRun], errors: Mapping[str, str], reasons: Mapping[str, str]
) -> list[str]:
    """Lines naming each failed batch's run and why it failed (``reasons``: run id → the run's own
    failure reason), then the error of each of its properties that has one (``errors``: property id →
    the one-line error its night's outcome recorded)."""
    lines = []
    for run in failed:
        size = len(run.batch.property_ids)
        reason = f": {reasons[run.run_id]}" if run.run_id in reasons else ""
        lines.append(f"failed: run {run.run_id}, batch {run.batch.key} ({size:,} properties){reason}")
        lines += [f"  {p}: {errors[p]}" for p in run.batch.property_ids if p in errors]
    return lines


def pending_summary(pending: Sequence[BatchRun]) -> str:
    """One line naming the batches still not done (their runs and states): a timeout's reason."""
    named = [f"run {run.run_id} ({run.state}, batch {run.batch.key})" for run in pending[:LISTED]]
    more = len(pending) - LISTED
    return f"{len(pending)} batches not done: " + ", ".join(named) + (f" and {more} more" if more > 0 else "")
