"""Benchmark (b): the idempotent adjustment writer on PostgreSQL, a first write and a replay of it.

    python -m benchmarks.writer --rows 100000 --repeat 3 [--postgres-url URL] [--json]

The rows are what the pipeline would propose: a generated night with many injected findings
(``benchmarks/datagen.py``), diffed, turned into adjustments by ``plan_adjustments``; the first
``--rows`` of them are written. Each run empties the table (TRUNCATE), then times
``sync_adjustments`` (read the partition's rows, plan the lifecycle, one ``INSERT … ON CONFLICT DO
NOTHING … RETURNING`` of what is new, in one transaction, commit included: what the ``adjustments``
asset does) twice: the first write inserts every row, the replay of the same rows must change none.
The database is a scratch one on ``--postgres-url``'s server, dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, func, select, text

from benchmarks.datagen import PROPERTY_ID, generate_night
from benchmarks.environment import add_postgres_url
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.storage.adjustments import sync_adjustments
from recon_pipeline_tests.support.scratch import scratch_database

NIGHT = "2025-03-15"  # the generated night (datagen.NIGHT_START)
FINDING_RATE = 0.5  # of which 4 in 6 propose an adjustment: about n / 3 adjustments


def adjustment_rows(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` distinct adjustment rows of one night, as ``plan_adjustments`` proposes them."""
    night = generate_night(3 * count + 60, FINDING_RATE, seed)
    result = diff_night(night.provider_records, night.ledger_records, night.provider_elsewhere)
    rows = plan_adjustments(PROPERTY_ID, NIGHT, result.findings, "bench-run", datetime.now(UTC))
    if len(rows) < count:
        raise RuntimeError(f"generated {len(rows)} adjustments, fewer than {count}")
    return rows[:count]


def timed_write(engine: Engine, rows: list[dict[str, Any]]) -> tuple[float, int, int]:
    """Seconds of one committed ``sync_adjustments`` of ``rows``, rows new and rows already present."""
    started = time.perf_counter()
    with engine.begin() as connection:
        plan = sync_adjustments(connection, PROPERTY_ID, NIGHT, rows, datetime.now(UTC))
    return time.perf_counter() - started, plan.new, plan.unchanged


def run_once(engine: Engine, rows: list[dict[str, Any]]) -> dict[str, Any]:
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {adjustments.name}"))
    first_s, first_new, _ = timed_write(engine, rows)
    replay_s, replay_new, replay_present = timed_write(engine, rows)
    with engine.connect() as connection:
        stored = connection.execute(select(func.count()).select_from(adjustments)).scalar_one()
    return {
        "first_seconds": round(first_s, 4),
        "first_new": first_new,
        "first_rows_per_second": round(len(rows) / first_s),
        "replay_seconds": round(replay_s, 4),
        "replay_new": replay_new,
        "replay_already_present": replay_present,
        "replay_rows_per_second": round(len(rows) / replay_s),
        "stored": stored,
    }


def benchmark_writer(admin_url: str, rows: int, repeat: int, seed: int = 0) -> dict[str, Any]:
    """``repeat`` first writes and replays of ``rows`` adjustments; medians and every run."""
    planned = adjustment_rows(rows, seed)
    with scratch_database(admin_url, "recon_bench") as url:
        engine = make_engine(url)
        try:
            migrations.upgrade(engine)
            runs = [run_once(engine, planned) for _ in range(repeat)]
        finally:
            engine.dispose()
    first = statistics.median(run["first_seconds"] for run in runs)
    replay = statistics.median(run["replay_seconds"] for run in runs)
    return {
        "rows": rows,
        "repeat": repeat,
        "runs": runs,
        "first_median_s": round(first, 4),
        "first_rows_per_second": round(rows / first),
        "replay_median_s": round(replay, 4),
        "replay_rows_per_second": round(rows / replay),
        "replay_to_first": round(replay / first, 3),
        "every_first_write_inserted_all": all(run["first_new"] == rows for run in runs),
        "every_replay_inserted_none": all(
            run["replay_new"] == 0 and run["replay_already_present"] == rows for run in runs
        ),
        "table_rows_after_each_run": sorted({run["stored"] for run in runs}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="adjustments written (100000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs; medians are reported")
    parser.add_argument("--seed", type=int, default=0)
    add_postgres_url(parser, "the scratch database")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.repeat < 1:
        parser.error("--rows and --repeat must be positive")
    figures = benchmark_writer(args.postgres_url, args.rows, args.repeat, args.seed)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        print(
            f"first write  {args.rows:,} rows in {figures['first_median_s']} s = "
            f"{figures['first_rows_per_second']:,} rows/s"
        )
        print(
            f"replay       {figures['replay_median_s']} s = {figures['replay_rows_per_second']:,} rows/s, "
            f"inserted none: {figures['every_replay_inserted_none']}"
        )
    ok = figures["every_first_write_inserted_all"] and figures["every_replay_inserted_none"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
