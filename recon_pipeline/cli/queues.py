"""`recon events` and `recon postings`: hands-on changes to the two work queues, the payment events a
worker processes and the approved adjustments the outbox posts to the PMS."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from recon_pipeline.cli import args as cli_args
from recon_pipeline.cli.common import Commands, acting_reviewer, recon_database
from recon_pipeline.providers import PROVIDER_NAMES


def cmd_events_requeue(args: argparse.Namespace) -> int:
    from recon_pipeline.events.queue import requeue

    who = acting_reviewer(args.by)
    with recon_database() as engine, engine.begin() as connection:
        requeued = requeue(connection, args.event_ids, args.all_dead, args.provider, who, datetime.now(UTC))
    print(f"requeued {len(requeued)} dead events by {who}" + (f": {', '.join(requeued)}" if requeued else ""))
    return 0


def cmd_postings_list(args: argparse.Namespace) -> int:
    from recon_pipeline.postings.render import postings_list_text
    from recon_pipeline.postings.store import list_postings

    with recon_database() as engine, engine.connect() as connection:
        rows = list_postings(connection, args.state, args.limit)
    print(postings_list_text(rows))
    return 0


def cmd_postings_show(args: argparse.Namespace) -> int:
    from recon_pipeline.postings.render import posting_show_text
    from recon_pipeline.postings.store import get_posting
    from recon_pipeline.review.adjustments import parse_adjustment_id

    adjustment_id = parse_adjustment_id(args.adjustment_id)
    with recon_database() as engine, engine.connect() as connection:
        row = get_posting(connection, adjustment_id)
    print(posting_show_text(row))
    return 0


def cmd_postings_settle(args: argparse.Namespace) -> int:
    """``retry`` and ``resolve``: one hands-on change of a posting, recording who (and, to resolve, why)."""
    from recon_pipeline.postings import store
    from recon_pipeline.review.adjustments import parse_adjustment_id
    from recon_pipeline.review.rules import validate_note

    adjustment_id = parse_adjustment_id(args.adjustment_id)
    who = acting_reviewer(args.by)
    note = validate_note(args.note) if args.postings_command == "resolve" else None
    now = datetime.now(UTC)
    with recon_database() as engine, engine.begin() as connection:
        before = store.get_posting(connection, adjustment_id)["state"]
        if note is None:
            after = store.retry(connection, adjustment_id, who, now)
        else:
            after = store.resolve(connection, adjustment_id, args.posted, who, note, now)
    print(f"posting of {adjustment_id}: {before} -> {after} by {who}")
    return 0


def add_commands(commands: Commands) -> None:
    """Add `recon events ...` and `recon postings ...`, in that order."""
    _add_events_commands(commands)
    _add_postings_commands(commands)


def _add_events_commands(commands: Commands) -> None:
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


def _add_postings_commands(commands: Commands) -> None:
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
