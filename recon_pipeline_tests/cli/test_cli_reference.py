"""docs/commands.md is the parser's own text: a command, option or help line changed without regenerating
the reference fails here, so the committed reference never drifts from `recon --help`."""

from __future__ import annotations

import sys
from pathlib import Path

from recon_pipeline.cli.reference import reference

COMMANDS_MD = Path(__file__).resolve().parents[2] / "docs" / "commands.md"


def test_the_committed_command_reference_is_what_the_parser_writes() -> None:
    assert COMMANDS_MD.read_text() == reference(), (
        f"docs/commands.md differs from the parser (Python {sys.version.split()[0]}'s argparse): "
        "regenerate it with `python -m recon_pipeline.cli.reference > docs/commands.md`"
    )


def test_the_reference_lists_every_command_in_the_parsers_order() -> None:
    headings = [line.removeprefix("## ") for line in reference().splitlines() if line.startswith("## ")]
    assert headings[:4] == ["recon", "recon db", "recon db init", "recon db revision"]
    assert "recon reconcile-night" in headings
    assert headings[-1] == "recon review serve"
