"""Running `recon` in-process with its output captured, and amounts as the review commands print them."""

from __future__ import annotations

import pytest

from recon_pipeline import cli

KYOTO, LISBON = "kyoto-gion", "lisbon-riverside"  # JPY (no decimals) and EUR


def recon(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run `recon ARGV` in process: exit code, stdout, stderr (of this command only)."""
    capsys.readouterr()
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def jpy(minor: int) -> str:
    return f"{minor:,} JPY"


def eur(minor: int) -> str:
    return f"{'-' if minor < 0 else ''}{abs(minor) / 100:,.2f} EUR"
