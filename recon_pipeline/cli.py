"""The `recon` command line. Every command exits non-zero with a one-line reason on bad input.

Arguments are checked by the types in ``cli_args``; everything a command raises that the user can act on
goes through ``main``'s one reporting path: ``error: <reason>`` on stderr, exit 2 for bad input or
configuration, 1 for a database that cannot be used. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from recon_pipeline import cli_args, config
from recon_pipeline.errors import ServiceUnavailable
from recon_pipeline.providers import PROVIDER_NAMES
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR, simulator_flavour

if TYPE_CHECKING:
    from dagster import DagsterInstance, RunRequest
    from sqlalchemy import Connection, Engine

    from recon_pipeline.batches.plan import NightBatch
    from recon_pipeline.batches.submit import BatchRun, Progress
    from recon_pipeline.review.store import Threshold

Handler = Callable[[argparse.Namespace], int]
BAD_INPUT_EXIT = 2
FAILED_EXIT = 1
MAX_BOOKINGS = 1_000_000  # per property and night: beyond it the demo world would not fit in memory
MAX_BODY_BYTES = 64 * 2**20
MAX_WORKERS = 64
MAX_BATCH_SIZE = 10_000
MAX_WAIT_S = 7 * 24 * 3600
WAIT_INTERVAL_S = 2.0  # between polls of the submitted runs
DEFAULT_WAIT_TIMEOUT_S = 6 * 3600
TIMED_OUT_EXIT = 3
DAEMON_GRACE_S = 30  # --wait: queued runs and no live daemon heartbeat for this long is exit 3
INTERRUPTED_EXIT = 130


def cmd_db_init(_args: argparse.Namespace) -> int:
    from recon_pipeline.db import migrations

    with _recon_database() as engine:
        done = migrations.upgrade(engine)
    if done.changed:
        print(f"upgraded the database from revision {done.before or '(none)'} to {done.after}")
    else:
        print(f"the database is at revision {done.after}, the newest")
    return 0


def cmd_db_revision(args: argparse.Namespace) -> int:
    from recon_pipeline.db import migrations

    with _recon_database() as engine:
        path = migrations.revision(engine, args.message)
    print(f"wrote {path}: review it before committing")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from recon_pipeline.demo import desk
    from recon_pipeline.demo.properties import demo_properties
    from recon_pipeline.demo.run import DemoRunFailed, run_demo

    properties = demo_properties(args.provider)
    if args.desk_users:
        desk.demo_password()  # a bad RECON_NEW_USER_PASSWORD stops the demo before it starts
    try:
        outcomes = run_demo(bookings_per_night=args.bookings, seed=args.seed, flavour=args.provider)
    except DemoRunFailed as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    mismatched = [o.property_id for o in outcomes if o.found != o.planted]
    if mismatched:
        print(
            f"error: findings differ from the planted discrepancies for {', '.join(mismatched)}",
            file=sys.stderr,
        )
        return 1
    if args.desk_users:
        with _recon_database() as engine:
            added = desk.add_desk_demo(engine, properties, datetime.now(UTC))
        print("")
        print("\n".join(desk.render_desk_demo(added)))
        print(
            "start the desk with RECON_REVIEW_SECRET (32+ random characters) set: recon review serve; "
            "sign in as demo-analyst"
        )
    return 0


def cmd_simulator_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from recon_pipeline.demo.properties import demo_properties
    from recon_pipeline.demo.run import demo_nights
    from recon_pipeline.demo.world import build_world
    from recon_pipeline.providers.simulator.app import build_app
    from recon_pipeline.providers.simulator.store import SimulatorStore

    flavour = simulator_flavour(args.flavour)
    if args.data:
        store = SimulatorStore.from_json(args.data)
    else:
        properties = demo_properties(flavour)
        nights = demo_nights(datetime.now(UTC), flavour)
        store = build_world(nights, args.bookings, args.seed, properties, flavour).store
    print(
        f"simulator on http://{args.host}:{args.port} speaking {flavour} ({len(store.charges)} payments)",
        flush=True,
    )
    # With RECON_PROVIDER_API_KEY set, the simulator demands it as the provider would (its dialect says how).
    api_key = os.environ.get("RECON_PROVIDER_API_KEY") or None
    app = build_app(store, api_key=api_key, flavour=flavour)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def cmd_webhooks_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from recon_pipeline.db import migrations
    from recon_pipeline.webhooks import limits, receiver

    # Workers are processes built by the factory from the environment: pass the option that way, and
    # validate what they will read here, so bad configuration is one line, before the database is touched.
    if args.max_body_bytes is not None:
        os.environ[receiver.MAX_BODY_BYTES_ENV] = str(args.max_body_bytes)
    receiver.max_body_bytes_from_env()
    limits.header_limits_from_env()
    receiver.webhook_secrets_from_env()
    with _recon_database() as engine:
        migrations.upgrade(engine)
    print(
        f"webhook receiver on http://{args.host}:{args.port}: POST /webhooks/{{provider}} for "
        f"{', '.join(PROVIDER_NAMES)} ({args.workers} workers)",
        flush=True,
    )
    uvicorn.run(
        "recon_pipeline.webhooks.receiver:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        http=limits.PROTOCOL_PATH,  # header size cap and header deadline (httptools has neither)
        log_config=receiver.uvicorn_log_config(),
        access_log=False,  # the receiver logs each event by id; requests carry nothing more worth keeping
    )
    return 0


def cmd_metrics_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from recon_pipeline.db.engine import make_engine
    from recon_pipeline.metrics.exposition import metrics_app
    from recon_pipeline.webhooks.receiver import bounded_database_url

    # Bounded like the receiver's: a frozen database answers recon_metrics_database_up 0, not a hung scrape.
    engine = make_engine(bounded_database_url(config.database_url()), pool_size=1)
    print(f"metrics on http://{args.host}:{args.port}/metrics", flush=True)
    try:
        uvicorn.run(metrics_app(engine), host=args.host, port=args.port, log_config=None, access_log=False)
    finally:
        engine.dispose()
    return 0


@contextmanager
def _recon_database() -> Iterator[Engine]:
    """An engine on RECON_DATABASE_URL, disposed after the command (its errors are reported by main)."""
    from recon_pipeline.db.engine import make_engine

    engine = make_engine(config.database_url())
    try:
        yield engine
    finally:
        engine.dispose()


def cmd_discrepancies_list(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render, store
    from recon_pipeline.review.rules import DiscrepancyFilter

    where = DiscrepancyFilter(args.property, args.night, args.category, args.status)
    with _recon_database() as engine, engine.connect() as connection:
        rows = store.list_discrepancies(connection, where, args.limit)
        total = store.count_discrepancies(connection, where)
    print(render.list_text(rows, total))
    return 0


def cmd_discrepancies_show(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render, store

    with _recon_database() as engine, engine.connect() as connection:
        row = store.get_discrepancy(connection, args.discrepancy_id)
        history = store.review_history(connection, row)
    print(render.show_text(row, history))
    return 0


def cmd_discrepancies_review(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render, store
    from recon_pipeline.review.rules import validate_note, validate_reviewer

    ids = args.discrepancy_ids
    reviewer = validate_reviewer(args.by or os.environ.get("USER") or os.environ.get("LOGNAME"))
    note = validate_note(args.note)
    with _recon_database() as engine, engine.begin() as connection:
        outcomes = store.review(connection, ids, args.action, reviewer, note, datetime.now(UTC))
    for outcome in outcomes:
        amount = render.money(outcome.difference_minor, outcome.currency)
        if outcome.changed:
            print(
                f"discrepancy {outcome.discrepancy_id}: {outcome.previous_status} -> {outcome.status} "
                f"by {reviewer} at {amount}"
            )
        else:
            print(f"discrepancy {outcome.discrepancy_id}: already {outcome.status}, unchanged")
    return 0


def cmd_discrepancies_threshold(args: argparse.Namespace) -> int:
    from recon_pipeline.review import store
    from recon_pipeline.review.limits import THRESHOLD_ENV

    sources = {"property": "this property's own", "default": f"the default, {THRESHOLD_ENV}"}
    return _property_threshold(
        args, args.set, "unexplained amount threshold", store.threshold_for, store.set_threshold, sources
    )


def cmd_adjustments_four_eyes(args: argparse.Namespace) -> int:
    from recon_pipeline.review import four_eyes
    from recon_pipeline.review.limits import FOUR_EYES_ENV

    sources = {
        "property": "this property's own",
        "default": f"the default, {FOUR_EYES_ENV}",
        four_eyes.UNEXPLAINED: "its unexplained amount threshold, as neither this property's own nor "
        f"{FOUR_EYES_ENV} is set",
    }
    return _property_threshold(
        args,
        args.above,
        "four-eyes threshold",
        four_eyes.four_eyes_threshold,
        four_eyes.set_four_eyes_threshold,
        sources,
    )


def _property_threshold(
    args: argparse.Namespace,
    new: int | None,
    what: str,
    lookup: Callable[[Connection, str], Threshold],
    change: Callable[[Connection, str, int | None, datetime], None],
    sources: Mapping[str, str],
) -> int:
    """Show a property's threshold in force and where it comes from, after setting it to ``new`` or
    clearing it (``--clear``) if asked: `recon discrepancies threshold` and `recon adjustments four-eyes`.
    An unknown property is one line naming it (exit 2)."""
    from recon_pipeline.ledger.queries import load_property
    from recon_pipeline.review import render

    property_id = args.property
    with _recon_database() as engine, engine.begin() as connection:
        currency = load_property(connection, property_id).currency
        if new is not None or args.clear:
            change(connection, property_id, new, datetime.now(UTC))
        threshold = lookup(connection, property_id)
    print(
        f"{property_id}: {what} {render.money(threshold.minor, currency)} "
        f"({threshold.minor} minor units per currency; {sources[threshold.source]})"
    )
    return 0


def cmd_adjustments_list(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render
    from recon_pipeline.review.adjustments import AdjustmentFilter, count_adjustments, list_adjustments

    where = AdjustmentFilter(args.property, args.night, args.status)
    with _recon_database() as engine, engine.connect() as connection:
        rows = list_adjustments(connection, where, args.limit)
        total = count_adjustments(connection, where)
    print(render.adjustments_list_text(rows, total))
    return 0


def cmd_adjustments_show(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render
    from recon_pipeline.review.adjustments import get_adjustment, parse_adjustment_id, review_history

    adjustment_id = parse_adjustment_id(args.adjustment_id)
    with _recon_database() as engine, engine.connect() as connection:
        row = get_adjustment(connection, adjustment_id)
        history = review_history(connection, adjustment_id)
    print(render.adjustment_show_text(row, history))
    return 0


def cmd_adjustments_review(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render
    from recon_pipeline.review.adjustments import parse_adjustment_id, review_adjustment
    from recon_pipeline.review.rules import validate_note, validate_reviewer

    adjustment_id = parse_adjustment_id(args.adjustment_id)
    amount_seen = args.amount_seen
    reviewer = validate_reviewer(args.by or os.environ.get("USER") or os.environ.get("LOGNAME"))
    note = validate_note(args.note)
    with _recon_database() as engine, engine.begin() as connection:
        outcome = review_adjustment(
            connection, adjustment_id, args.action, reviewer, note, amount_seen, datetime.now(UTC)
        )
    amount = render.money(outcome.amount_minor, outcome.currency)
    if outcome.waiting:
        print(f"adjustment {adjustment_id}: {outcome.summary} (by {reviewer} at {amount})")
    elif outcome.changed:
        print(f"adjustment {adjustment_id}: {outcome.summary} by {reviewer} at {amount}")
    else:
        print(f"adjustment {adjustment_id}: {outcome.summary}")
    return 0


def _add_adjustment_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from recon_pipeline.db.schema import approval_thresholds
    from recon_pipeline.review.adjustments import APPROVE, REJECT

    group = commands.add_parser(
        "adjustments", help="review proposed ledger corrections: list, show, approve, reject; four-eyes"
    ).add_subparsers(dest="adjustments_command", required=True)
    listing = group.add_parser("list", help="adjustments, newest night first")
    listing.add_argument("--property", type=cli_args.property_id, help="only this property id")
    listing.add_argument("--night", type=cli_args.night, help="only this night (YYYY-MM-DD)")
    listing.add_argument(
        "--status", help="only this status: proposed, approved, rejected, posted, withdrawn or superseded"
    )
    listing.add_argument(
        "--limit", type=cli_args.count(10_000), default=50, help="show at most this many (50, at most 10000)"
    )
    listing.set_defaults(handler=cmd_adjustments_list)

    show = group.add_parser("show", help="every column of one adjustment and its review history")
    show.add_argument("adjustment_id", help="the id `list` shows (adj_…)")
    show.set_defaults(handler=cmd_adjustments_show)

    for action in (APPROVE, REJECT):
        review = group.add_parser(
            action, help=f"{action} a proposed adjustment, recording who, why and the amount"
        )
        review.add_argument("adjustment_id")
        review.add_argument("--by", help="who reviews (default: $USER)")
        review.add_argument("--note", help="why (required)")
        review.add_argument(
            "--amount-seen",
            metavar="MINOR",
            type=cli_args.signed_amount,
            help="the amount (minor units, signed) you reviewed: refused if the row now proposes another",
        )
        review.set_defaults(handler=cmd_adjustments_review, action=action)

    four_eyes = group.add_parser(
        "four-eyes", help="show or set a property's four-eyes threshold: above it, two different approvers"
    )
    four_eyes.add_argument("property", type=cli_args.property_id, help="property id")
    change = four_eyes.add_mutually_exclusive_group()
    change.add_argument(
        "--above",
        type=cli_args.amount(approval_thresholds.c.four_eyes_above_minor),
        metavar="MINOR",
        help="an adjustment whose |amount| is above this many minor units needs two approvers",
    )
    change.add_argument(
        "--clear",
        action="store_true",
        help="fall back to RECON_FOUR_EYES_THRESHOLD_MINOR, else the unexplained-amount threshold",
    )
    four_eyes.set_defaults(handler=cmd_adjustments_four_eyes)


def _add_discrepancy_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from recon_pipeline.db.schema import discrepancies, discrepancy_thresholds
    from recon_pipeline.review.rules import ACKNOWLEDGE, REOPEN, RESOLVE

    discrepancy_id = cli_args.database_id(discrepancies.c.discrepancy_id)

    group = commands.add_parser(
        "discrepancies", help="review findings: list, show, acknowledge, resolve, reopen; set thresholds"
    ).add_subparsers(dest="discrepancies_command", required=True)
    listing = group.add_parser("list", help="findings, newest night first")
    listing.add_argument("--property", type=cli_args.property_id, help="only this property id")
    listing.add_argument("--night", type=cli_args.night, help="only this night (YYYY-MM-DD)")
    listing.add_argument("--category", help="only this category, e.g. amount_mismatch")
    listing.add_argument("--status", help="only this review status: open, acknowledged or resolved")
    listing.add_argument(
        "--limit", type=cli_args.count(10_000), default=50, help="show at most this many (50, at most 10000)"
    )
    listing.set_defaults(handler=cmd_discrepancies_list)

    show = group.add_parser("show", help="every column of one finding and its review history")
    show.add_argument("discrepancy_id", type=discrepancy_id, help="the id `list` shows")
    show.set_defaults(handler=cmd_discrepancies_show)

    for name, action, verb in (
        ("ack", ACKNOWLEDGE, "acknowledge"),
        ("resolve", RESOLVE, "resolve"),
        ("reopen", REOPEN, "reopen"),
    ):
        review = group.add_parser(name, help=f"{verb} findings, recording who, why and the amount seen")
        review.add_argument("discrepancy_ids", nargs="+", type=discrepancy_id, metavar="discrepancy_id")
        review.add_argument("--by", help="who reviews (default: $USER)")
        review.add_argument("--note", help="why (required)")
        review.set_defaults(handler=cmd_discrepancies_review, action=action)

    threshold = group.add_parser(
        "threshold", help="show or set a property's unexplained-amount threshold (the blocking check's)"
    )
    threshold.add_argument("property", type=cli_args.property_id, help="property id")
    change = threshold.add_mutually_exclusive_group()
    change.add_argument(
        "--set",
        type=cli_args.amount(discrepancy_thresholds.c.unexplained_threshold_minor),
        metavar="MINOR",
        help="new threshold in minor units (JPY: yen, EUR: cents)",
    )
    change.add_argument("--clear", action="store_true", help="fall back to the default")
    threshold.set_defaults(handler=cmd_discrepancies_threshold)


def cmd_report_night(args: argparse.Namespace) -> int:
    from recon_pipeline.reports.render import render_night, report_properties

    with _recon_database() as engine, engine.connect() as connection:
        rows, invalid = report_properties(connection, args.property)
        for row in rows:
            print(render_night(connection, row, args.night, args.out, args.format).summary(), flush=True)
    for error in invalid:  # a bad properties row fails its own report alone
        print(f"error: {error}", file=sys.stderr)
    return BAD_INPUT_EXIT if invalid else 0


def cmd_report_overview(args: argparse.Namespace) -> int:
    from recon_pipeline.reports.render import render_overviews

    with _recon_database() as engine, engine.connect() as connection:
        written = render_overviews(connection, datetime.now(UTC), args.out)
    for path, rows in written.items():
        print(f"{path}: {rows} rows")
    return 0


def cmd_report_payouts(args: argparse.Namespace) -> int:
    from recon_pipeline.payouts.report import report_frame, write_report
    from recon_pipeline.payouts.store import payouts_between
    from recon_pipeline.reports.paths import reports_root

    first, last = (args.night, args.night) if args.night else (args.first, args.last)
    if args.night and args.last:
        raise ValueError("--to goes with --from, not with --night")
    if not last:
        raise ValueError("--from needs --to")
    if first > last:
        raise ValueError(f"--from {first} is after --to {last}")
    with _recon_database() as engine, engine.connect() as connection:
        frame = report_frame(payouts_between(connection, first, last))
    stem = f"payouts_{first}" if first == last else f"payouts_{first}_{last}"
    for path in write_report(frame, args.out or reports_root(), stem, args.format):
        print(f"{path}: {len(frame)} payouts")
    return 0


def cmd_bank_import(args: argparse.Namespace) -> int:
    from recon_pipeline.payouts.camt import read_statement
    from recon_pipeline.payouts.store import match_unmatched, save_credits

    statement = read_statement(args.file)
    with _recon_database() as engine, engine.begin() as connection:
        new = save_credits(connection, statement.credits, datetime.now(UTC))
        matched = match_unmatched(connection)
    print(
        f"{args.file}: statement {statement.statement_id}: {len(statement.credits)} credits "
        f"({new} new, {statement.skipped} other entries skipped), {matched} payouts matched"
    )
    return 0


def _add_bank_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser(
        "bank", help="bank statements: the deposits payouts are matched to"
    ).add_subparsers(dest="bank_command", required=True)
    imported = group.add_parser(
        "import",
        help="store the booked credits of an ISO 20022 CAMT.053 statement and match them to paid payouts "
        "(by amount, date window and reference); re-importing a file adds nothing",
    )
    imported.add_argument("file", type=Path, help="the CAMT.053 XML file")
    imported.set_defaults(handler=cmd_bank_import)


def _add_report_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from recon_pipeline.payouts.report import REPORT_FORMATS
    from recon_pipeline.reports.paths import FORMATS

    group = commands.add_parser(
        "report", help="render report files on demand from the reconciliation database"
    ).add_subparsers(dest="report_command", required=True)
    out_help = "the reports folder to write under (RECON_HOME/reports)"
    night = group.add_parser(
        "night",
        help="a night's discrepancies.csv, discrepancies.parquet and report.html per property, "
        "under OUT/<property>/<night>/",
    )
    night.add_argument("night", type=cli_args.night, help="the night (YYYY-MM-DD)")
    night.add_argument(
        "--property",
        type=cli_args.property_id,
        action="append",
        default=[],
        help="only this property id (repeatable; default: every valid property)",
    )
    night.add_argument("--out", type=Path, help=out_help)
    night.add_argument(
        "--format",
        type=cli_args.choices_list(FORMATS),
        default=FORMATS,
        help=f"comma-separated, of {', '.join(FORMATS)} (all)",
    )
    night.set_defaults(handler=cmd_report_night)
    overview = group.add_parser(
        "overview",
        help="the cross-night overviews (unresolved findings by age, orphaned payments) as CSV under "
        "OUT/_overview/",
    )
    overview.add_argument("--out", type=Path, help=out_help)
    overview.set_defaults(handler=cmd_report_overview)
    payout = group.add_parser(
        "payouts",
        help="one row per payout arriving in the nights asked, with its movements' property-nights and "
        "the bank credit that paid it, as OUT/payouts_<from>[_<to>].<format>",
    )
    nights = payout.add_mutually_exclusive_group(required=True)
    nights.add_argument("--night", type=cli_args.night, help="one arrival night (YYYY-MM-DD)")
    nights.add_argument("--from", dest="first", type=cli_args.night, help="first arrival night (with --to)")
    payout.add_argument("--to", dest="last", type=cli_args.night, help="last arrival night (with --from)")
    payout.add_argument("--out", type=Path, help="the folder to write in (RECON_HOME/reports)")
    payout.add_argument(
        "--format",
        type=cli_args.choices_list(REPORT_FORMATS),
        default=REPORT_FORMATS,
        help=f"comma-separated, of {', '.join(REPORT_FORMATS)} (all)",
    )
    payout.set_defaults(handler=cmd_report_payouts)


def cmd_events_requeue(args: argparse.Namespace) -> int:
    from recon_pipeline.events.queue import requeue
    from recon_pipeline.review.rules import validate_reviewer

    who = validate_reviewer(args.by or os.environ.get("USER") or os.environ.get("LOGNAME"))
    with _recon_database() as engine, engine.begin() as connection:
        requeued = requeue(connection, args.event_ids, args.all_dead, args.provider, who, datetime.now(UTC))
    print(f"requeued {len(requeued)} dead events by {who}" + (f": {', '.join(requeued)}" if requeued else ""))
    return 0


def _add_events_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser("events", help="payment event processing").add_subparsers(
        dest="events_command", required=True
    )
    requeue = group.add_parser(
        "requeue", help="bring dead events back: pending, attempts and retry budget reset, who/when recorded"
    )
    requeue.add_argument(
        "--event-id", dest="event_ids", action="append", default=[], help="a dead event's id (repeatable)"
    )
    requeue.add_argument("--all-dead", action="store_true", help="every dead event (with --provider: its)")
    requeue.add_argument("--provider", choices=PROVIDER_NAMES, help="only this provider's events")
    requeue.add_argument("--by", help="who requeues (default: $USER)")
    requeue.set_defaults(handler=cmd_events_requeue)


def cmd_postings_list(args: argparse.Namespace) -> int:
    from recon_pipeline.postings.render import postings_list_text
    from recon_pipeline.postings.store import list_postings

    with _recon_database() as engine, engine.connect() as connection:
        rows = list_postings(connection, args.state, args.limit)
    print(postings_list_text(rows))
    return 0


def cmd_postings_show(args: argparse.Namespace) -> int:
    from recon_pipeline.postings.render import posting_show_text
    from recon_pipeline.postings.store import get_posting
    from recon_pipeline.review.adjustments import parse_adjustment_id

    adjustment_id = parse_adjustment_id(args.adjustment_id)
    with _recon_database() as engine, engine.connect() as connection:
        row = get_posting(connection, adjustment_id)
    print(posting_show_text(row))
    return 0


def cmd_postings_settle(args: argparse.Namespace) -> int:
    """``retry`` and ``resolve``: one hands-on change of a posting, recording who (and, to resolve, why)."""
    from recon_pipeline.postings import store
    from recon_pipeline.review.adjustments import parse_adjustment_id
    from recon_pipeline.review.rules import validate_note, validate_reviewer

    adjustment_id = parse_adjustment_id(args.adjustment_id)
    who = validate_reviewer(args.by or os.environ.get("USER") or os.environ.get("LOGNAME"))
    note = validate_note(args.note) if args.postings_command == "resolve" else None
    now = datetime.now(UTC)
    with _recon_database() as engine, engine.begin() as connection:
        before = store.get_posting(connection, adjustment_id)["state"]
        if note is None:
            after = store.retry(connection, adjustment_id, who, now)
        else:
            after = store.resolve(connection, adjustment_id, args.posted, who, note, now)
    print(f"posting of {adjustment_id}: {before} -> {after} by {who}")
    return 0


def _add_postings_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from recon_pipeline.db.outbox_states import OUTBOX_STATES

    group = commands.add_parser(
        "postings", help="approved adjustments posted to the PMS: list, show, retry, resolve"
    ).add_subparsers(dest="postings_command", required=True)
    listing = group.add_parser("list", help="outbox rows, oldest first")
    listing.add_argument("--state", choices=OUTBOX_STATES, help="only this state")
    listing.add_argument(
        "--limit", type=cli_args.count(10_000), default=50, help="show at most this many (50, at most 10000)"
    )
    listing.set_defaults(handler=cmd_postings_list)
    show = group.add_parser("show", help="every column of one adjustment's posting")
    show.add_argument("adjustment_id", help="the adjustment's id (adj_…)")
    show.set_defaults(handler=cmd_postings_show)
    retry = group.add_parser(
        "retry", help="a failed posting back to approved (fresh budget); an unknown one looked up now"
    )
    retry.add_argument("adjustment_id")
    retry.add_argument("--by", help="who retries (default: $USER)")
    retry.set_defaults(handler=cmd_postings_settle)
    resolve = group.add_parser(
        "resolve", help="settle an unknown or failed posting by hand, recording who and why"
    )
    resolve.add_argument("adjustment_id")
    outcome = resolve.add_mutually_exclusive_group(required=True)
    outcome.add_argument("--posted", metavar="REF", help="the PMS holds it under this reference")
    outcome.add_argument("--failed", action="store_true", help="the PMS does not hold it: give up for good")
    resolve.add_argument("--by", help="who resolves (default: $USER)")
    resolve.add_argument("--note", help="why (required)")
    resolve.set_defaults(handler=cmd_postings_settle)


def cmd_reconcile_night(args: argparse.Namespace) -> int:
    from recon_pipeline.batches import launch
    from recon_pipeline.batches.plan import plan_batches
    from recon_pipeline.batches.submit import CLI_TRIGGER, TRIGGER_TAG, select_properties
    from recon_pipeline.defs.batches import JOB_NAME, batch_run_request, batch_size
    from recon_pipeline.keys import parse_night
    from recon_pipeline.ledger.queries import list_properties

    launch.dagster_home()  # before the database: a missing instance is the likelier mistake
    size = args.batch_size or batch_size()
    with _recon_database() as engine, engine.connect() as connection:
        selection = select_properties(list_properties(connection), args.property)
    batches = plan_batches(selection.valid, parse_night(args.night), size)
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

    from recon_pipeline.batches.outcomes import FAILED, load_outcomes

    wanted = [p for run in failed for p in run.batch.property_ids]
    try:
        with _recon_database() as engine, engine.connect() as connection:
            outcomes = load_outcomes(connection, night, wanted)
    except SQLAlchemyError as error:
        print(f"(no per-property errors: {_reported(error) or error})", file=sys.stderr)
        return {}
    return {p: o.error or "failed" for p, o in outcomes.items() if o.status == FAILED}


class _Parser(argparse.ArgumentParser):
    """An argument parser that reports bad input in one line (naming the command and option), not with
    argparse's usage dump; subcommands inherit it."""

    def error(self, message: str) -> NoReturn:
        self.exit(BAD_INPUT_EXIT, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    # Typed as the base class so command helpers take plain parsers; subparsers are _Parsers at run time.
    parser: argparse.ArgumentParser = _Parser(
        prog="recon", description="Nightly payment reconciliation on Dagster."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    db = commands.add_parser("db", help="the reconciliation database").add_subparsers(
        dest="db_command", required=True
    )
    init = db.add_parser(
        "init", help="create or upgrade the tables in RECON_DATABASE_URL to the newest revision (idempotent)"
    )
    init.set_defaults(handler=cmd_db_init)
    revision = db.add_parser(
        "revision",
        help="write the next migration, autogenerated from db/schema.py against RECON_DATABASE_URL "
        "(a database at the newest revision; for developers, in a source checkout)",
    )
    revision.add_argument("-m", "--message", required=True, help="what the revision changes")
    revision.set_defaults(handler=cmd_db_revision)

    demo = commands.add_parser(
        "demo",
        help="seed, simulate and reconcile the demo properties of one provider, each its newest night whose "
        "money the provider has published (last night, but for Adyen)",
    )
    demo.add_argument(
        "--provider",
        choices=PROVIDER_NAMES,
        default=DEFAULT_FLAVOUR,
        help="whose API the simulator speaks and whose demo properties are seeded "
        f"({DEFAULT_FLAVOUR})",
    )
    demo.add_argument(
        "--bookings",
        type=cli_args.count(MAX_BOOKINGS),
        default=1000,
        help="ordinary bookings per property (1000)",
    )
    demo.add_argument("--seed", type=int, default=7, help="seed of the demo world (7)")
    demo.add_argument(
        "--desk-users",
        action="store_true",
        help="then add (or reset) the review desk's demo users demo-analyst, demo-approver and "
        "demo-approver2 over the demo's properties, with RECON_NEW_USER_PASSWORD or a generated password "
        "printed once, and lower one property's four-eyes threshold so that its larger proposals need two "
        "approvers",
    )
    demo.set_defaults(handler=cmd_demo)

    simulator = commands.add_parser("simulator", help="the provider simulator").add_subparsers(
        dest="simulator_command", required=True
    )
    serve = simulator.add_parser("serve", help="serve one provider's API subset from seeded data")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument(
        "--flavour",
        choices=PROVIDER_NAMES,
        help="the API to speak and whose demo properties to seed "
        f"(RECON_PROVIDER_FLAVOUR, else {DEFAULT_FLAVOUR})",
    )
    serve.add_argument("--port", type=cli_args.port, default=12111)
    serve.add_argument("--seed", type=int, default=7)
    serve.add_argument("--bookings", type=cli_args.count(MAX_BOOKINGS), default=1000)
    serve.add_argument(
        "--data", help="serve this JSON store (SimulatorStore.to_json) instead of the demo world"
    )
    serve.set_defaults(handler=cmd_simulator_serve)

    webhooks = commands.add_parser("webhooks", help="the webhook receiver").add_subparsers(
        dest="webhooks_command", required=True
    )
    receive = webhooks.add_parser(
        "serve", help="receive every provider's webhooks (RECON_WEBHOOK_SECRET) into payment_events"
    )
    receive.add_argument("--host", default="127.0.0.1")
    receive.add_argument("--port", type=cli_args.port, default=12112)
    receive.add_argument(
        "--max-body-bytes",
        type=cli_args.count(MAX_BODY_BYTES),
        help="larger bodies get 413 (RECON_WEBHOOK_MAX_BODY_BYTES, 256 KiB)",
    )
    receive.add_argument(
        "--workers", type=cli_args.count(MAX_WORKERS), default=1, help="uvicorn worker processes (1)"
    )
    receive.set_defaults(handler=cmd_webhooks_serve)

    metrics = commands.add_parser("metrics", help="operational metrics").add_subparsers(
        dest="metrics_command", required=True
    )
    metrics_serve = metrics.add_parser(
        "serve",
        help="serve /metrics (Prometheus): the event queue and posting outbox, read from the database",
    )
    metrics_serve.add_argument("--host", default="127.0.0.1")
    metrics_serve.add_argument("--port", type=cli_args.port, default=12113)
    metrics_serve.set_defaults(handler=cmd_metrics_serve)

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
        help="at most this many properties per run (RECON_BATCH_SIZE, else 250)",
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

    _add_discrepancy_commands(commands)
    _add_adjustment_commands(commands)
    _add_events_commands(commands)
    _add_postings_commands(commands)
    _add_report_commands(commands)
    _add_bank_commands(commands)
    _add_review_desk_commands(commands)
    return parser


def cmd_users_add(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.users import add_user

    password = _new_password(args)
    with _recon_database() as engine, engine.begin() as connection:
        user = add_user(connection, args.name, args.role, args.properties, password, datetime.now(UTC))
    print(f"added {user.role} {user.name} for {', '.join(user.properties)}")
    return 0


def cmd_users_list(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.users import list_users

    with _recon_database() as engine, engine.connect() as connection:
        rows = list_users(connection)
    for row in rows:
        print(
            f"{row['name']}\t{row['role']}\t{row['properties']}\tadded {row['created_at']:%Y-%m-%d %H:%M} UTC"
        )
    print(f"{len(rows)} user{'' if len(rows) == 1 else 's'}")
    return 0


def cmd_users_change(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.users import change_user

    if args.role is None and args.properties is None and not args.new_password:
        raise ValueError("say what to change: --role, --properties or --new-password")
    password = _new_password(args) if args.new_password else None
    with _recon_database() as engine, engine.begin() as connection:
        change = change_user(connection, args.name, args.role, args.properties, password)
    user = change.user
    changed_password = "; password changed" if password is not None else ""
    count = change.sessions_ended
    ended = f"; {count} session{'' if count == 1 else 's'} ended" if count else ""
    print(f"{user.name} is {user.role} for {', '.join(user.properties)}{changed_password}{ended}")
    return 0


def cmd_users_remove(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.users import remove_user

    with _recon_database() as engine, engine.begin() as connection:
        remove_user(connection, args.name)
    print(f"removed {args.name}: their sessions ended")
    return 0


def cmd_users_unlock(args: argparse.Namespace) -> int:
    from recon_pipeline.review.rules import validate_reviewer
    from recon_pipeline.review_desk.audit import record_audit
    from recon_pipeline.review_desk.signin import forget_failures, name_key

    who = validate_reviewer(args.by or os.environ.get("USER") or os.environ.get("LOGNAME"))
    with _recon_database() as engine, engine.begin() as connection:
        failures = forget_failures(connection, name_key(args.name))
        detail = f"{failures} failed sign-in{'' if failures == 1 else 's'} forgotten"
        record_audit(connection, who, "unlock", target=args.name, detail=detail)
    print(f"unlocked {args.name}: {detail}")
    return 0


def _new_password(args: argparse.Namespace) -> str:
    """The new password: stdin's first line with --password-stdin, else RECON_NEW_USER_PASSWORD."""
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    password = os.environ.get("RECON_NEW_USER_PASSWORD", "")
    if not password:
        raise ValueError("set RECON_NEW_USER_PASSWORD or pass --password-stdin")
    return password


def cmd_review_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from recon_pipeline.db.engine import make_engine
    from recon_pipeline.review_desk.app import DeskSettings, review_desk_app

    settings = DeskSettings.from_environment()
    engine = make_engine(config.database_url())
    print(f"review desk on http://{args.host}:{args.port}/", flush=True)
    # The client address (the sign-in limit's key) comes from X-Forwarded-For only when the request came
    # from a proxy named by --forwarded-allow-ips. Without it no header is trusted: uvicorn's own default
    # would trust 127.0.0.1, where every local client could then name its own address.
    proxies = args.forwarded_allow_ips
    try:
        uvicorn.run(
            review_desk_app(engine, settings),
            host=args.host,
            port=args.port,
            log_config=None,
            proxy_headers=proxies is not None,
            forwarded_allow_ips=proxies or "",
        )
    finally:
        engine.dispose()
    return 0


def _add_review_desk_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from recon_pipeline.review_desk.users import ROLES, parse_properties, validate_name

    def checked(parse: Callable[[str], object]) -> Callable[[str], object]:
        def check(text: str) -> object:
            try:
                return parse(text)
            except ValueError as error:
                raise argparse.ArgumentTypeError(str(error)) from None

        return check

    users = commands.add_parser("users", help="the review desk's users").add_subparsers(
        dest="users_command", required=True
    )
    add = users.add_parser(
        "add",
        help="add a review desk user; the password comes from RECON_NEW_USER_PASSWORD or --password-stdin",
    )
    change = users.add_parser(
        "change",
        help="change a user's role, properties or password (--new-password: from RECON_NEW_USER_PASSWORD "
        "or --password-stdin)",
    )
    for parser, required in ((add, True), (change, False)):
        parser.add_argument("name", type=checked(validate_name))
        parser.add_argument("--role", required=required, choices=ROLES)
        parser.add_argument(
            "--properties", required=required, type=checked(parse_properties), metavar="P1,P2"
        )
        parser.add_argument(
            "--password-stdin", action="store_true", help="read the password from stdin's first line"
        )
    change.add_argument("--new-password", action="store_true", help="set a new password")
    add.set_defaults(handler=cmd_users_add)
    change.set_defaults(handler=cmd_users_change)
    users.add_parser("list", help="every user: name, role, properties (never a password)").set_defaults(
        handler=cmd_users_list
    )
    remove = users.add_parser("remove", help="remove a user and end their sessions")
    remove.add_argument("name", type=checked(validate_name))
    remove.set_defaults(handler=cmd_users_remove)
    unlock = users.add_parser(
        "unlock", help="lift the sign-in lock of a name (forget its failed sign-ins); audited"
    )
    unlock.add_argument("name", type=checked(validate_name))
    unlock.add_argument("--by", help="who unlocks, for the audit log (default: $USER)")
    unlock.set_defaults(handler=cmd_users_unlock)

    review = commands.add_parser("review", help="the review desk web app").add_subparsers(
        dest="review_command", required=True
    )
    serve = review.add_parser(
        "serve",
        help="serve the review desk (needs RECON_REVIEW_SECRET; RECON_REVIEW_SECURE_COOKIES=1 behind TLS)",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=cli_args.port, default=12114)
    serve.add_argument(
        "--forwarded-allow-ips",
        type=cli_args.trusted_proxies,
        metavar="IPS",
        help="comma-separated addresses or networks of the reverse proxy (or '*'): only a request from one "
        "of them has its X-Forwarded-For client address counted by the sign-in limit (default: none, "
        "every X-Forwarded-For is ignored)",
    )
    serve.set_defaults(handler=cmd_review_serve)


def _reported(error: Exception) -> tuple[str, int] | None:
    """The one-line reason and exit code of an error the user can act on; None for a bug."""
    from sqlalchemy.exc import SQLAlchemyError

    from recon_pipeline.db.engine import database_failure

    if isinstance(error, SQLAlchemyError):
        error = database_failure(error, config.database_url())
    if isinstance(error, ServiceUnavailable):
        code = FAILED_EXIT
    elif isinstance(error, ValueError | LookupError | OSError):  # ConfigError is a ValueError
        code = BAD_INPUT_EXIT
    else:
        return None
    lines = str(error).strip().splitlines() or [type(error).__name__]
    return lines[0], code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `recon` console script: the exit code, after at most one line of error."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a refused argument (2), already printed
        return exit_.code if isinstance(exit_.code, int) else BAD_INPUT_EXIT
    handler: Handler = args.handler
    try:
        return handler(args)
    except Exception as error:
        reported = _reported(error)
        if reported is None:
            raise
        print(f"error: {reported[0]}", file=sys.stderr)
        return reported[1]


if __name__ == "__main__":
    sys.exit(main())
