"""Profile: the CPU one property-night costs in ``reconcile_batch``, per process (issue 13's throughput).

    python -m benchmarks.batch_profile [--properties 250] [--batch-size 250] [--rps 100] \
        [--bookings 5] [--profile] [--postgres-url URL] [--reject PATH] [--json]

The fleet's night (``recon_pipeline/simulation/demo/fleet.py``, as ``benchmarks/scale.py`` seeds it) in a
scratch database, the simulator serving it from a process of its own (so its CPU is counted apart, with the
provider's rate limit ``--rps`` enforced and kept by the pipeline's PostgreSQL rate bucket, as a deployment
keeps it), and the night's batches (``plan_batches`` at ``--batch-size``) reconciled one after another by
``batches/work.py::reconcile_batch`` in this process, with the production provider client
(``ProviderResource``). No Dagster: what a run adds around the batch (process start, code load, checks) is
``scale.py``'s figure.

Measured in CPU seconds, not wall time (the machine may be shared): this process (the pipeline), the
simulator's process, and PostgreSQL (a throwaway cluster of this benchmark's own, whose postmaster counts
every backend's CPU; with ``--postgres-url`` a shared server's backends cannot be told apart, and the
figure is left out); each per property-night. Also the provider requests by endpoint (the simulator's
counters), the findings against what the world planted, and with ``--profile`` the pipeline's cProfile
top 30 by cumulative time over every thread (printed to stderr).

``--reject PATH`` has the simulator refuse every request to that endpoint for good (its ``reject`` switch:
400 in the provider's error shape), as a strict provider refuses a request it will never accept: the
figures then count the refused requests per property and the property-nights that failed for good (issue
24: at most one refused request per property, none retried).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import multiprocessing
import os
import pstats
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import date
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

import httpx

from benchmarks.fleet_setup import fleet_night, seed
from benchmarks.scale import by_endpoint, findings_check
from benchmarks.worlds import LAST_NIGHT
from recon_pipeline.batches.plan import DEFAULT_BATCH_SIZE, plan_batches
from recon_pipeline.batches.work import BatchRequest, reconcile_batch
from recon_pipeline.db.engine import make_engine
from recon_pipeline.defs.resources import ProviderResource
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.fleet import FLEET_BOOKINGS_PER_NIGHT
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline_tests.support.scratch import scratch_database
from recon_pipeline_tests.support.throwaway_postgres import throwaway_cluster

DEFAULT_PROPERTIES = 250
DEFAULT_RPS = 100  # Stripe's documented live-mode limit, as scale.py
MAX_CONCURRENCY = 4  # RECON_PROVIDER_MAX_CONCURRENCY of scale.py's deployment
SIMULATOR_IDLE_S = 3600  # the simulator's process ends when not asked anything for this long
SIMULATOR_START_S = 120
PROFILE_TOP = 30
REFUSAL = "This property cannot be expanded (charge)."  # what a strict Stripe answered (issue 24)


def serve_simulator(properties: int, night: date, bookings: int, rps: int, connection: Connection) -> None:
    """The simulator's process: build the same world (deterministic), serve it, send the base URL, then
    answer each message with this process's CPU seconds until told "stop" (or left idle too long)."""
    app = build_app(fleet_night(properties, night, bookings).world.store)
    app.state.faults.configure({"rate_limit_rps": rps})
    with ServerThread(app) as server:
        connection.send(server.base_url)
        while connection.poll(SIMULATOR_IDLE_S) and connection.recv() != "stop":
            connection.send(time.process_time())


@dataclass(frozen=True)
class SimulatorProcess:
    base_url: str
    connection: Connection

    def cpu_seconds(self) -> float:
        self.connection.send("cpu")
        return float(self.connection.recv())

    def stats(self) -> dict[str, Any]:
        answer: dict[str, Any] = httpx.get(f"{self.base_url}/_simulator/stats", timeout=30).json()
        return answer


@contextmanager
def simulator_process(properties: int, night: date, bookings: int, rps: int) -> Iterator[SimulatorProcess]:
    """The simulator serving the fleet's night from a spawned process, stopped afterwards."""
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=serve_simulator, args=(properties, night, bookings, rps, theirs), name="simulator"
    )
    process.start()
    try:
        if not ours.poll(SIMULATOR_START_S):
            raise RuntimeError(f"the simulator's process did not start within {SIMULATOR_START_S} s")
        yield SimulatorProcess(str(ours.recv()), ours)
    finally:
        if process.is_alive():
            ours.send("stop")
        process.join(30)
        if process.is_alive():
            process.kill()
            process.join(10)


def provider_resource(database_url: str, simulator: SimulatorProcess, rps: int) -> ProviderResource:
    """The production provider resource against the simulator's process, at the deployment's concurrency
    and the simulator's rate (kept by the rate bucket in ``database_url``)."""
    return ProviderResource(
        database_url=database_url,
        provider="simulator",
        base_url=simulator.base_url,
        max_concurrency=MAX_CONCURRENCY,
        max_rps=rps,
    )


@contextmanager
def every_thread_profiled() -> Iterator[list[cProfile.Profile]]:
    """cProfile of this thread and of every thread started meanwhile (Python 3.11's cProfile sees only
    the thread that enabled it; the batch works in a pool of threads), timed by each thread's CPU clock:
    a thread waiting for a reply or a lock costs nothing, so the cumulative times are CPU seconds."""
    profiles = [cProfile.Profile(time.thread_time)]
    lock = threading.Lock()

    def start_in_thread(_frame: FrameType, _event: str, _arg: object) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile(time.thread_time)
        with lock:
            profiles.append(profile)
        profile.enable()

    threading.setprofile(start_in_thread)  # type: ignore[arg-type]
    profiles[0].enable()
    try:
        yield profiles
    finally:
        profiles[0].disable()
        threading.setprofile(None)  # type: ignore[arg-type]


