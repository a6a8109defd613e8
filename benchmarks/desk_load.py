"""Benchmark: the review desk's light pages while someone else asks for something heavy.

    python -m benchmarks.desk_load [--properties 2000] [--nights 14] [--seconds 30] [--analysts 10] \
        [--turns 1] [--postgres-url URL] [--json]

Setup (not timed): the world of ``benchmarks/review_desk.py`` (``fleet``, ``seed``: 20 findings per
property-night, adjustments, payouts) in a scratch PostgreSQL database, plus ``--analysts`` analysts over
one property each and two sign-in users; `recon review serve` in a child process on a loopback port, as a
deployment runs it (its ``RECON_REVIEW_*`` settings from the environment).

Timed, per scenario for ``--seconds``: every analyst walks its light pages (its findings, a finding, its
night, the adjustments queue, the legend) with 0.5-1.5 s of thinking between requests, a prober fetches the
stylesheet every 0.5 s, and the scenario's load runs beside them without pause:

- ``quiet``: nothing else;
- ``search``: the admin searches a booking over every property (``/findings?q=...``);
- ``sort``: the admin sorts every finding by difference (``/findings?sort=-difference``);
- ``sign-ins``: two users sign in over and over (argon2 each time);
- ``export``: the admin downloads the findings xlsx over and over (100,000 rows).

Reported per scenario: the light pages' p50/p95/max and requests per second, the static file's p50/p95,
the load's own requests and their p50, and errors (a transport error or a status other than 200/303; a
503 of the export cap is counted apart, as ``refused``). ``--turns`` runs the scenarios that many times over,
in order, on the same server; each scenario's light-page p95 is set against the ``quiet`` p95 of its own
turn, and the median of those ratios is reported: one quiet run's p95 moves by 2× on a shared host, so a
single ratio says little. Timings on a shared machine are measurements, not pass/fail; the run fails
(exit 1) only on an error.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, func, select

from benchmarks.environment import add_postgres_url
from benchmarks.review_desk import ADMIN, Fleet, _booking, fleet, seeded_database
from recon_pipeline.db.schema import discrepancies
from recon_pipeline.review_desk.users import add_user
from recon_pipeline_tests.support.dagster_processes import free_port
from recon_pipeline_tests.support.desk_fixtures import PASSWORD, sign_in, wait_for_desk

SCENARIOS = ("quiet", "search", "sort", "sign-ins", "export")
SIGNERS = ("bench_signer_1", "bench_signer_2")
STATIC_PATH = "/static/desk.css"
STATIC_EVERY_S = 0.5
THINK_S = (0.5, 1.5)
TIMEOUT_S = 120.0
NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def analyst_name(index: int) -> str:
    return f"bench_load_{index:02d}"


@dataclass
class Timings:
    """Latencies and outcomes of one kind of request, gathered from many threads."""

    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, send: Callable[[], httpx.Response]) -> httpx.Response | None:
        """``send``'s response, its latency recorded; None (an error recorded) when it failed."""
        started = time.perf_counter()
        try:
            response = send()
        except httpx.HTTPError as error:
            with self.lock:
                self.errors.append(f"{type(error).__name__}: {error}"[:200])
            return None
        elapsed = time.perf_counter() - started
        with self.lock:
            if response.status_code == 503:
                self.refused += 1
            elif response.status_code not in (200, 303):
                self.errors.append(f"{response.request.url.path} answered {response.status_code}")
            else:
                self.seconds.append(elapsed)
        return response

    def figures(self, duration_s: float) -> dict[str, Any]:
        """Over ``duration_s``, the scenario's length (not the wait for its last export to end)."""
        values = sorted(self.seconds)
        return {
            "requests": len(values),
            "per_s": round(len(values) / duration_s, 1),
            "p50_ms": round(statistics.median(values) * 1000) if values else None,
            "p95_ms": round(_percentile(values, 0.95) * 1000) if values else None,
            "max_ms": round(values[-1] * 1000) if values else None,
            "errors": len(self.errors),
            "first_errors": self.errors[:3],
            "refused": self.refused,
        }


def _percentile(ordered: list[float], share: float) -> float:
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


# --- the world and the server ------------------------------------------------------------------------------


def add_load_users(engine: Engine, seeded: Fleet, analysts: int) -> None:
    """``analysts`` analysts over one property each and the two sign-in users (real argon2 hashes)."""
    with engine.begin() as connection:
        for index in range(analysts):
            property_ids = seeded.property_ids[index % len(seeded.property_ids) :][:1]
            add_user(connection, analyst_name(index), "analyst", property_ids, PASSWORD, NOW)
        for name in SIGNERS:
            add_user(connection, name, "analyst", seeded.property_ids[:1], PASSWORD, NOW)


