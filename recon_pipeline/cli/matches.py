"""`recon matches`: the matches the matcher found beyond the provider's id, and a person's decisions on
them: list, show, confirm, reject, pair by hand (``review/matches.py``).

A decision names who (``--by``, default ``$USER``) and why (``--reason``, required); it is audited in
``match_decisions`` with the ids and amounts seen, and holds across re-runs of the night."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from recon_pipeline.cli import args as cli_args
from recon_pipeline.cli.common import Commands, acting_reviewer, recon_database

_NONE = "-"
LIST_HEADER = ("property", "night", "match", "rule", "score", "status", "provider", "ledger", "decided by")


def cmd_matches_list(args: argparse.Namespace) -> int:
    from recon_pipeline.storage.matches import MatchFilter, count_matches, list_matches

    cleared = False if args.current else None
    where = MatchFilter(args.property, args.night, args.status, args.rule, cleared)
    with recon_database() as engine, engine.connect() as connection:
        rows = list_matches(connection, where, args.limit)
        total = count_matches(connection, where)
    print(list_text(rows, total))
    return 0


def cmd_matches_show(args: argparse.Namespace) -> int:
    from recon_pipeline.storage.matches import decision_history, get_match

    with recon_database() as engine, engine.connect() as connection:
        row = get_match(connection, args.property, args.night, args.match_key)
        history = decision_history(connection, args.property, args.night, args.match_key)
    print(show_text(row, history))
    return 0


def cmd_matches_decide(args: argparse.Namespace) -> int:
    from recon_pipeline.review import matches

    decide = matches.confirm_match if args.action == matches.CONFIRM else matches.reject_match
    by = acting_reviewer(args.by)
    with recon_database() as engine, engine.begin() as connection:
        decision = decide(
            connection, args.property, args.night, args.match_key, by, args.reason or "", datetime.now(UTC)
        )
    print(decision_text(decision, by))
    return 0


def cmd_matches_pair(args: argparse.Namespace) -> int:
    from recon_pipeline.review.matches import pair_by_hand

    by = acting_reviewer(args.by)
    with recon_database() as engine, engine.begin() as connection:
        decision = pair_by_hand(
            connection,
            args.property,
            args.night,
            args.record or (),
            args.entry or (),
            by,
            args.reason or "",
            datetime.now(UTC),
        )
    print(decision_text(decision, by))
    return 0


def _money(amount: int | None, currency: str | None) -> str:
    from recon_pipeline.review.render import money

    return _NONE if amount is None or not currency else money(amount, currency)


def list_text(rows: Sequence[Mapping[Any, Any]], total: int) -> str:
    """A table of matches, then how many of the matching ones it shows."""
    from recon_pipeline.reconcile.report import plain_table

    if not rows:
        return "no matches match"
    table = [
        [
            row["property_id"],
            row["night"],
            row["match_key"],
            row["rule"],
            _NONE if row["score"] is None else f"{row['score']:.2f}",
            row["status"] + (", cleared" if row["cleared_at"] is not None else ""),
            _money(row["provider_amount_minor"], row["currency"]),
            _money(row["ledger_amount_minor"], row["currency"]),
            row["decided_by"] or _NONE,
        ]
        for row in rows
    ]
    shown = f"{len(rows)} of {total} matching" + (" (raise --limit to see more)" if total > len(rows) else "")
    return f"{plain_table(LIST_HEADER, table)}\n{shown}"


def show_text(row: Mapping[Any, Any], history: Sequence[Mapping[Any, Any]]) -> str:
    """Every column of the match (amounts also in major units), then its decisions."""
    lines = []
    for name, value in row.items():
        shown = _NONE if value is None else str(value)
        if name.endswith("_minor") and value is not None:
            shown += f" ({_money(value, row['currency'])})"
        lines.append(f"{name:<22} {shown}")
    lines.append("decisions:" if history else "decisions: none")
    lines += [
        f"  {event['decided_at']:%Y-%m-%d %H:%M:%S}  {event['action']:<7}  "
        f"{event['previous_status'] or 'unmatched'} -> {_STATUS_AFTER[event['action']]}  "
        f"by {event['decided_by']}  at {_money(event['provider_amount_minor'], event['currency'])} / "
        f"{_money(event['ledger_amount_minor'], event['currency'])}  {event['reason']}"
        for event in history
    ]
    return "\n".join(lines)


_STATUS_AFTER = {"confirm": "confirmed", "reject": "rejected", "pair": "confirmed"}


def decision_text(decision: Any, by: str) -> str:
    """One line: what the decision did to which match, by whom, at which amounts."""
    where = f"match {decision.match_key} ({decision.property_id} {decision.night})"
    amounts = (
        f"{_money(decision.provider_amount_minor, decision.currency)} provider / "
        f"{_money(decision.ledger_amount_minor, decision.currency)} ledger"
    )
    if not decision.changed:
        return f"{where}: already {decision.status}, unchanged"
    before = decision.previous_status or "unmatched"
    return f"{where}: {before} -> {decision.status} by {by} at {amounts}"


def add_commands(commands: Commands) -> None:
    """Add `recon matches ...`."""
    from recon_pipeline.review.matches import CONFIRM, REJECT
    from recon_pipeline.storage.matches import MATCH_STATUSES

    group = commands.add_parser(
        "matches", help="matches beyond the provider's id: list, show, confirm, reject, pair by hand"
    ).add_subparsers(dest="matches_command", required=True)
    listing = group.add_parser("list", help="matches and suggestions, newest night first")
    listing.add_argument("--property", type=cli_args.property_id, help="only this property id")
    listing.add_argument("--night", type=cli_args.night, help="only this night (YYYY-MM-DD)")
    listing.add_argument("--status", help=f"only this status: {', '.join(MATCH_STATUSES)}")
    listing.add_argument("--rule", help="only this rule, e.g. booking_amount or person")
    listing.add_argument(
        "--current", action="store_true", help="only what the latest run finds (and people's decisions)"
    )
    listing.add_argument(
        "--limit", type=cli_args.count(10_000), default=50, help="show at most this many (50, at most 10000)"
    )
    listing.set_defaults(handler=cmd_matches_list)

    show = group.add_parser("show", help="every column of one match and its decisions")
    _add_match_arguments(show)
    show.set_defaults(handler=cmd_matches_show)

    for action, help_text in (
        (CONFIRM, "confirm a suggested match: the next run matches it and clears its findings"),
        (REJECT, "reject a match: the matcher never proposes this pairing again"),
    ):
        decide = group.add_parser(action, help=help_text)
        _add_match_arguments(decide)
        _add_decision_arguments(decide)
        decide.set_defaults(handler=cmd_matches_decide, action=action)

    pair = group.add_parser("pair", help="match provider records with ledger entries by hand")
    pair.add_argument("--property", type=cli_args.property_id, required=True, help="property id")
    pair.add_argument("--night", type=cli_args.night, required=True, help="the night (YYYY-MM-DD)")
    pair.add_argument(
        "--record", action="append", metavar="ID", help="a provider record id (repeat for several)"
    )
    pair.add_argument("--entry", action="append", metavar="ID", help="a ledger entry id (repeat for several)")
    _add_decision_arguments(pair)
    pair.set_defaults(handler=cmd_matches_pair)


def _add_match_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("match_key", help="the match `list` shows (records=entries)")
    parser.add_argument("--property", type=cli_args.property_id, required=True, help="property id")
    parser.add_argument("--night", type=cli_args.night, required=True, help="the night (YYYY-MM-DD)")


def _add_decision_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--by", help="who decides (default: $USER)")
    parser.add_argument("--reason", help="why (required)")
