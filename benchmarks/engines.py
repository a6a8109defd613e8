"""Benchmark: ``diff_night`` against DuckDB computing the same findings on the same night, in turns.

    python -m benchmarks.engines --n 1000000 5000000 [--repeat 5] [--threads 2] [--json]

Issue 26 asks the diff to stay at or ahead of the best engine on the six categories it reports, so the
peer here is an engine, not a comparison library (``benchmarks/datacompy_diff.py``): DuckDB scanning the
same pandas frames (``register``, no copy into DuckDB's storage), on ``--threads`` threads, and answering
with the (category, record_key) of every finding by the rules of ``reconcile/diff.py``:

- ``missing_in_ledger``: a settled record whose (id, kind) no keyed ledger entry names;
- ``amount_mismatch`` / ``currency_mismatch``: a settled record whose primary entry (earliest posted, then
  smallest entry_id, of its (id, kind)) is in-night, in another amount / another currency;
- ``status_mismatch``: an unsettled record whose primary entry is in-night;
- the same three for an in-night primary entry that no record of the night names but one of
  ``provider_elsewhere`` does (a late entry); ``missing_at_provider`` when neither does;
- ``missing_at_provider`` also for every in-night entry without a provider id (adjustments excluded);
- ``duplicate_in_ledger``: every in-night keyed entry of a group other than its primary.

The generated night has no currency conversions (its settlement columns are null), so the FX rules
(``fx_difference``, the settlement figure) have nothing to find and the SQL leaves them out; the script
checks the night holds none. Both sides are timed from the contract frames to their findings: the diff
also builds each finding's row and sentence and the night's totals, DuckDB only the keys (in its favour).
The two run in turns, the one going first alternating, after an untimed warm-up of each; the ratio is
the median of each turn's DuckDB / diff (above 1: the diff is ahead). Both must find the same
(category, record_key) set, and the script fails if they do not.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from typing import Any, Final

from benchmarks.datagen import DIFF_CATEGORIES, SyntheticNight, generate_night
from recon_pipeline.reconcile.diff import diff_night

INSTALL_HINT: Final = "duckdb is not installed: pip install -e '.[bench]' (or: pip install duckdb)"

Findings = set[tuple[str, str]]

# The rules of reconcile/diff.py in SQL, over the three frames registered as provider, ledger, elsewhere.
FINDINGS_SQL: Final = """
WITH keyed AS (
    SELECT provider_record_id AS rid, kind, entry_id, amount_minor, currency, in_night,
           row_number() OVER (
               PARTITION BY provider_record_id, kind ORDER BY posted_at ASC NULLS LAST, entry_id
           ) AS rank
    FROM ledger
    WHERE kind <> 'adjustment' AND provider_record_id IS NOT NULL
),
primaries AS (SELECT * FROM keyed WHERE rank = 1),
pairs AS (
    SELECT p.provider_record_id AS rid, p.kind, p.settled, p.amount_minor AS paid, p.currency AS paid_in,
           k.entry_id, k.amount_minor AS posted, k.currency AS posted_in, k.in_night
    FROM provider p LEFT JOIN primaries k ON k.rid = p.provider_record_id AND k.kind = p.kind
),
late AS (
    SELECT k.rid, k.kind, k.amount_minor AS posted, k.currency AS posted_in,
           e.provider_record_id IS NOT NULL AS found, e.settled, e.amount_minor AS paid, e.currency AS paid_in
    FROM primaries k
    ANTI JOIN provider p ON p.provider_record_id = k.rid AND p.kind = k.kind
    LEFT JOIN elsewhere e ON e.provider_record_id = k.rid AND e.kind = k.kind
    WHERE k.in_night
)
SELECT 'missing_in_ledger' AS category, rid || ':' || kind AS record_key FROM pairs
    WHERE settled AND entry_id IS NULL
UNION ALL SELECT 'amount_mismatch', rid || ':' || kind FROM pairs
    WHERE settled AND in_night AND paid_in = posted_in AND paid <> posted
UNION ALL SELECT 'currency_mismatch', rid || ':' || kind FROM pairs
    WHERE settled AND in_night AND paid_in <> posted_in
UNION ALL SELECT 'status_mismatch', rid || ':' || kind FROM pairs
    WHERE NOT settled AND in_night
UNION ALL SELECT 'missing_at_provider', rid || ':' || kind FROM late WHERE NOT found
UNION ALL SELECT 'amount_mismatch', rid || ':' || kind FROM late
    WHERE found AND settled AND paid_in = posted_in AND paid <> posted
UNION ALL SELECT 'currency_mismatch', rid || ':' || kind FROM late
    WHERE found AND settled AND paid_in <> posted_in
UNION ALL SELECT 'status_mismatch', rid || ':' || kind FROM late WHERE found AND NOT settled
UNION ALL SELECT 'missing_at_provider', 'entry:' || entry_id FROM ledger
    WHERE in_night AND kind <> 'adjustment' AND provider_record_id IS NULL