@contextmanager
def recon_review_serve(database_url: str) -> Iterator[str]:
    """`recon review serve` on ``database_url`` in a child process; its base URL."""
    port = free_port()
    with tempfile.NamedTemporaryFile("w+b", prefix="desk_load_", suffix=".log") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "recon_pipeline.cli", "review", "serve", "--port", str(port)],
            env={**os.environ, "RECON_DATABASE_URL": database_url, "RECON_REVIEW_SECRET": "b" * 40},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            wait_for_desk(base_url, Path(log.name))
            yield base_url
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a request still in flight holds uvicorn's graceful exit
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)


def light_paths(engine: Engine, property_id: str, night: str) -> list[str]:
    """An analyst's light pages over its one property."""
    with engine.connect() as connection:
        finding_id = connection.execute(
            select(func.min(discrepancies.c.discrepancy_id)).where(
                discrepancies.c.property_id == property_id, discrepancies.c.night == night
            )
        ).scalar_one()
    return [
        "/findings",
        f"/findings/{finding_id}",
        f"/nights/{property_id}/{night}",
        "/adjustments",
        "/legend",
    ]


# --- the scenarios ---------------------------------------------------------------------------------------


@contextmanager
def signed_in_client(base_url: str, name: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=TIMEOUT_S) as client:
        response = sign_in(client, name)
        if response.status_code != 303:
            raise RuntimeError(f"sign-in of {name} answered {response.status_code}")
        yield client


def guarded(work: Callable[[], None], timings: Timings, ready: threading.Barrier) -> Callable[[], None]:
    """``work``, a failure of which (a sign-in refused, say) counts as an error rather than vanishing,
    and breaks ``ready`` so that no one waits for it to get set up."""

    def run() -> None:
        try:
            work()
        except Exception as error:  # noqa: BLE001 - every failure is a figure of the run
            ready.abort()
            with timings.lock:
                timings.errors.append(f"{type(error).__name__}: {error}"[:200])

    return run


def run_scenario(
    base_url: str, engine: Engine, seeded: Fleet, scenario: str, analysts: int, seconds: float
) -> dict[str, Any]:
    """One scenario for ``seconds``: the analysts, the static prober and the scenario's load, timed from
    when every one of them is signed in (``ready``)."""
    light, static, load = Timings(), Timings(), Timings()
    stop = threading.Event()
    night = seeded.nights[-1]
    rng = random.Random(scenario)

    def analyst(index: int) -> None:
        property_id = seeded.property_ids[index % len(seeded.property_ids)]
        paths = light_paths(engine, property_id, night)
        pause = random.Random(index)
        with signed_in_client(base_url, analyst_name(index)) as client:
            step = index
            ready.wait()
            while not stop.is_set():
                light.timed(partial(client.get, paths[step % len(paths)]))
                step += 1
                stop.wait(pause.uniform(*THINK_S))

    def prober() -> None:
        with httpx.Client(base_url=base_url, timeout=TIMEOUT_S) as client:
            ready.wait()
            while not stop.is_set():
                static.timed(partial(client.get, STATIC_PATH))
                stop.wait(STATIC_EVERY_S)

    def admin(path_of: Callable[[], str]) -> Callable[[], None]:
        def work() -> None:
            with signed_in_client(base_url, ADMIN) as client:
                ready.wait()
                while not stop.is_set():
                    load.timed(partial(client.get, path_of()))

        return work

    def signer(name: str) -> Callable[[], None]:
        def work() -> None:
            ready.wait()
            while not stop.is_set():
                with httpx.Client(base_url=base_url, timeout=TIMEOUT_S) as client:
                    load.timed(partial(sign_in, client, name))

        return work

    heavy: dict[str, list[Callable[[], None]]] = {
        "quiet": [],
        "search": [admin(lambda: f"/findings?q={_booking(rng.choice(seeded.property_ids), night, 0)}")],
        "sort": [admin(lambda: "/findings?sort=-difference")],
        "sign-ins": [signer(name) for name in SIGNERS],
        "export": [admin(lambda: "/findings/export.xlsx")],
    }
    ready = threading.Barrier(analysts + 1 + len(heavy[scenario]) + 1)  # the prober, and this thread
    workers = [
        threading.Thread(target=guarded(lambda index=index: analyst(index), light, ready))
        for index in range(analysts)
    ]
    workers += [
        threading.Thread(target=guarded(prober, static, ready)),
        *(threading.Thread(target=guarded(work, load, ready)) for work in heavy[scenario]),
    ]
    for worker in workers:
        worker.start()
    with suppress(threading.BrokenBarrierError):  # a worker's set-up failed: counted as its error
        ready.wait(TIMEOUT_S)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for worker in workers:
        worker.join()
    duration = time.perf_counter() - started
    return {
        "scenario": scenario,
        "seconds": round(duration, 1),
        "load_avg": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "light": light.figures(seconds),
        "static": static.figures(seconds),
        "load": load.figures(seconds),
    }


