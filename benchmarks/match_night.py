"""Benchmark of the matcher (``match_night``) before the diff, on a generated night: median seconds.

    python benchmarks/match_night.py --n 100000 --repeat 3 [--json]

Two shapes of the same generated night (benchmarks/datagen.py):

- *keyed*: every entry names its provider record (the night's few manual entries dropped). The matcher
  must hand the frames on at the cost of a null check: ``match_seconds`` next to ``diff_seconds``.
- *unkeyed*: the PMS kept no provider id at all (every payment, fee and refund entry's id removed; the
  booking, amount and time stay), so every pairing goes through the tiers. Its findings differ from the
  keyed night's where only an id told them apart (a duplicate posting is an ambiguity; an amount or
  currency mismatch without card or approval code is a missing pair): the counts are reported, not
  compared.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd  # noqa: E402

from benchmarks.datagen import generate_night  # noqa: E402
from recon_pipeline.reconcile.diff import diff_night  # noqa: E402
from recon_pipeline.reconcile.matching import match_night  # noqa: E402


def _median(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    seconds, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result


def shapes(n: int, seed: int = 0) -> tuple[Any, pd.DataFrame, pd.DataFrame]:
    """The generated night, its keyed ledger and its unkeyed (PMS-style) ledger."""
    night = generate_night(n, seed=seed)
    ledger = night.ledger_records
    manual = ledger["provider_record_id"].isna() & (ledger["kind"] != "adjustment")
    keyed = ledger[~manual].reset_index(drop=True)
    unkeyed = keyed.copy()
    unkeyed.loc[unkeyed["kind"] != "adjustment", "provider_record_id"] = None
    return night, keyed, unkeyed


def measure(n: int, repeat: int) -> dict[str, Any]:
    night, keyed, unkeyed = shapes(n)
    records, elsewhere = night.provider_records, night.provider_elsewhere
    figures: dict[str, Any] = {"n": n, "ledger_rows": len(keyed)}
    diff_keyed, keyed_result = _median(lambda: diff_night(records, keyed, elsewhere), repeat)
    match_keyed, outcome = _median(lambda: match_night(records, keyed), repeat)
    figures |= {"keyed": {"diff_seconds": diff_keyed, "match_seconds": match_keyed}}
    assert outcome.ledger is keyed and outcome.provider_records is records
    match_unkeyed, outcome = _median(lambda: match_night(records, unkeyed), repeat)
    diff_unkeyed, result = _median(
        lambda: diff_night(outcome.provider_records, outcome.ledger, elsewhere), repeat
    )
    before = set(
        zip(keyed_result.findings["category"], keyed_result.findings["record_key"], strict=True)
    )
    after = set(zip(result.findings["category"], result.findings["record_key"], strict=True))
    figures["unkeyed"] = {
        "match_seconds": match_unkeyed,
        "diff_seconds": diff_unkeyed,
        "matches_by_rule": {rule: count for rule, count in outcome.counts_by_rule.items() if count},
        "held_back_findings": len(outcome.findings),
        "findings_keyed": len(before),
        "findings_unkeyed": len(after),
        "findings_in_both": len(before & after),
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    figures = measure(arguments.n, arguments.repeat)
    print(json.dumps(figures, indent=None if arguments.json else 2))


if __name__ == "__main__":
    main()
