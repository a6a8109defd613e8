"""`recon report` and `recon bank`: report files rendered on demand from the database, and the bank
statements whose credits pay the payouts those reports show."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from recon_pipeline.cli import args as cli_args
from recon_pipeline.cli.common import BAD_INPUT_EXIT, Commands, recon_database


def cmd_report_night(args: argparse.Namespace) -> int:
    from recon_pipeline.reports.render import render_night, report_properties

    with recon_database() as engine, engine.connect() as connection:
        rows, invalid = report_properties(connection, args.property)
        for row in rows:
            print(render_night(connection, row, args.night, args.out, args.format).summary(), flush=True)
    for error in invalid:  # a bad properties row fails its own report alone
        print(f"error: {error}", file=sys.stderr)
    return BAD_INPUT_EXIT if invalid else 0


def cmd_report_overview(args: argparse.Namespace) -> int:
    from recon_pipeline.reports.render import render_overviews

    with recon_database() as engine, engine.connect() as connection:
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
    with recon_database() as engine, engine.connect() as connection:
        frame = report_frame(payouts_between(connection, first, last))
    stem = f"payouts_{first}" if first == last else f"payouts_{first}_{last}"
    for path in write_report(frame, args.out or reports_root(), stem, args.format):
        print(f"{path}: {len(frame)} payouts")
    return 0


def cmd_bank_import(args: argparse.Namespace) -> int:
    from recon_pipeline.payouts.camt import read_statement
    from recon_pipeline.payouts.store import match_unmatched, save_credits

    statement = read_statement(args.file)
    with recon_database() as engine, engine.begin() as connection:
        new = save_credits(connection, statement.credits, datetime.now(UTC))
        matched = match_unmatched(connection)
    print(
        f"{args.file}: statement {statement.statement_id}: {len(statement.credits)} credits "
        f"({new} new, {statement.skipped} other entries skipped), {matched} payouts matched"
    )
    return 0


def add_commands(commands: Commands) -> None:
    """Add `recon report ...` and `recon bank import`, in that order."""
    _add_report_commands(commands)
    _add_bank_commands(commands)


def _add_report_commands(commands: Commands) -> None:
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


def _add_bank_commands(commands: Commands) -> None:
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
