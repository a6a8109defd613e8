"""The bounded integer every command-line entry point reads: the ``recon`` commands (``cli_args.py``) and
the standalone event worker (``events/worker.py``), so a count or id means the same bounds in both.

An argparse ``type=`` helper: a refusal raises ``ArgumentTypeError`` with a message that says what the
value must be, which the parser prints as one line naming the option.
"""

from __future__ import annotations

import argparse


def bounded_integer(text: str, minimum: int, maximum: int, what: str) -> int:
    """``text`` as an integer from ``minimum`` to ``maximum``; ``what`` names it in the refusal."""
    # Digits only (int() would also take ' 7' and '7_000'), and no more of them than the maximum has.
    digits = text.removeprefix("-")
    short = digits.isascii() and digits.isdigit() and len(digits) <= len(str(maximum))
    if not short or not minimum <= int(text) <= maximum:
        raise argparse.ArgumentTypeError(f"{what} is an integer from {minimum} to {maximum}, not {text!r}")
    return int(text)
