"""Every benchmark in one command, written up as ``benchmarks/results.md``.

    python -m benchmarks.run_all [--quick] [--repeat N] [--output PATH] [--json PATH] [--only SUITE ...]

Suites: (a) ``diff`` against datacompy, (b) ``writer``, (c) ``pull`` under a rate limit, (d) ``pipeline``
through Dagster, and the webhook intake (``webhooks``) and event processor (``processor``) benchmarks,
run through their own command lines. ``--quick`` runs every suite at the small sizes CI uses to prove
the suites work (figures from it are not performance figures); the default sizes are the issue's.
Every suite runs even when another fails; the exit status is non-zero if any failed or a check did
not hold. PostgreSQL is the server of ``--postgres-url`` (``RECON_TEST_POSTGRES_URL``); each suite
creates and drops its own scratch databases there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import datacompy_diff, pipeline, provider_pull, writer
from benchmarks.environment import add_postgres_url, load_average, machine, versions
from benchmarks.report import render

BENCHMARKS = Path(__file__).resolve().parent
SUITES = ("diff", "writer", "pull", "pipeline", "webhooks", "processor")
SUBPROCESS_TIMEOUT_S = 3_600


@dataclass(frozen=True)
class Sizes:
    """How big each suite runs."""

    diff_n: tuple[int, ...]
    datacompy_limit_s: float
    writer_rows: int
    pull_rate: float
    pull_properties: int
    pull_records: int
    night_records: int
    backfill_properties: int
    backfill_nights: int
    backfill_bookings: int
    webhook_events: int
    webhook_connections: int
    webhook_workers: int
    processor_events: int
    processor_workers: tuple[int, ...]


FULL = Sizes(
    diff_n=(100_000, 1_000_000, 5_000_000),
    datacompy_limit_s=300,
    writer_rows=100_000,
    pull_rate=25,  # Stripe's test-mode limit
    pull_properties=4,
    pull_records=8_400,
    night_records=8_400,
    backfill_properties=10,
    backfill_nights=30,
    backfill_bookings=200,
    webhook_events=5_000,
    webhook_connections=32,
    webhook_workers=2,
    processor_events=5_000,
    processor_workers=(1, 4),
)
QUICK = Sizes(
    diff_n=(2_000, 20_000),
    datacompy_limit_s=60,
    writer_rows=2_000,
    pull_rate=5,  # low enough that the unpaced control goes over the limit with a handful of requests
    pull_properties=2,
    pull_records=400,
    night_records=300,
    backfill_properties=2,  # a batch of more than one property
    backfill_nights=2,
    backfill_bookings=30,
    webhook_events=100,
    webhook_connections=4,
    webhook_workers=1,
    processor_events=20,
    processor_workers=(1,),
)


def run_diff(sizes: Sizes, repeat: int, postgres_url: str) -> dict[str, Any]:
    return {"cases": [datacompy_diff.compare_at(n, repeat, sizes.datacompy_limit_s) for n in sizes.diff_n]}


def run_writer(sizes: Sizes, repeat: int, postgres_url: str) -> dict[str, Any]:
    return writer.benchmark_writer(postgres_url, sizes.writer_rows, repeat)


def run_pull(sizes: Sizes, repeat: int, postgres_url: str) -> dict[str, Any]:
    return provider_pull.benchmark_pull(sizes.pull_properties, sizes.pull_records, sizes.pull_rate, repeat)


def run_pipeline(sizes: Sizes, repeat: int, postgres_url: str) -> dict[str, Any]:
    return {
        "night": pipeline.benchmark_night(postgres_url, sizes.night_records, repeat),
        "backfill": pipeline.benchmark_backfill(
            postgres_url, sizes.backfill_properties, sizes.backfill_nights, sizes.backfill_bookings
        ),
    }


def run_webhooks(sizes: Sizes, repeat: int, postgres_url: str) -> dict[str, Any]:
    """``benchmarks/webhooks.py`` run ``repeat`` times; medians of its rates and latencies."""
    command = ["--events", str(sizes.webhook_events), "--connections", str(sizes.webhook_connections)]
    command += ["--workers", str(sizes.webhook_workers), "--postgres-url", postgres_url]
    runs = [_script_json("webhooks.py", command) for _ in range(repeat)]
    medians = {
        name: statistics.median(run[name] for run in runs)
        for name in ("accepted_per_second", "stored_per_second", "p50_ms", "p99_ms")
    }
    exact = all(
        run["stored"] == run["stored_sent"] == run["stored_processing"] == run["distinct_sent"]
        for run in runs
    )
    return {
        "events": sizes.webhook_events,
        "requests": runs[0]["requests"],
        "connections": sizes.webhook_connections,
        "workers": sizes.webhook_workers,
        "repeat": repeat,
        "runs": [{name: run[name] for name in medians} for run in runs],
        **medians,
        "refused": sum(run["refused"] for run in runs),
        "every_event_stored_once": exact,
    }


def run_processor(sizes: Sizes, repeat: int, postgres_url: str) -> dict[str, Any]:
    """``benchmarks/processor.py`` run ``repeat`` times; median events/s per worker count."""
    command = ["--n", str(sizes.processor_events), "--workers", *map(str, sizes.processor_workers)]
    command += ["--postgres-url", postgres_url]
    outputs = [_script_json("processor.py", command) for _ in range(repeat)]
    by_workers: dict[int, list[dict[str, Any]]] = {}
    for output in outputs:
        for run in output["runs"]:
            by_workers.setdefault(run["workers"], []).append(run)
    return {
        "events": sizes.processor_events,
        "repeat": repeat,
        "workers": [
            {
                "workers": workers,
                "events_per_second": statistics.median(r["events_per_second"] or 0 for r in runs),
                "wall_median_s": statistics.median(r["wall_seconds"] for r in runs),
                "every_event_processed": all(r["processed"] == sizes.processor_events for r in runs),
            }
            for workers, runs in sorted(by_workers.items())
        ],
    }


RUNNERS: dict[str, Callable[[Sizes, int, str], dict[str, Any]]] = {
    "diff": run_diff,
    "writer": run_writer,
    "pull": run_pull,
    "pipeline": run_pipeline,
    "webhooks": run_webhooks,
    "processor": run_processor,
}


def _script_json(script: str, arguments: list[str]) -> dict[str, Any]:
    """The JSON line a benchmark script prints with ``--json``; RuntimeError with its stderr if it fails."""
    completed = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *arguments, "--json"],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{script} exited {completed.returncode}: {completed.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def run_suites(names: list[str], sizes: Sizes, repeat: int, postgres_url: str) -> dict[str, Any]:
    """Each suite's figures (or its error) and wall time, in order."""
    results: dict[str, Any] = {}
    for name in names:
        print(f"[run_all] {name} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            results[name] = {"figures": RUNNERS[name](sizes, repeat, postgres_url)}
        except Exception as error:  # a failed suite is reported; the others still run
            traceback.print_exc()
            results[name] = {"error": f"{type(error).__name__}: {error}"[:2000]}
        results[name]["seconds"] = round(time.perf_counter() - started, 1)
        print(f"[run_all] {name} done in {results[name]['seconds']} s", file=sys.stderr, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI sizes: proves the suites work, in seconds")
    parser.add_argument("--repeat", type=int, help="runs per measurement, medians reported (3; quick: 1)")
    parser.add_argument("--output", type=Path, default=BENCHMARKS / "results.md", help="the markdown report")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")
    parser.add_argument("--only", nargs="+", choices=SUITES, help="run only these suites")
    add_postgres_url(parser)
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    if repeat < 1:
        parser.error("--repeat must be positive")
    sizes = QUICK if args.quick else FULL
    names = [name for name in SUITES if args.only is None or name in args.only]
    started_at, load_before = datetime.now(UTC), load_average()
    suites = run_suites(names, sizes, repeat, args.postgres_url)
    results = {
        "command": " ".join(["python -m benchmarks.run_all", *(argv if argv is not None else sys.argv[1:])]),
        "started_at": started_at.isoformat(timespec="seconds"),
        "quick": args.quick,
        "repeat": repeat,
        "sizes": asdict(sizes),
        "machine": machine(),
        "load_average": {"start": load_before, "end": load_average()},
        "versions": versions(args.postgres_url),
        "suites": suites,
    }
    markdown, checks_hold = render(results)
    args.output.write_text(markdown)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True, default=str))
    print(f"[run_all] wrote {args.output}", file=sys.stderr)
    failed = [name for name, suite in suites.items() if "error" in suite]
    return 0 if not failed and checks_hold else 1


if __name__ == "__main__":
    raise SystemExit(main())
