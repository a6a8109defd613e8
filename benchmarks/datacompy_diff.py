"""Benchmark (a): ``diff_night`` side by side with datacompy on the same generated nights, in one process.

    python -m benchmarks.datacompy_diff --n 100000 1000000 --repeat 3 [--limit-s 300] [--json]

Both tools see the frames of one generated night (``benchmarks/datagen.py``, 1% injected findings),
and the runs alternate (ours, datacompy, ours, ...) so that load from other processes hits both alike.

- ``diff_night`` is timed from the raw contract frames, doing all of its work: it matches provider
  records and ledger entries on (record id, kind), including the adjacent nights' entries and the
  records found on other nights, and classifies missing-on-either-side, amount, currency and status
  mismatches, duplicates and timing differences into the findings frame, each with its detail text.
- datacompy (``PandasCompare`` + ``all_mismatch()``) is timed on inputs already cut down, untimed, to
  what it can compare: the provider's (id, kind, amount, currency, settled) and the in-night ledger
  entries that carry a provider id, adjustments excluded, with ``settled=True`` (a booked entry says the
  money moved). It outer-joins on (id, kind), numbering duplicate keys, compares the three columns
  pair by pair, and collects the unmatched rows of both sides and every mismatching pair.

The preparation left untimed and the classification datacompy does not do both favour datacompy.
As a check that both did the same comparison, datacompy's mismatch counts per column must equal the
diff's amount, currency and status findings. datacompy runs under a time limit per run (SIGALRM,
checked between its pandas steps); a run over it is reported as over the limit and not repeated.
"""

from __future__ import annotations

import argparse
import gc
import json
import signal
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import datacompy
import pandas as pd

from benchmarks.datagen import SyntheticNight, generate_night
from benchmarks.diff import time_diff
from recon_pipeline.categories import AMOUNT_MISMATCH, CURRENCY_MISMATCH, STATUS_MISMATCH

KEY = ["provider_record_id", "kind"]
COMPARED = {"amount_minor": AMOUNT_MISMATCH, "currency": CURRENCY_MISMATCH, "settled": STATUS_MISMATCH}
DEFAULT_LIMIT_S = 300.0


class OverLimit(Exception):
    """A datacompy run exceeded its time limit."""


def datacompy_inputs(night: SyntheticNight) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fresh copies of what datacompy compares (it rewrites its inputs' join columns in place)."""
    provider = night.provider_records[[*KEY, *COMPARED]].copy()
    ledger = night.ledger_records
    booked = ledger["in_night"] & (ledger["kind"] != "adjustment") & ledger["provider_record_id"].notna()
    entries = ledger.loc[booked, [*KEY, "amount_minor", "currency"]].reset_index(drop=True)
    entries["settled"] = True
    return provider, entries


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise OverLimit in the main thread once ``seconds`` have passed (at the next Python bytecode)."""

    def expire(signum: int, frame: Any) -> None:
        raise OverLimit(f"over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def time_datacompy(night: SyntheticNight, limit_s: float) -> tuple[float, dict[str, int]]:
    """Seconds of one datacompy comparison and its mismatch count per compared column."""
    provider, entries = datacompy_inputs(night)
    gc.collect()
    with time_limit(limit_s):
        started = time.perf_counter()
        compare = datacompy.PandasCompare(provider, entries, join_columns=KEY)
        mismatches = compare.all_mismatch()
        seconds = time.perf_counter() - started
    unequal = {str(stat["column"]): int(stat["unequal_cnt"]) for stat in compare.column_stats}
    counts = {column: unequal[column] for column in COMPARED}
    counts.update(
        mismatching_pairs=len(mismatches),
        provider_only=len(compare.df1_unq_rows),
        ledger_only=len(compare.df2_unq_rows),
    )
    return seconds, counts


def compare_at(n: int, repeat: int, limit_s: float = DEFAULT_LIMIT_S, seed: int = 0) -> dict[str, Any]:
    """Both tools ``repeat`` times on one generated night of ``n`` provider records."""
    night = generate_night(n, seed=seed)
    ours: list[float] = []
    theirs: list[float] = []
    their_counts: dict[str, int] = {}
    over_limit = False
    for _ in range(repeat):
        gc.collect()
        seconds, result = time_diff(night, 1)
        ours += seconds
        if over_limit:
            continue
        try:
            run_seconds, their_counts = time_datacompy(night, limit_s)
        except OverLimit:
            over_limit = True
        else:
            theirs.append(run_seconds)
    found = result.findings["category"].value_counts()
    our_counts = {column: int(found.get(category, 0)) for column, category in COMPARED.items()}
    diff_median = statistics.median(ours)
    datacompy_median = statistics.median(theirs) if theirs else None
    return {
        "n": n,
        "ledger_rows": len(night.ledger_records),
        "repeat": repeat,
        "diff_seconds": [round(s, 4) for s in ours],
        "datacompy_seconds": [round(s, 4) for s in theirs],
        "diff_median_s": round(diff_median, 4),
        "datacompy_median_s": None if datacompy_median is None else round(datacompy_median, 4),
        "datacompy_over_limit": over_limit,
        "datacompy_limit_s": limit_s,
        # over the limit, the limit itself gives a lower bound of the ratio
        "ratio": round((datacompy_median or limit_s) / diff_median, 2),
        "diff_rows_per_second": round(n / diff_median),
        "diff_findings": len(result.findings),
        "diff_mismatches": our_counts,
        "datacompy_counts": their_counts,
        "counts_agree": all(their_counts[c] == our_counts[c] for c in COMPARED) if their_counts else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000], help="provider records")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each tool; medians are reported")
    parser.add_argument("--limit-s", type=float, default=DEFAULT_LIMIT_S, help="time limit per datacompy run")
    parser.add_argument("--json", action="store_true", help="print one JSON line per N")
    args = parser.parse_args(argv)
    if min(args.n) < 100 or args.repeat < 1 or args.limit_s <= 0:
        parser.error("--n ≥ 100, --repeat ≥ 1 and --limit-s > 0")
    for n in args.n:
        figures = compare_at(n, args.repeat, args.limit_s)
        if args.json:
            print(json.dumps(figures, sort_keys=True), flush=True)
            continue
        theirs = figures["datacompy_median_s"]
        their_time = f">{args.limit_s:g}" if theirs is None else f"{theirs:.3f}"
        print(
            f"N={n:>9,}  diff {figures['diff_median_s']:.3f} s  datacompy {their_time} s  "
            f"ratio {'≥' if theirs is None else ''}{figures['ratio']}x  "
            f"counts agree: {figures['counts_agree']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
