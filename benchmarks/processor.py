"""Benchmark of the event processor: events/s of 1 and 4 worker processes on PostgreSQL and the simulator.

    python benchmarks/processor.py --n 5000 [--workers 1 4] [--json]

For each worker count: a fresh PostgreSQL database (created and dropped here), ``n`` pending events
(two per booking: ``payment_intent.succeeded`` and ``charge.succeeded``, plus replays of some event ids,
which are stored once), the simulator serving the payments in this process, and that many
``python -m recon_pipeline.events.worker`` processes draining the queue. Events/s is ``n`` over the span
from the first to the last ``processed_at``, so interpreter start-up is not counted; the wall time of the
whole drain, start-up included, is shown beside it. Every run checks that all ``n`` events were processed
and every booking confirmed exactly once. The helpers are reused by the multi-process test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import func, insert, select  # noqa: E402

from recon_pipeline.db import migrations  # noqa: E402
from recon_pipeline.db.engine import make_engine  # noqa: E402
from recon_pipeline.db.schema import (  # noqa: E402
    booking_confirmations,
    bookings,
    payment_event_processing,
    properties,
)
from recon_pipeline.events.store import store_event  # noqa: E402
from recon_pipeline.providers.stripe.webhook import parse_event as parse_stripe_event  # noqa: E402
from recon_pipeline.serving import ServerThread  # noqa: E402
from recon_pipeline.simulation.host.app import build_app  # noqa: E402
from recon_pipeline.simulation.host.store import SimulatorStore  # noqa: E402
from recon_pipeline_tests.support.scratch import scratch_database

DEFAULT_ADMIN_URL = os.environ.get("RECON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
API_KEY = "sk_test_processor_benchmark"
PROPERTIES = ("bench-a", "bench-b", "bench-c")


@dataclass
class EventWorld:
    """Payments at the provider, their pending bookings, and the events that announce them."""

    store: SimulatorStore = field(default_factory=SimulatorStore)
    bookings: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # Stripe event JSON, replays included


def build_world(n_events: int, now: datetime, duplicates: int = 0) -> EventWorld:
    """``n_events`` distinct events for ``n_events // 2`` captured payments (``n_events`` must be even),
    followed by ``duplicates`` replays of earlier event ids."""
    if n_events < 2 or n_events % 2:
        raise ValueError("n_events must be a positive even number")
    world = EventWorld()
    created = int((now - timedelta(minutes=5)).timestamp())
    for i in range(n_events // 2):
        property_id, booking_id = PROPERTIES[i % len(PROPERTIES)], f"bk_bench{i:07d}"
        metadata = {"property_id": property_id, "booking_id": booking_id}
        charge = {
            "id": f"ch_bench{i:07d}",
            "object": "charge",
            "amount": 10_000 + i,
            "amount_captured": 10_000 + i,
            "amount_refunded": 0,
            "currency": "eur",
            "created": created,
            "status": "succeeded",
            "captured": True,
            "paid": True,
            "refunded": False,
            "payment_intent": f"pi_bench{i:07d}",
            "metadata": metadata,
            "balance_transaction": None,
            "account": None,
        }
        intent = {
            "id": charge["payment_intent"],
            "object": "payment_intent",
            "amount": charge["amount"],
            "amount_received": charge["amount"],
            "currency": "eur",
            "status": "succeeded",
            "latest_charge": charge["id"],
            "metadata": metadata,
            "created": created - 5,
            "account": None,
        }
        world.store.charges.append(charge)
        world.store.payment_intents.append(intent)
        world.bookings.append(
            {
                "booking_id": booking_id,
                "property_id": property_id,
                "status": "pending",
                "amount_minor": charge["amount"],
                "currency": "EUR",
                "created_at": now - timedelta(minutes=10),
                "updated_at": now - timedelta(minutes=10),
            }
        )
        for kind, obj in (("payment_intent.succeeded", intent), ("charge.succeeded", charge)):
            payload = {key: value for key, value in obj.items() if key != "account"}
            world.events.append(
                {
                    "id": f"evt_{kind.split('.')[0]}_{i:07d}",
                    "type": kind,
                    "created": created,
                    "data": {"object": payload},
                }
            )
    world.events += world.events[:duplicates]
    world.store.reindex()
    return world


def seed(database_url: str, world: EventWorld, now: datetime) -> int:
    """Create the tables, the properties and bookings, and store every event as the webhook does;
    returns how many events were new (replays are no-ops on their event id)."""
    engine = make_engine(database_url)
    try:
        migrations.upgrade(engine)
        with engine.begin() as connection:
            connection.execute(
                insert(properties),
                [
                    {"property_id": p, "name": p, "timezone": "Europe/Berlin", "currency": "EUR"}
                    for p in PROPERTIES
                ],
            )
            connection.execute(insert(bookings), world.bookings)
            stored = 0
            for event in world.events:
                body = json.dumps(event)
                stored += store_event(connection, "stripe", parse_stripe_event(body), body, now)
        return stored
    finally:
        engine.dispose()


def run_workers(
    database_url: str, base_url: str, workers: int, batch_size: int, timeout_s: float
) -> list[dict[str, int]]:
    """Start ``workers`` worker processes at once and wait for all; their counts, or RuntimeError naming
    a worker that failed or overran ``timeout_s`` (all are killed then)."""
    env = {**os.environ, "RECON_PROVIDER": "simulator", "RECON_PROVIDER_API_KEY": API_KEY}
    command = [sys.executable, "-m", "recon_pipeline.events.worker", "--database-url", database_url]
    command += ["--provider-base-url", base_url, "--batch-size", str(batch_size)]
    with tempfile.TemporaryDirectory() as logs:
        procs = []
        for n in range(workers):
            log = open(Path(logs) / f"worker-{n}.log", "w+b")  # noqa: SIM115 - closed below
            procs.append(
                (
                    subprocess.Popen(
                        [*command, "--worker-id", f"bench-{n}"], stdout=subprocess.PIPE, stderr=log, env=env
                    ),
                    log,
                )
            )
        deadline = time.monotonic() + timeout_s
        results = []
        try:
            for n, (proc, log) in enumerate(procs):
                out, _ = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
                if proc.returncode != 0:
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"worker {n} exited {proc.returncode}: {tail}")
                results.append(json.loads(out))
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"workers did not finish within {timeout_s} s") from None
        finally:
            for proc, log in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                log.close()
    return results


@dataclass(frozen=True)
class DrainCheck:
    """What the database says after a drain."""

    processed: int
    not_processed: int
    max_attempts: int
    confirmations: int
    confirmed_bookings: int
    span_s: float


def check_drain(database_url: str) -> DrainCheck:
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            events = payment_event_processing.c
            processed, first, last, max_attempts = connection.execute(
                select(
                    func.count(),
                    func.min(events.processed_at),
                    func.max(events.processed_at),
                    func.max(events.attempts),
                ).where(events.status == "processed")
            ).one()
            not_processed = connection.execute(
                select(func.count()).where(events.status != "processed")
            ).scalar_one()
            confirmations = connection.execute(
                select(func.count()).select_from(booking_confirmations)
            ).scalar_one()
            confirmed = connection.execute(
                select(func.count()).where(bookings.c.status == "confirmed")
            ).scalar_one()
        span = (last - first).total_seconds() if processed else 0.0
        return DrainCheck(processed, not_processed, int(max_attempts or 0), confirmations, confirmed, span)
    finally:
        engine.dispose()


def run_once(admin_url: str, n: int, workers: int, batch_size: int, timeout_s: float) -> dict[str, Any]:
    """One measured drain of ``n`` events by ``workers`` processes; raises if any event or booking is off."""
    now = datetime.now(UTC)
    world = build_world(n, now, duplicates=n // 20)
    with (
        scratch_database(admin_url, "recon_bench") as url,
        ServerThread(build_app(world.store, api_key=API_KEY)) as server,
    ):
        stored = seed(url, world, now)
        started = time.perf_counter()
        counts = run_workers(url, server.base_url, workers, batch_size, timeout_s)
        wall = time.perf_counter() - started
        check = check_drain(url)
    if not (stored == check.processed == n and check.not_processed == 0):
        raise RuntimeError(f"{workers} workers: stored {stored}, processed {check.processed} of {n}")
    if not (check.confirmations == check.confirmed_bookings == len(world.bookings)):
        raise RuntimeError(f"{workers} workers: confirmations {check.confirmations} of {len(world.bookings)}")
    return {
        "workers": workers,
        "n": n,
        "processed": check.processed,
        "max_attempts": check.max_attempts,
        "events_per_second": round(n / check.span_s) if check.span_s else None,
        "span_seconds": round(check.span_s, 3),
        "wall_seconds": round(wall, 3),
        "per_worker": [c["processed"] for c in counts],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="distinct events to process (even)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4], help="worker counts to measure")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per drain")
    parser.add_argument("--postgres-url", default=DEFAULT_ADMIN_URL, help="server to create databases on")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    args = parser.parse_args(argv)
    if args.n < 2 or args.n % 2 or any(w < 1 for w in args.workers) or args.batch_size < 1:
        parser.error("--n must be a positive even number, --workers and --batch-size positive")
    runs = [run_once(args.postgres_url, args.n, w, args.batch_size, args.timeout) for w in args.workers]
    if args.json:
        print(json.dumps({"n": args.n, "runs": runs}, sort_keys=True))
        return 0
    print(f"{'workers':>7}  {'events':>7}  {'events/s':>9}  {'span s':>7}  {'wall s':>7}  per worker")
    for run in runs:
        print(
            f"{run['workers']:>7}  {run['processed']:>7,}  {run['events_per_second'] or 0:>9,}  "
            f"{run['span_seconds']:>7.2f}  {run['wall_seconds']:>7.2f}  {run['per_worker']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
