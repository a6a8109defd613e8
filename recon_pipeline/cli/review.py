"""`recon findings` and `recon adjustments`: review the findings and the proposed ledger corrections, and
set each property's thresholds (the unexplained amount, four eyes). `recon findings`, the findings'
table's name, is the same command under an alias."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from recon_pipeline.cli import args as cli_args
from recon_pipeline.cli.common import Commands, acting_reviewer, recon_database

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from recon_pipeline.review.store import Threshold


def cmd_findings_list(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render
    from recon_pipeline.storage import findings

    where = findings.FindingFilter(args.property, args.night, args.category, args.status)
    with recon_database() as engine, engine.connect() as connection:
        rows = findings.list_findings(connection, where, args.limit)
        total = findings.count_findings(connection, where)
    print(render.list_text(rows, total))
    return 0


def cmd_findings_show(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render, store
    from recon_pipeline.storage.findings import get_finding

    with recon_database() as engine, engine.connect() as connection:
        row = get_finding(connection, args.finding_id)
        history = store.review_history(connection, row)
    print(render.show_text(row, history))
    return 0


def cmd_findings_review(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render, store
    from recon_pipeline.review.rules import validate_note

    ids = args.finding_ids
    reviewer = acting_reviewer(args.by)
    note = validate_note(args.note)
    with recon_database() as engine, engine.begin() as connection:
        outcomes = store.review(connection, ids, args.action, reviewer, note, datetime.now(UTC))
    for outcome in outcomes:
        amount = render.money(outcome.difference_minor, outcome.currency)
        if outcome.changed:
            print(
                f"finding {outcome.finding_id}: {outcome.previous_status} -> {outcome.status} "
                f"by {reviewer} at {amount}"
            )
        else:
            print(f"finding {outcome.finding_id}: already {outcome.status}, unchanged")
    return 0


def cmd_findings_assign(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.finding_work import assign_finding
    from recon_pipeline.storage.findings import get_finding

    who = acting_reviewer(args.by)
    assignee = None if args.unassign else args.to
    with recon_database() as engine, engine.begin() as connection:
        finding = get_finding(connection, args.finding_id)
        change = assign_finding(connection, who, finding, assignee, datetime.now(UTC))
    print(f"finding {args.finding_id}: {change} (by {who})")
    return 0


def cmd_findings_note(args: argparse.Namespace) -> int:
    from recon_pipeline.review.rules import validate_note
    from recon_pipeline.review_desk.finding_work import note_finding
    from recon_pipeline.storage.findings import get_finding

    who = acting_reviewer(args.by)
    note = validate_note(args.note)
    with recon_database() as engine, engine.begin() as connection:
        finding = get_finding(connection, args.finding_id)
        change = note_finding(connection, who, finding, note, datetime.now(UTC))
    print(f"finding {args.finding_id}: {change} (by {who})")
    return 0


def cmd_findings_threshold(args: argparse.Namespace) -> int:
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
    clearing it (``--clear``) if asked: `recon findings threshold` and `recon adjustments four-eyes`.
    An unknown property is one line naming it (exit 2)."""
    from recon_pipeline.ledger.queries import load_property
    from recon_pipeline.review import render

    property_id = args.property
    with recon_database() as engine, engine.begin() as connection:
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
    from recon_pipeline.storage.adjustments import AdjustmentFilter, count_adjustments, list_adjustments

    where = AdjustmentFilter(args.property, args.night, args.status)
    with recon_database() as engine, engine.connect() as connection:
        rows = list_adjustments(connection, where, args.limit)
        total = count_adjustments(connection, where)
    print(render.adjustments_list_text(rows, total))
    return 0


