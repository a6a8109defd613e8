"""The `recon` command line. Every command exits non-zero with a one-line reason on bad input.

Arguments are checked by the types in ``cli.args``; everything a command raises that the user can act on
goes through ``main``'s one reporting path: ``error: <reason>`` on stderr, exit 2 for bad input or
configuration, 1 for a database that cannot be used. Anything else is a bug and keeps its traceback.

Each command group is a module of this package that adds its commands to the parser and holds their
handlers (``db``, ``simulation``, ``serve``, ``reconcile_night``, ``review``, ``matches``, ``queues``,
``reports``, ``desk``); ``common`` holds what they share, ``reference`` writes docs/commands.md from the
parser.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from recon_pipeline.cli import (
    db,
    desk,
    matches,
    queues,
    reconcile_night,
    reports,
    review,
    serve,
    simulation,
)
from recon_pipeline.cli.common import BAD_INPUT_EXIT, Handler, reported

# In the order `recon --help` lists the commands.
COMMAND_MODULES = (db, simulation, serve, reconcile_night, review, matches, queues, reports, desk)


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

    for module in COMMAND_MODULES:
        module.add_commands(commands)
    return parser


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
        reason = reported(error)
        if reason is None:
            raise
        print(f"error: {reason[0]}", file=sys.stderr)
        return reason[1]