def top_cumulative(profiles: list[cProfile.Profile], count: int, dump: str | None) -> str:
    """The ``count`` functions of most cumulative CPU over every profiled thread (all of them saved to
    ``dump`` for ``pstats`` when given)."""
    text = io.StringIO()
    stats = pstats.Stats(profiles[0], stream=text)
    for profile in profiles[1:]:
        stats.add(profile)
    if dump is not None:
        stats.dump_stats(dump)
    stats.sort_stats("cumulative").print_stats(count)
    return text.getvalue()


def per_night(seconds: float | None, property_nights: int) -> float | None:
    return None if seconds is None else round(seconds / max(property_nights, 1), 4)


def run(
    postgres_url: str | None,
    properties: int,
    night: date,
    batch_size: int,
    rps: int,
    bookings: int,
    profile: bool,
    profile_dump: str | None = None,
    reject: str | None = None,
) -> dict[str, Any]:
    prepared = fleet_night(properties, night, bookings)
    figures: dict[str, Any] = {
        "properties": properties,
        "night": night.isoformat(),
        "batch_size": batch_size,
        "rps": rps,
        "load_before": os.getloadavg()[0],
    }
    with ExitStack() as stack:
        cluster = None if postgres_url else stack.enter_context(throwaway_cluster())
        admin_url = cluster.url if cluster is not None else str(postgres_url)
        recon_url = stack.enter_context(scratch_database(admin_url, "recon_profile"))
        figures["seed_s"] = round(seed(recon_url, prepared.world, prepared.fleet), 1)
        simulator = stack.enter_context(simulator_process(properties, night, bookings, rps))
        engine = make_engine(recon_url)
        stack.callback(engine.dispose)
        client = provider_resource(recon_url, simulator, rps).adapter()
        batches = plan_batches(prepared.fleet, night, batch_size, one_window_each=False)
        httpx.post(f"{simulator.base_url}/_simulator/reset-stats", timeout=30)
        if reject is not None:
            refusal = {"reject": {"path": reject, "message": REFUSAL}}
            httpx.post(f"{simulator.base_url}/_simulator/faults", json=refusal, timeout=30).raise_for_status()
        pipeline_cpu, simulator_cpu = time.process_time(), simulator.cpu_seconds()
        postgres_cpu = cluster.cpu_seconds() if cluster else 0.0
        started = time.perf_counter()
        succeeded = failed_for_good = retryable_batches = 0
        with every_thread_profiled() if profile else nullcontext() as profiles:
            for batch in batches:
                request = BatchRequest(night=night.isoformat(), property_ids=batch.property_ids)
                result = reconcile_batch(engine, client, request, f"profile-{batch.key}", lambda _: None)
                succeeded += sum(outcome.succeeded for outcome in result.outcomes)
                failed_for_good += len(result.permanent)
                retryable_batches += bool(result.failed) and result.retryable
        wall = time.perf_counter() - started
        spent = {
            "pipeline": time.process_time() - pipeline_cpu,
            "simulator": simulator.cpu_seconds() - simulator_cpu,
            "postgres": cluster.cpu_seconds() - postgres_cpu if cluster else None,
        }
        if profiles is not None:
            print(top_cumulative(profiles, PROFILE_TOP, profile_dump), file=sys.stderr)
        stats = simulator.stats()
        figures.update(
            runs=len(batches),
            property_nights_succeeded=succeeded,
            wall_s=round(wall, 1),
            load_after=os.getloadavg()[0],
            cpu_s={name: None if s is None else round(s, 2) for name, s in spent.items()},
            cpu_s_per_property_night={name: per_night(s, succeeded) for name, s in spent.items()},
            cpu_s_per_property_night_total=per_night(sum(s for s in spent.values() if s), succeeded),
            provider_requests=stats["api_requests"],
            provider_requests_per_property=round(stats["api_requests"] / max(succeeded, 1), 2),
            provider_rate_limited=stats["rate_limited"],
            provider_requests_by_endpoint=by_endpoint(stats["requests_by_path"]),
            **findings_check(engine, prepared.world, night),
        )
        if reject is not None:
            refused = stats["responses_by_status"].get("400", 0)
            figures.update(
                rejected_endpoint=reject,
                refused_requests=refused,
                refused_per_property=round(refused / properties, 3),
                property_nights_failed_for_good=failed_for_good,
                batches_a_retry_could_change=retryable_batches,
            )
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=DEFAULT_PROPERTIES)
    parser.add_argument("--night", type=date.fromisoformat, default=LAST_NIGHT)
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--rps", type=int, default=DEFAULT_RPS, help="the provider's request rate limit")
    parser.add_argument("--bookings", type=int, default=FLEET_BOOKINGS_PER_NIGHT, help="ordinary, per night")
    parser.add_argument("--profile", action="store_true", help="cProfile top 30 (cumulative) to stderr")
    parser.add_argument("--profile-dump", metavar="FILE", help="with --profile: every function's figures")
    parser.add_argument(
        "--postgres-url",
        default=None,
        help="server for the scratch database (default: a throwaway cluster, whose CPU is counted)",
    )
    parser.add_argument(
        "--reject", metavar="PATH", help="the simulator refuses this endpoint for good (400): count refusals"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if min(args.properties, args.batch_size, args.rps, args.bookings) < 1:
        parser.error("every size must be positive")
    figures = run(
        args.postgres_url,
        args.properties,
        args.night,
        args.batch_size,
        args.rps,
        args.bookings,
        args.profile,
        args.profile_dump,
        args.reject,
    )
    print(json.dumps(figures, sort_keys=True) if args.json else json.dumps(figures, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
