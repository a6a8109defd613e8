"""Benchmark (issue 15): postings per second through the ``http`` posting adapter against the PMS
simulator enforcing a rate limit, and the duplicates it stored (there must be none).

    python -m benchmarks.postings [--postings 600] [--rate 50] [--threads 8] [--json]

The simulator (``simulation/pms/``, served here on 127.0.0.1) answers over ``--rate`` charges a second with
429 and ``Retry-After`` (its token bucket is one second deep); ``--threads`` threads post ``--postings``
distinct adjustments straight through one ``HttpPostingAdapter`` (the outbox's drain is not on this
branch; it calls the same adapter with its own bounded concurrency). The adapter waits each 429 out and
sends again, which is safe because a 429 was never accepted.

Figures: the overall rate (postings over the wall time, flattered by the bucket's first full second) and
the steady rate after the first ``--rate`` postings (what the limit allows once the burst is spent), each
as a share of the limit; the 429s; and from the simulator's counters, the postings stored (must equal
``--postings``) and the duplicates refused (must be 0: nothing was sent twice after being accepted).
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from recon_pipeline.keys import adjustment_id, adjustment_idempotency_key
from recon_pipeline.postings.adapter import Posting, PostingOutcome
from recon_pipeline.postings.http_adapter import HttpPostingAdapter
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.pms.app import build_pms_app

API_KEY = "benchmark_pms_key"


def _posting(index: int) -> Posting:
    night = f"2026-11-{1 + index % 28:02d}"
    key = adjustment_idempotency_key(f"hotel_{index % 20}", night, "missing_in_ledger", f"ch_{index:06d}")
    return Posting(
        idempotency_key=key,
        adjustment_id=adjustment_id(key),
        property_id=f"hotel_{index % 20}",
        night=night,
        booking_id=None,
        provider_record_id=f"ch_{index:06d}",
        amount_minor=-(100 + index),
        currency="EUR",
        description=f"Reconciliation adjustment {index}",
    )


def benchmark(postings: int, rate: float, threads: int) -> dict[str, Any]:
    app = build_pms_app(API_KEY, faults={"rate_limit_rps": rate})
    with (
        ServerThread(app) as server,
        HttpPostingAdapter(server.base_url, API_KEY, timeout_s=10.0, rate_limit_budget_s=60.0) as adapter,
    ):

        def post(index: int) -> tuple[PostingOutcome, float]:
            result = adapter.post(_posting(index))
            return result.outcome, time.perf_counter()

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=threads) as pool:
            results = list(pool.map(post, range(postings)))
        elapsed = time.perf_counter() - started
        counts = app.state.store.counts()
        stats = app.state.faults.stats()
    outcomes = [outcome for outcome, _ in results]
    finished = sorted(at for _, at in results)
    burst = min(int(rate), postings - 1)
    steady_s = finished[-1] - finished[burst - 1] if burst >= 1 else elapsed
    steady_rate = (postings - burst) / steady_s if steady_s > 0 else float("inf")
    return {
        "postings": postings,
        "rate_limit_per_s": rate,
        "threads": threads,
        "posted": outcomes.count(PostingOutcome.POSTED),
        "not_posted": len(outcomes) - outcomes.count(PostingOutcome.POSTED),
        "elapsed_s": round(elapsed, 2),
        "overall_per_s": round(postings / elapsed, 1),
        "overall_share": round(postings / elapsed / rate, 3),
        "steady_per_s": round(steady_rate, 1),
        "steady_share": round(steady_rate / rate, 3),
        "rate_limited_429": stats["rate_limited"],
        "stored": counts["postings_stored"],
        "duplicates_refused": counts["duplicates_refused"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postings", type=int, default=600)
    parser.add_argument("--rate", type=float, default=50.0, help="the simulator's rate limit (charges/s)")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    args = parser.parse_args(argv)
    if args.postings < 2 or args.threads < 1 or args.rate <= 0:
        parser.error("--postings must be at least 2, --threads at least 1, --rate positive")
    figures = benchmark(args.postings, args.rate, args.threads)
    if args.json:
        print(json.dumps(figures))
    else:
        for name, value in figures.items():
            print(f"{name:>20}  {value}")
    ok = (
        figures["steady_share"] >= 0.9
        and figures["stored"] == args.postings
        and figures["duplicates_refused"] == 0
        and figures["not_posted"] == 0
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
