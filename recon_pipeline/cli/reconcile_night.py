"""`recon reconcile-night`: submit a night's batches of properties to the Dagster instance, or run them
here (--in-process), and with --wait follow them to the end; its exit codes say how the night went."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from recon_pipeline.cli import args as cli_args
from recon_pipeline.cli.common import FAILED_EXIT, Commands, recon_database, reported

if TYPE_CHECKING:
    from dagster import DagsterInstance, RunRequest

    from recon_pipeline.batches.plan import NightBatch
    from recon_pipeline.batches.submit import BatchRun, Progress

MAX_BATCH_SIZE = 10_000
MAX_WAIT_S = 7 * 24 * 3600
WAIT_INTERVAL_S = 2.0  # between polls of the submitted runs
DEFAULT_WAIT_TIMEOUT_S = 6 * 3600
TIMED_OUT_EXIT = 3
DAEMON_GRACE_S = 30  # --wait: queued runs and no live daemon heartbeat for this long is exit 3
INTERRUPTED_EXIT = 130


def cmd_reconcile_night(args: argparse.Namespace) -> int:
    from recon_pipeline.batches import launch
    from recon_pipeline.batches.plan import plan_batches
    from recon_pipeline.batches.submit import CLI_TRIGGER, TRIGGER_TAG, select_properties
    from recon_pipeline.defs.batches import JOB_NAME, batch_run_request, batch_size
    from recon_pipeline.keys import parse_night
    from recon_pipeline.ledger.queries import list_properties

    launch.dagster_home()  # before the database: a missing instance is the likelier mistake
    size = args.batch_size or batch_size()
    with recon_database() as engine, engine.connect() as connection:
        selection = select_properties(list_properties(connection), args.property)
    batches = plan_batches(selection.valid, parse_night(args.night), size, one_window_each=False)
    requests = [batch_run_request(b, b.key, tags={TRIGGER_TAG: CLI_TRIGGER}) for b in batches]
    opened = launch.home_instance() if args.in_process else launch.queued_instance()
    with opened as instance:
        with launch.loaded_workspace(instance, args.workspace) as workspace:
            if args.in_process:  # the tags a submission would give (and the night checked as a partition)
                location = workspace.get_code_location(launch.LOCATION_NAME)
                job = launch.remote_job(location, JOB_NAME)
                tags = [launch.run_tags(location, job, request) for request in requests]
            else:
                run_ids = launch.submit_requests(instance, workspace, JOB_NAME, requests)
        how = "reconciling here" if args.in_process else "queued"
        print(
            f"{args.night}: {how} {len(batches)} runs of {JOB_NAME} for "
            f"{len(selection.valid):,} properties (batches of at most {size})",
            flush=True,
        )
        for invalid in selection.invalid:  # after the submission: a refusal above stays one line
            print(f"skipped: {invalid}", file=sys.stderr, flush=True)
        try:
            if args.in_process:
                return _reconcile_here(instance, args.night, list(zip(requests, tags, batches, strict=True)))
            for run_id, batch in zip(run_ids, batches, strict=True):
                print(f"  run {run_id}: batch {batch.key} ({len(batch.property_ids):,} properties)")
            if not args.wait:
                return 0
            daemon = f"dagster-daemon run -w {args.workspace or 'workspace.yaml'}"
            submitted = dict(zip(run_ids, batches, strict=True))
            return _wait_for_night(instance, args.night, submitted, args.timeout, daemon)
        except KeyboardInterrupt:  # the operator stops waiting, not the queued runs
            how = "stopped reconciling here" if args.in_process else "stopped waiting, the runs go on"
            print(f"error: interrupted: {how}", file=sys.stderr)
            return INTERRUPTED_EXIT


def _reconcile_here(
    instance: DagsterInstance, night: str, work: Sequence[tuple[RunRequest, Mapping[str, str], NightBatch]]
) -> int:
    """Run the batches one after another in this process, each a run of the job recorded in the instance,
    printing the progress line before and after each; the end as ``_wait_for_night``'s."""
    from recon_pipeline.batches import launch
    from recon_pipeline.batches.submit import QUEUED, RUNNING, BatchRun, progress
    from recon_pipeline.defs.batches import JOB_NAME

    done: list[BatchRun] = []
    for index, (request, tags, batch) in enumerate(work):
        pending = [BatchRun(b, "", QUEUED) for _r, _t, b in work[index + 1 :]]
        print(progress(night, [*done, BatchRun(batch, "", RUNNING), *pending]).line(), flush=True)
        run = launch.execute_here(instance, JOB_NAME, request.run_config, tags)
        # A failed run here is final for this command (the run-retry daemon, if any, may still re-run it).
        done.append(BatchRun(batch, run.run_id, launch.run_state(run, retries_enabled=False)))
        print(f"  run {run.run_id}: batch {batch.key} ({len(batch.property_ids):,} properties)", flush=True)
    state = progress(night, done)
    print(state.line(), flush=True)
    return _night_end(instance, state, daemon=None)