UNION ALL SELECT 'duplicate_in_ledger', rid || ':' || kind || ':dup:' || entry_id FROM keyed
    WHERE rank > 1 AND in_night
"""


def _duckdb() -> Any:
    """The duckdb module, or exit with the one line that says how to install it."""
    try:
        import duckdb
    except ImportError:
        raise SystemExit(INSTALL_HINT) from None
    return duckdb


def diff_findings(night: SyntheticNight) -> Findings:
    """The (category, record_key) of every finding of ``diff_night`` on the night."""
    result = diff_night(night.provider_records, night.ledger_records, night.provider_elsewhere)
    found = result.findings
    return set(zip(found["category"], found["record_key"], strict=True))


def duckdb_findings(night: SyntheticNight, threads: int = 2, connection: Any = None) -> Findings:
    """The (category, record_key) of every finding by the diff's rules, computed by DuckDB's pandas scan."""
    con = connection if connection is not None else new_connection(threads)
    con.register("provider", night.provider_records)
    con.register("ledger", night.ledger_records)
    con.register("elsewhere", night.provider_elsewhere)
    categories, keys = con.execute(FINDINGS_SQL).fetchnumpy().values()
    return set(zip(categories.tolist(), keys.tolist(), strict=True))


def new_connection(threads: int) -> Any:
    con = _duckdb().connect()
    con.execute(f"SET threads = {int(threads)}")
    return con


def _check_comparable(night: SyntheticNight) -> None:
    """The SQL leaves the FX rules out: the night must hold no conversion for the comparison to be fair."""
    for frame in (night.provider_records, night.provider_elsewhere):
        if frame["settlement_amount_minor"].notna().any():
            raise ValueError("the night holds currency conversions; the SQL does not state the FX rules")


def compare_at(n: int, repeat: int, threads: int = 2, seed: int = 0) -> dict[str, Any]:
    """Both engines ``repeat`` times in turns on one generated night of ``n`` provider records."""
    night = generate_night(n, seed=seed)
    _check_comparable(night)
    con = new_connection(threads)
    ours_found, theirs_found = diff_findings(night), duckdb_findings(night, connection=con)  # warm-up
    if ours_found != theirs_found:
        raise AssertionError(
            f"the engines disagree at n={n}: {len(ours_found - theirs_found)} findings only the diff makes, "
            f"{len(theirs_found - ours_found)} only DuckDB: {sorted(ours_found ^ theirs_found)[:5]}"
        )
    ours: list[float] = []
    theirs: list[float] = []
    for turn in range(repeat):
        for engine in ("diff", "duckdb") if turn % 2 == 0 else ("duckdb", "diff"):
            gc.collect()
            started = time.perf_counter()
            if engine == "diff":
                diff_findings(night)
            else:
                duckdb_findings(night, connection=con)
            (ours if engine == "diff" else theirs).append(time.perf_counter() - started)
    by_category: dict[str, int] = {category: 0 for category in DIFF_CATEGORIES}
    for category, _ in ours_found:
        by_category[category] = by_category.get(category, 0) + 1
    return {
        "n": n,
        "ledger_rows": len(night.ledger_records),
        "repeat": repeat,
        "threads": threads,
        "duckdb_version": _duckdb().__version__,
        "diff_seconds": [round(s, 4) for s in ours],
        "duckdb_seconds": [round(s, 4) for s in theirs],
        "diff_median_s": round(statistics.median(ours), 4),
        "duckdb_median_s": round(statistics.median(theirs), 4),
        # above 1: the diff is ahead
        "ratio": round(statistics.median(t / o for o, t in zip(ours, theirs, strict=True)), 3),
        "findings": len(ours_found),
        "by_category": by_category,
        "same_findings": ours_found == theirs_found,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000], help="provider records")
    parser.add_argument("--repeat", type=int, default=5, help="turns; medians are reported")
    parser.add_argument("--threads", type=int, default=2, help="DuckDB's threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON line per N")
    args = parser.parse_args(argv)
    if min(args.n) < 100 or args.repeat < 1 or args.threads < 1:
        parser.error("--n ≥ 100, --repeat ≥ 1 and --threads ≥ 1")
    _duckdb()
    for n in args.n:
        figures = compare_at(n, args.repeat, args.threads, args.seed)
        if args.json:
            print(json.dumps(figures, sort_keys=True), flush=True)
            continue
        print(
            f"N={n:>9,}  diff {figures['diff_median_s']:.3f} s  "
            f"duckdb ({args.threads} threads) {figures['duckdb_median_s']:.3f} s  "
            f"duckdb/diff {figures['ratio']:.2f}x (median of {args.repeat} turns)  "
            f"findings {figures['findings']:,}, same: {figures['same_findings']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