def run(
    admin_url: str,
    properties_count: int,
    nights_count: int,
    analysts: int,
    seconds: float,
    scenarios: list[str],
    turns: int = 1,
) -> dict[str, Any]:
    seeded = fleet(properties_count, nights_count)
    figures: dict[str, Any] = {
        "properties": properties_count,
        "nights": nights_count,
        "analysts": analysts,
        "turns": turns,
        "cores": os.cpu_count(),
        "threads_env": os.environ.get("RECON_REVIEW_THREADS"),
        "exports_env": os.environ.get("RECON_REVIEW_EXPORTS"),
    }
    with ExitStack() as stack:
        url, engine = stack.enter_context(seeded_database(admin_url, "recon_desk_load", seeded, figures))
        add_load_users(engine, seeded, analysts)
        base_url = stack.enter_context(recon_review_serve(url))
        figures["scenarios"] = [
            {"turn": turn, **run_scenario(base_url, engine, seeded, scenario, analysts, seconds)}
            for turn in range(1, turns + 1)
            for scenario in scenarios
        ]
    figures["errors"] = sum(
        scenario[kind]["errors"] for scenario in figures["scenarios"] for kind in ("light", "static", "load")
    )
    figures["ratios"] = quiet_ratios(figures["scenarios"])
    return figures


def quiet_ratios(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per scenario but ``quiet``, its light-page p95 over the quiet p95 of the same turn, each turn's and
    their median (none without a quiet run in the turn)."""
    quiet = {run["turn"]: run["light"]["p95_ms"] for run in runs if run["scenario"] == "quiet"}
    ratios: dict[str, list[float]] = {}
    for run in runs:
        baseline = quiet.get(run["turn"])
        if run["scenario"] != "quiet" and baseline and run["light"]["p95_ms"] is not None:
            ratios.setdefault(run["scenario"], []).append(round(run["light"]["p95_ms"] / baseline, 2))
    return {
        scenario: {"per_turn": values, "median": round(statistics.median(values), 2)}
        for scenario, values in ratios.items()
    }


# --- output ----------------------------------------------------------------------------------------------


def markdown(figures: dict[str, Any]) -> str:
    lines = [
        "| turn | scenario | light p50 ms | light p95 ms | light max ms | light req/s | static p50 ms "
        "| static p95 ms | load requests | load p50 ms | refused (503) | errors | load avg |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for scenario in figures["scenarios"]:
        light, static, load = scenario["light"], scenario["static"], scenario["load"]
        errors = light["errors"] + static["errors"] + load["errors"]
        lines.append(
            f"| {scenario['turn']} | {scenario['scenario']} | {light['p50_ms']} | {light['p95_ms']} | "
            f"{light['max_ms']} | "
            f"{light['per_s']} | {static['p50_ms']} | {static['p95_ms']} | {load['requests']} | "
            f"{_shown(load['p50_ms'])} | {load['refused']} | {errors} | "
            f"{scenario['load_avg'][0]} → {scenario['load_avg'][1]} |"
        )
    first = [
        error
        for scenario in figures["scenarios"]
        for kind in ("light", "static", "load")
        for error in scenario[kind]["first_errors"]
    ]
    lines += [
        "",
        *(
            f"Light-page p95 / the turn's quiet p95, {scenario}: "
            + ", ".join(f"×{ratio}" for ratio in ratio_of["per_turn"])
            + f" (median ×{ratio_of['median']})."
            for scenario, ratio_of in figures["ratios"].items()
        ),
        f"Seeded {figures['properties']:,} properties × {figures['nights']} nights: "
        + ", ".join(f"{count:,} {table}" for table, count in figures["seeded"].items())
        + f" in {figures['seed_s']} s; {figures['analysts']} analysts; "
        f"RECON_REVIEW_THREADS={figures['threads_env']}, RECON_REVIEW_EXPORTS={figures['exports_env']}; "
        f"errors: {figures['errors']}" + (f" ({'; '.join(first)})" if first else "") + ".",
    ]
    return "\n".join(lines)


def _shown(value: Any) -> str:
    return "" if value is None else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=2_000)
    parser.add_argument("--nights", type=int, default=14)
    parser.add_argument("--analysts", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each scenario")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated, in order")
    parser.add_argument("--turns", type=int, default=1, help="how many times to run the scenarios over")
    add_postgres_url(parser, "the scratch database")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    args = parser.parse_args(argv)
    scenarios = args.scenarios.split(",")
    if unknown := set(scenarios) - set(SCENARIOS):
        parser.error(f"unknown scenarios {sorted(unknown)}: choose from {', '.join(SCENARIOS)}")
    if min(args.properties, args.nights, args.analysts, args.turns) < 1 or args.seconds <= 0:
        parser.error("--properties, --nights, --analysts, --turns and --seconds must be positive")
    figures = run(
        args.postgres_url, args.properties, args.nights, args.analysts, args.seconds, scenarios, args.turns
    )
    print(json.dumps(figures, sort_keys=True) if args.json else markdown(figures))
    return 0 if figures["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