def cmd_adjustments_show(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render
    from recon_pipeline.review.adjustments import parse_adjustment_id, review_history
    from recon_pipeline.storage.adjustments import get_adjustment

    adjustment_id = parse_adjustment_id(args.adjustment_id)
    with recon_database() as engine, engine.connect() as connection:
        row = get_adjustment(connection, adjustment_id)
        history = review_history(connection, adjustment_id)
    print(render.adjustment_show_text(row, history))
    return 0


def cmd_adjustments_review(args: argparse.Namespace) -> int:
    from recon_pipeline.review import render
    from recon_pipeline.review.adjustments import parse_adjustment_id, review_adjustment
    from recon_pipeline.review.rules import validate_note

    adjustment_id = parse_adjustment_id(args.adjustment_id)
    amount_seen = args.amount_seen
    reviewer = acting_reviewer(args.by)
    note = validate_note(args.note)
    with recon_database() as engine, engine.begin() as connection:
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


def cmd_adjustments_withdraw_approval(args: argparse.Namespace) -> int:
    from recon_pipeline.review.adjustments import parse_adjustment_id, withdraw_approval
    from recon_pipeline.review.rules import validate_note

    adjustment_id = parse_adjustment_id(args.adjustment_id)
    reviewer = acting_reviewer(args.by)
    note = validate_note(args.note)
    with recon_database() as engine, engine.begin() as connection:
        outcome = withdraw_approval(connection, adjustment_id, reviewer, note, datetime.now(UTC))
    print(f"adjustment {adjustment_id}: {outcome.summary}")
    return 0


def add_commands(commands: Commands) -> None:
    """Add `recon findings ...` and `recon adjustments ...`, in that order."""
    _add_finding_commands(commands)
    _add_adjustment_commands(commands)


def _add_finding_commands(commands: Commands) -> None:
    from recon_pipeline.db.schema import discrepancies, discrepancy_thresholds
    from recon_pipeline.storage.findings import ACKNOWLEDGE, REOPEN, RESOLVE

    finding_id = cli_args.database_id(discrepancies.c.discrepancy_id, "finding_id")

    group = commands.add_parser(
        "findings",
        aliases=["discrepancies"],
        help="review findings: list, show, acknowledge, resolve, reopen, assign, note; set thresholds",
    ).add_subparsers(dest="findings_command", required=True)
    listing = group.add_parser("list", help="findings, newest night first")
    listing.add_argument("--property", type=cli_args.property_id, help="only this property id")
    listing.add_argument("--night", type=cli_args.night, help="only this night (YYYY-MM-DD)")
    listing.add_argument("--category", help="only this category, e.g. amount_mismatch")
    listing.add_argument("--status", help="only this review status: open, acknowledged or resolved")
    listing.add_argument(
        "--limit", type=cli_args.count(10_000), default=50, help="show at most this many (50, at most 10000)"
    )
    listing.set_defaults(handler=cmd_findings_list)

    show = group.add_parser("show", help="every column of one finding and its review history")
    show.add_argument("finding_id", type=finding_id, help="the id `list` shows")
    show.set_defaults(handler=cmd_findings_show)

    for name, action, verb in (
        ("ack", ACKNOWLEDGE, "acknowledge"),
        ("resolve", RESOLVE, "resolve"),
        ("reopen", REOPEN, "reopen"),
    ):
        review = group.add_parser(name, help=f"{verb} findings, recording who, why and the amount seen")
        review.add_argument("finding_ids", nargs="+", type=finding_id, metavar="finding_id")
        review.add_argument("--by", help="who reviews (default: $USER)")
        review.add_argument("--note", help="why (required)")
        review.set_defaults(handler=cmd_findings_review, action=action)

    assign = group.add_parser(
        "assign", help="give a finding to a desk user who may review its property, or to no one"
    )
    assign.add_argument("finding_id", type=finding_id, help="the id `list` shows")
    assignee = assign.add_mutually_exclusive_group(required=True)
    assignee.add_argument("--to", metavar="NAME", help="the desk user (`recon users list`) to give it to")
    assignee.add_argument("--unassign", action="store_true", help="give it to no one")
    assign.add_argument("--by", help="who assigns, for the desk's audit log (default: $USER)")
    assign.set_defaults(handler=cmd_findings_assign)

    note = group.add_parser(
        "note", help="add a note to a finding's review history; its status stays as it is"
    )
    note.add_argument("finding_id", type=finding_id, help="the id `list` shows")
    note.add_argument("--by", help="who writes it (default: $USER)")
    note.add_argument("--note", help="the note (required)")
    note.set_defaults(handler=cmd_findings_note)

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
    threshold.set_defaults(handler=cmd_findings_threshold)


def _add_adjustment_commands(commands: Commands) -> None:
    from recon_pipeline.db.schema import approval_thresholds
    from recon_pipeline.review.adjustments import APPROVE, REJECT

    group = commands.add_parser(
        "adjustments",
        help="review proposed ledger corrections: list, show, approve, reject, withdraw-approval; four-eyes",
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

    withdraw = group.add_parser(
        "withdraw-approval",
        help="withdraw your own approval before posting begins (an approved adjustment is proposed again)",
    )
    withdraw.add_argument("adjustment_id")
    withdraw.add_argument("--by", help="whose approval (default: $USER)")
    withdraw.add_argument("--note", help="why (required)")
    withdraw.set_defaults(handler=cmd_adjustments_withdraw_approval)

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
