"""Benchmark of ``diff_night`` alone on a generated night: median seconds, rows/s and peak RSS.

    python benchmarks/diff.py --n 1000000 --repeat 3 [--json] [--matcher]

Also timed apart: the identity mapping the ``reconciliation`` asset runs before the diff
(``payment_aliases`` + ``canonical_ledger``), on the same ledger rewritten to name every payment and fee
by its PaymentIntent id, as most current Stripe integrations book; the diff of the mapped ledger must find
exactly what the charge-id ledger finds.

With ``--matcher``, also timed: the matcher then the diff (``match_night``, then ``diff_night`` on what it
hands on, plus its findings), as a night of a property whose ledger needs matching runs, against the diff
alone (issue 26's target: within 2x of the diff alone). The two run in turns, and the ratio is the median
of each turn's. The night is keyed (every payment and fee under its provider id), so the two must find the
same.

Rows/s counts ``n`` (the provider records; the ledger holds about as many entries) over the median
time; input rows/s counts both sides (provider records + ledger entries), which is what the diff reads.
Generation is not timed. Peak RSS is the whole process's (generation included), from getrusage,
which Linux reports in KiB.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.datagen import SyntheticNight, generate_night  # noqa: E402
from recon_pipeline.reconcile.diff import DiffResult, diff_night, with_findings  # noqa: E402
from recon_pipeline.reconcile.identity import canonical_ledger, payment_aliases  # noqa: E402
from recon_pipeline.reconcile.matching import match_night  # noqa: E402


def time_diff(night: SyntheticNight, repeat: int) -> tuple[list[float], DiffResult]:
    """Seconds of each of ``repeat`` runs of ``diff_night`` on the night, and the last run's result."""
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = diff_night(night.provider_records, night.ledger_records, night.provider_elsewhere)
        seconds.append(time.perf_counter() - started)
    return seconds, result


def time_identity(night: SyntheticNight, repeat: int) -> tuple[list[float], DiffResult]:
    """Seconds of each run of the identity mapping of a ledger booking by PaymentIntent id, and the diff
    of the mapped ledger (to check it finds what the charge-id ledger finds)."""
    provider = night.provider_records
    intent_of = dict(zip(provider["charge_id"], provider["payment_intent_id"], strict=True))
    ledger = night.ledger_records.copy()
    by_charge = ledger["kind"].isin(("payment", "fee")).to_numpy()
    ids = ledger["provider_record_id"].to_numpy(dtype=object).copy()
    ids[by_charge] = [intent_of.get(record_id) or record_id for record_id in ids[by_charge]]
    ledger["provider_record_id"] = ids
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        mapped = canonical_ledger(ledger, payment_aliases(provider, night.provider_elsewhere))
        seconds.append(time.perf_counter() - started)
    return seconds, diff_night(provider, mapped, night.provider_elsewhere)


def time_matcher(night: SyntheticNight, repeat: int) -> tuple[list[float], list[float], DiffResult]:
    """Seconds of each run of the diff alone and of the matcher then the diff, run in turns (so that a
    shared host's load weighs on both alike), and the last matcher run's result with its findings."""
    alone, matched = [], []
    for _ in range(repeat):
        alone.extend(time_diff(night, 1)[0])
        started = time.perf_counter()
        outcome = match_night(night.provider_records, night.ledger_records)
        result = diff_night(outcome.provider_records, outcome.ledger, night.provider_elsewhere)
        result = with_findings(result, outcome.findings)
        matched.append(time.perf_counter() - started)
    return alone, matched, result


def _matcher_figures(night: SyntheticNight, repeat: int, diff: DiffResult) -> dict[str, Any]:
    """The matcher's median, and its ratio to the diff alone: the median of each turn's ratio."""
    alone, matched, result = time_matcher(night, repeat)
    return {
        "matcher_median_seconds": round(statistics.median(matched), 4),
        "matcher_runs": [round(run, 4) for run in matched],
        "matcher_diff_alone_runs": [round(run, 4) for run in alone],
        "matcher_ratio": round(statistics.median(m / a for m, a in zip(matched, alone, strict=True)), 3),
        "matcher_same_findings": result.findings[["category", "record_key"]].equals(
            diff.findings[["category", "record_key"]]
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="provider records in the night")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs; the median is reported")
    parser.add_argument("--rate", type=float, default=0.01, help="share of rows with an injected finding")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    parser.add_argument(
        "--matcher", action="store_true", help="also time match_night + diff_night against the diff alone"
    )
    args = parser.parse_args(argv)
    if args.n < 1 or args.repeat < 1:
        parser.error("--n and --repeat must be positive")

    night = generate_night(args.n, args.rate, args.seed)
    seconds, result = time_diff(night, args.repeat)
    median = statistics.median(seconds)
    identity_seconds, by_intent = time_identity(night, args.repeat)
    figures = {
        "n": args.n,
        "ledger_rows": len(night.ledger_records),
        "repeat": args.repeat,
        "median_seconds": round(median, 4),
        "rows_per_second": round(args.n / median),
        "input_rows_per_second": round((args.n + len(night.ledger_records)) / median),
        "discrepancies": len(result.findings),
        "injected": sum(night.injected.values()),
        "by_category": {str(k): int(v) for k, v in result.findings["category"].value_counts().items()},
        "identity_median_seconds": round(statistics.median(identity_seconds), 4),
        "identity_same_findings": by_intent.findings[["category", "record_key"]].equals(
            result.findings[["category", "record_key"]]
        ),
    }
    if args.matcher:
        figures |= _matcher_figures(night, args.repeat, result)
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        print(
            f"N                  {figures['n']:,} provider records, {figures['ledger_rows']:,} ledger entries"
        )
        runs = ", ".join(f"{run:.3f}" for run in seconds)
        print(f"diff_night median  {median:.3f} s over {args.repeat} runs ({runs})")
        print(
            f"throughput         {figures['rows_per_second']:,} rows/s of N; "
            f"{figures['input_rows_per_second']:,} input rows/s (both sides)"
        )
        print(f"discrepancies      {figures['discrepancies']:,} (injected {figures['injected']:,})")
        print(
            f"identity mapping   {figures['identity_median_seconds']:.3f} s median (ledger booked by "
            f"PaymentIntent id; same findings as by charge id: {figures['identity_same_findings']})"
        )
        if args.matcher:
            print(
                f"matcher + diff     {figures['matcher_median_seconds']:.3f} s median, "
                f"{figures['matcher_ratio']:.2f}x the diff alone in the same turns "
                f"(same findings: {figures['matcher_same_findings']})"
            )
        print(f"peak RSS           {figures['peak_rss_mb']:,} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