def _wait_for_night(
    instance: DagsterInstance, night: str, batches: dict[str, NightBatch], timeout_s: float, daemon: str
) -> int:
    """Poll the runs until every batch is done or ``timeout_s`` passed; progress lines on stdout as they
    change, then the failed batches' runs and their properties' errors. Exit 0, 1 (a batch failed) or 3
    (timed out, or runs still queued with no live daemon for ``DAEMON_GRACE_S``: ``daemon`` says what
    to start)."""
    import time

    from recon_pipeline.batches import launch
    from recon_pipeline.batches.submit import QUEUED, BatchRun, pending_summary, progress

    deadline = time.monotonic() + timeout_s
    retries = instance.run_retries_enabled
    shown = ""
    daemon_seen = time.monotonic()
    while True:  # bounded by the deadline
        latest = launch.latest_runs(instance, list(batches))
        state = progress(
            night,
            [
                BatchRun(batch, run.run_id, launch.run_state(run, retries))
                for batch, run in zip(batches.values(), latest, strict=True)
            ],
        )
        if state.line() != shown:
            shown = state.line()
            print(shown, flush=True)
        if state.done:
            break
        if launch.daemon_live(instance):
            daemon_seen = time.monotonic()
        elif state.count(QUEUED) and time.monotonic() - daemon_seen > DAEMON_GRACE_S:
            print(
                f"error: no dagster-daemon is running for the instance in DAGSTER_HOME (no live heartbeat in "
                f"{DAEMON_GRACE_S} s): the {state.count(QUEUED)} queued runs stay queued; start "
                f"`{daemon}` in the project folder (or `dagster dev`), or reconcile with --in-process",
                file=sys.stderr,
            )
            return TIMED_OUT_EXIT
        if time.monotonic() > deadline:
            pending = pending_summary(state.pending_runs)
            print(f"error: timed out after {timeout_s:g} s, the runs go on: {pending}", file=sys.stderr)
            return TIMED_OUT_EXIT
        time.sleep(WAIT_INTERVAL_S)
    return _night_end(instance, state, daemon)


def _night_end(instance: DagsterInstance, state: Progress, daemon: str | None) -> int:
    """Exit 0 when every batch succeeded; else name each failed run with its own failure reason (read
    from the instance; a daemon without the runs' code location says how to start one that has it) and
    its properties' errors, exit 1."""
    from recon_pipeline.batches import launch
    from recon_pipeline.batches.submit import failure_summary

    if state.succeeded:
        print(f"{state.night}: every batch succeeded")
        return 0
    reasons = {}
    for run in state.failed_runs:
        reason, location_missing = launch.run_failure(instance, run.run_id)
        if location_missing and daemon:
            reason += (
                f" (the daemon has no code location {launch.LOCATION_NAME!r}: start it in the project "
                f"folder with `{daemon}`)"
            )
        reasons[run.run_id] = reason
    errors = _property_errors(state.night, state.failed_runs)
    for line in failure_summary(state.failed_runs, errors, reasons):
        print(line)
    return FAILED_EXIT


def _property_errors(night: str, failed: Sequence[BatchRun]) -> dict[str, str]:
    """The one-line error each failed property's outcome recorded (``night_reconciliations``); none, with
    a note, when the database cannot say (the runs' own logs still can)."""
    from sqlalchemy.exc import SQLAlchemyError

    from recon_pipeline.storage.night_outcomes import FAILED, load_outcomes

    wanted = [p for run in failed for p in run.batch.property_ids]
    try:
        with recon_database() as engine, engine.connect() as connection:
            outcomes = load_outcomes(connection, night, wanted)
    except SQLAlchemyError as error:
        print(f"(no per-property errors: {reported(error) or error})", file=sys.stderr)
        return {}
    return {p: o.error or "failed" for p, o in outcomes.items() if o.status == FAILED}


def add_commands(commands: Commands) -> None:
    """Add `recon reconcile-night`."""
    reconcile_help = (
        "submit a night for every (or the named) property to the Dagster instance in DAGSTER_HOME: "
        "one queued run per batch of properties, which dagster-daemon launches"
    )
    reconcile = commands.add_parser(
        "reconcile-night",
        help=reconcile_help,
        description=reconcile_help[0].upper() + reconcile_help[1:] + ". Needs RECON_DATABASE_URL (the "
        "properties), DAGSTER_HOME (an instance with the QueuedRunCoordinator) and a running daemon "
        "(`dagster-daemon run -w workspace.yaml` in the project folder), or --in-process.",
    )
    reconcile.add_argument("night", type=cli_args.night, help="the night, YYYY-MM-DD")
    reconcile.add_argument(
        "--property",
        type=cli_args.property_id,
        action="append",
        default=[],
        metavar="ID",
        help="only this property (repeatable; default: every valid property of the properties table)",
    )
    reconcile.add_argument(
        "--batch-size",
        type=cli_args.count(MAX_BATCH_SIZE),
        metavar="N",
        help="at most this many properties per run (RECON_BATCH_SIZE, else 500)",
    )
    reconcile.add_argument(
        "--workspace",
        type=Path,
        metavar="FILE",
        help="a workspace.yaml to load the code location from (deploy/workspace.yaml: the code server); "
        "default: the recon_pipeline.definitions module, in this process",
    )
    how = reconcile.add_mutually_exclusive_group()
    how.add_argument(
        "--wait",
        action="store_true",
        help="wait until every run is done, printing progress: exit 0 iff all succeeded, 1 if any failed; "
        f"exit 3 when runs stay queued with no live dagster-daemon for {DAEMON_GRACE_S} s",
    )
    how.add_argument(
        "--in-process",
        action="store_true",
        help="no daemon: run the batches one after another in this process (same runs in the instance, "
        "same progress and exit codes as --wait)",
    )
    reconcile.add_argument(
        "--timeout",
        type=cli_args.count(MAX_WAIT_S),
        default=DEFAULT_WAIT_TIMEOUT_S,
        metavar="SECONDS",
        help="with --wait: give up after this long (the runs go on), exit 3 naming what is not done "
        f"({DEFAULT_WAIT_TIMEOUT_S})",
    )
    reconcile.set_defaults(handler=cmd_reconcile_night)
