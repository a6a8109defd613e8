"""The command reference, docs/commands.md, written from the `recon` parser itself so that it never drifts
from the commands: ``python -m recon_pipeline.cli.reference > docs/commands.md``. A fast test compares the
committed file with what this writes today.

Every command appears in the parser's order: its one-line help as its group lists it, then its ``--help``
(usage, arguments, options), formatted at a fixed width so the file does not depend on the terminal.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from recon_pipeline.cli import build_parser

WIDTH = 100


class _Formatter(argparse.HelpFormatter):
    """argparse's own formatter at ``WIDTH`` columns (its default is the terminal's width)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=WIDTH)


def commands(
    parser: argparse.ArgumentParser, summary: str = ""
) -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """``parser`` and, depth first in the order they were added, every command under it, each with the
    one-line help its group lists it with (none for ``parser`` itself)."""
    yield parser, summary
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            # a command once, under its own name: its aliases (``choices``' other keys) lead to it as well
            for choice in action._choices_actions:
                yield from commands(action.choices[choice.dest], choice.help or "")


def reference() -> str:
    """The text of docs/commands.md."""
    lines = [
        "# `recon` commands",
        "",
        "Every command of the `recon` console script (also `python -m recon_pipeline.cli`), as its `--help`",
        "shows it. Generated from the parser: `python -m recon_pipeline.cli.reference > docs/commands.md`;",
        "do not edit by hand (a test fails when this file and the parser differ).",
    ]
    for parser, summary in commands(build_parser()):
        parser.formatter_class = _Formatter
        lines += ["", f"## {parser.prog}", ""]
        if summary:
            lines += [summary, ""]
        lines += ["```text", parser.format_help().rstrip("\n"), "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(reference())
