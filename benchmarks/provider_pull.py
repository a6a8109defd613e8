"""Benchmark (c): provider pull throughput against the simulator at a set rate limit, with zero 429s.

    python -m benchmarks.provider_pull --rate 25 --properties 4 --records 8400 --repeat 3 [--json]

The simulator (``recon_pipeline/simulation/host``, served over HTTP on 127.0.0.1 in this process) enforces
``--rate`` requests per second with a token bucket one second deep (``rate_limit_rps``); over it, it
answers 429 with ``Retry-After``. ``--properties`` property-nights of about ``--records`` provider
records each are pulled at once, one thread each, through one ``ProviderHttp`` (``max_concurrency`` 8)
paced at the same ``--rate`` (``max_rps``, as ``RECON_PROVIDER_MAX_RPS`` sets it) with
``StripeAdapter.pull_night``. Throughput is records per second of wall time, and request starts per
second (n requests are n - 1 intervals of the pace) over the limit is the utilisation. A property
without a connected account is attributed by metadata, so its pull pages through every platform charge
of the window, other properties' too. "Zero 429s" means the simulator answered no request with 429:
the client never went over the provider's limit, so it never paid a ``Retry-After``.

A control pull of the same nights without client pacing (once, first) shows that the limit binds: it
is answered with 429s, and pays their ``Retry-After``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.worlds import (
    LAST_NIGHT,
    bench_properties,
    bookings_for_records,
    build_nights,
    night_record_count,
)
from recon_pipeline.nights import night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.errors import IncompletePullError
from recon_pipeline.providers.http import ProviderHttp, RetryPolicy
from recon_pipeline.providers.stripe.client import PropertyAccount, StripeAdapter
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.world import World
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline.simulation.host.faults import FaultSwitches

MAX_CONCURRENCY = 8
# Enough attempts that the unpaced control mostly survives its 429s and shows their cost; a paced pull
# never retries (a retry would show as a 429 in the simulator's counts).
PULL_RETRY = RetryPolicy(max_attempts=10, max_retry_after_s=5)


def pull_world(properties: int, records: int) -> tuple[World, tuple[PropertyRow, ...]]:
    """``properties`` property-nights of about ``records`` provider records each, in one world."""
    props = bench_properties(properties)
    bookings = bookings_for_records(props[0], LAST_NIGHT, records)
    return build_nights(props, [LAST_NIGHT], bookings), props


def pull_once(
    base_url: str, faults: FaultSwitches, props: tuple[PropertyRow, ...], rate: float, paced: bool
) -> dict[str, Any]:
    """Every property's night pulled concurrently; the simulator's counts of what was asked and answered."""
    faults.configure({"rate_limit_rps": rate})  # refills the bucket
    faults.reset_stats()
    client_rate = rate if paced else math.inf
    failed = 0
    started = time.perf_counter()
    with ProviderHttp(
        base_url, max_concurrency=MAX_CONCURRENCY, retry=PULL_RETRY, max_rps=client_rate
    ) as http:
        adapter = StripeAdapter(http)

        def pull(prop: PropertyRow) -> int:
            window = night_window(LAST_NIGHT, prop.timezone, prop.night_cutoff)
            account = PropertyAccount(prop.property_id, prop.provider_account)
            return len(adapter.pull_night(account, window.start, window.end))

        with ThreadPoolExecutor(len(props)) as pool:
            futures = [pool.submit(pull, prop) for prop in props]
            records = 0
            for future in futures:
                try:
                    records += future.result()
                except IncompletePullError:
                    failed += 1
    wall = time.perf_counter() - started
    stats = faults.stats()
    requests = stats["api_requests"]
    return {
        "paced": paced,
        "records": records,
        "failed_pulls": failed,
        "requests": requests,
        "responses_429": stats["responses_by_status"].get("429", 0),
        "wall_s": round(wall, 3),
        "records_per_second": round(records / wall),
        # paced starts are 1/rate apart: n requests span n - 1 intervals (the first one is free)
        "requests_per_second": round((requests - 1) / wall, 2),
        "utilisation": round((requests - 1) / wall / rate, 3),
    }


def benchmark_pull(properties: int, records: int, rate: float, repeat: int) -> dict[str, Any]:
    """One unpaced control pull, then ``repeat`` paced pulls of the same nights; medians of the paced."""
    world, props = pull_world(properties, records)
    expected = sum(night_record_count(world, prop, LAST_NIGHT) for prop in props)
    app = build_app(world.store)
    faults: FaultSwitches = app.state.faults
    with ServerThread(app) as simulator:
        control = pull_once(simulator.base_url, faults, props, rate, paced=False)
        runs = [pull_once(simulator.base_url, faults, props, rate, paced=True) for _ in range(repeat)]
    return {
        "rate_limit_rps": rate,
        "properties": properties,
        "records_per_night_target": records,
        "records_expected": expected,
        "repeat": repeat,
        "runs": runs,
        "control_unpaced": control,
        "records": runs[0]["records"],
        "requests": runs[0]["requests"],
        "wall_median_s": round(statistics.median(run["wall_s"] for run in runs), 3),
        "records_per_second": round(statistics.median(run["records_per_second"] for run in runs)),
        "requests_per_second": round(statistics.median(run["requests_per_second"] for run in runs), 2),
        "utilisation": round(statistics.median(run["utilisation"] for run in runs), 3),
        "responses_429": sum(run["responses_429"] for run in runs),
        "every_pull_complete": all(run["records"] == expected and not run["failed_pulls"] for run in runs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=25, help="the provider's limit and the client's pace")
    parser.add_argument("--properties", type=int, default=4, help="property-nights pulled at once")
    parser.add_argument("--records", type=int, default=8_400, help="provider records per night (about)")
    parser.add_argument("--repeat", type=int, default=3, help="paced pulls; medians are reported")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.rate <= 0 or min(args.properties, args.records, args.repeat) < 1:
        parser.error("--rate must be positive, the sizes at least 1")
    figures = benchmark_pull(args.properties, args.records, args.rate, args.repeat)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        control = figures["control_unpaced"]
        print(
            f"paced at {args.rate:g} rps: {figures['records']:,} records, {figures['requests']} requests in "
            f"{figures['wall_median_s']} s = {figures['records_per_second']:,} records/s, "
            f"{figures['requests_per_second']} requests/s ({figures['utilisation']:.0%} of the limit), "
            f"429s: {figures['responses_429']}"
        )
        print(
            f"unpaced control: {control['requests']} requests, {control['responses_429']} answered 429, "
            f"{control['wall_s']} s, {control['failed_pulls']} pulls failed"
        )
    return 0 if figures["responses_429"] == 0 and figures["every_pull_complete"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
