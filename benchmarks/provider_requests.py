"""Benchmark: the pipeline's CPU per provider request and per property-night pulled, apart from the rest.

    python -m benchmarks.provider_requests [--properties 100] [--rps 100] [--requests 1000] \
        [--repeat 3] [--postgres-url URL] [--json]

The fleet's night (as ``batch_profile.py`` builds it) served by the simulator from a process of its own
(its CPU is not counted), with the provider's rate ``--rps`` kept by the pipeline's PostgreSQL rate bucket
in a scratch database, and the production client as a deployment builds it (``ProviderResource``). Two
workloads, each timed in this process's CPU seconds (``time.process_time``: every thread; PostgreSQL's CPU
is its own process's):

- ``requests``: bare ``ProviderHttp.get_json`` calls, each property's first page of the night's charges
  (expansion and connected account as ``pull_claimed`` sends them), then ``--requests`` charges read by
  id, held in pages of a hundred as ``fetch_each`` holds them: the request path alone (URL, rate slot,
  urllib3, JSON);
- ``pull``: ``pull_claimed`` of every property-night of the fleet, grouped by account as
  ``batches/pull.py`` groups them: the requests and the turning of their JSON into the provider-record frame.

Each is run ``--repeat`` times (after one warm-up pull); the figures are the lowest CPU per request and per
property-night (the least disturbed by other processes on a shared machine), with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import date
from typing import Any

import httpx

from benchmarks.batch_profile import provider_resource, simulator_process
from benchmarks.fleet_setup import fleet_night
from benchmarks.worlds import LAST_NIGHT
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.nights import night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.stripe.api_version import API_VERSION, VERSION_HEADER
from recon_pipeline.simulation.demo.fleet import FLEET_BOOKINGS_PER_NIGHT
from recon_pipeline_tests.support.scratch import DEFAULT_ADMIN_URL, scratch_database

BY_ID_EXPANSION = {"expand[]": "balance_transaction"}
HELD_PAGE = 100  # by-id reads announced to the limiter at once, as a large fetch_each does


def pull_scopes(fleet: tuple[PropertyRow, ...], night: date) -> list[tuple[PropertyAccount, Any]]:
    """One pull per account and window, serving every property on it (``batches/pull.py``'s grouping)."""
    groups: dict[tuple[str | None, Any, Any], list[PropertyRow]] = {}
    windows = {}
    for row in fleet:
        window = night_window(night, row.timezone, row.night_cutoff)
        windows[row.property_id] = window
        groups.setdefault((row.provider_account, window.start, window.end), []).append(row)
    scopes = []
    for (account, _, _), rows in groups.items():
        ids = tuple(row.property_id for row in rows)
        scope = PropertyAccount(ids[0], account, ids, ids if len(ids) > 1 else ())
        scopes.append((scope, windows[ids[0]]))
    return scopes


def cpu_of(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def request_mix(http: ProviderHttp, fleet: tuple[PropertyRow, ...], night: date, count: int) -> None:
    """Every property's first page of charges, then ``count`` reads of their first charges by id."""
    charge_ids: list[tuple[dict[str, str], str]] = []
    for row in fleet:
        headers = {VERSION_HEADER: API_VERSION}
        if row.provider_account:
            headers["Stripe-Account"] = row.provider_account
        window = night_window(night, row.timezone, row.night_cutoff)
        params = {
            "created[gte]": int(window.start.timestamp()),
            "created[lt]": int(window.end.timestamp()),
            "limit": 100,
            "expand[]": "data.balance_transaction",
        }
        page = http.get_json("/v1/charges", params=params, headers=headers) or {}
        charge_ids += [(headers, charge["id"]) for charge in page.get("data", [])[:1]]
    sent = 0
    while sent < count:
        for index, (headers, charge_id) in enumerate(charge_ids):
            if sent >= count:
                return
            if index % HELD_PAGE == 0:
                http.reserve_slots(min(HELD_PAGE, count - sent))
            http.get_json(f"/v1/charges/{charge_id}", params=BY_ID_EXPANSION, headers=headers)
            sent += 1


def run(postgres_url: str, properties: int, rps: int, requests: int, repeat: int) -> dict[str, Any]:
    night = LAST_NIGHT
    prepared = fleet_night(properties, night, FLEET_BOOKINGS_PER_NIGHT)
    figures: dict[str, Any] = {"properties": properties, "rps": rps, "load_before": os.getloadavg()[0]}
    with ExitStack() as stack:
        recon_url = stack.enter_context(scratch_database(postgres_url, "recon_requests"))
        engine = make_engine(recon_url)
        stack.callback(engine.dispose)
        migrations.upgrade(engine)  # the rate bucket's table
        simulator = stack.enter_context(
            simulator_process(properties, night, FLEET_BOOKINGS_PER_NIGHT, rps)
        )
        resource = provider_resource(recon_url, simulator, rps)
        client, http = resource.adapter(), resource.http()
        scopes = pull_scopes(prepared.fleet, night)

        def pull_all() -> None:
            for scope, window in scopes:
                client.pull_claimed(scope, window.start, window.end)

        def counted(work: Callable[[], object]) -> tuple[float, int]:
            httpx.post(f"{simulator.base_url}/_simulator/reset-stats", timeout=30)
            spent = cpu_of(work)
            return spent, int(simulator.stats()["api_requests"])

        pull_all()  # warm-up: connections, the bucket's row, caches
        per_request, per_pull_request, per_night = [], [], []
        for _ in range(repeat):
            spent, sent = counted(lambda: request_mix(http, prepared.fleet, night, requests))
            per_request.append(spent / sent)
            spent, sent = counted(pull_all)
            per_pull_request.append(spent / sent)
            per_night.append(spent / properties)
        figures.update(
            load_after=os.getloadavg()[0],
            requests_per_property_night=round(sent / properties, 2),
            request_cpu_ms=round(min(per_request) * 1000, 3),
            request_cpu_ms_runs=[round(s * 1000, 3) for s in per_request],
            pull_cpu_ms_per_request=round(min(per_pull_request) * 1000, 3),
            pull_cpu_ms_per_property_night=round(min(per_night) * 1000, 3),
            pull_cpu_ms_per_property_night_runs=[round(s * 1000, 3) for s in per_night],
        )
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=100)
    parser.add_argument("--rps", type=int, default=100, help="the provider's request rate limit")
    parser.add_argument("--requests", type=int, default=1000, help="bare requests per repeat")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres-url", default=DEFAULT_ADMIN_URL, help="server for the scratch database")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if min(args.properties, args.rps, args.requests, args.repeat) < 1:
        parser.error("every size must be positive")
    figures = run(args.postgres_url, args.properties, args.rps, args.requests, args.repeat)
    print(json.dumps(figures, sort_keys=True) if args.json else json.dumps(figures, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
