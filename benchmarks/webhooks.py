"""Benchmark of webhook intake on PostgreSQL: signed deliveries accepted and stored per second.

    python benchmarks/webhooks.py --events 5000 --connections 32 --duplicates 0.1 --workers 2 --repeat 5
    python benchmarks/webhooks.py --events 200 --connections 4 --workers 1 --json   # a quick check

A fresh database (``recon_bench_<random>`` on the server of ``--postgres-url``, dropped at the end) is
served by ``recon webhooks serve`` in its own process; this process is the load: ``--events`` distinct
signed events plus a ``--duplicates`` share of re-deliveries, shuffled, over ``--connections`` keep-alive
connections. Each delivery is signed when it is sent, as Stripe does, so a slow run is never refused as
stale. The rate is 200-answered deliveries over the wall time of the load; latency is per request as the
client sees it. After the server has stopped, the rows are counted, so "stored" means durably committed.
With ``--repeat`` every run gets its own database and receiver; the figures shown are those of the median
run (by accepted/s), with every run's rates beside them, since one run on a shared machine proves little.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recon_pipeline.db.schema import payment_event_processing, payment_events  # noqa: E402
from recon_pipeline.providers.stripe.webhook import HEADER, sign  # noqa: E402
from recon_pipeline_tests.support.scratch import scratch_database

DEFAULT_POSTGRES_URL = os.environ.get("RECON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
STARTUP_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Delivery:
    event_id: str
    body: bytes


@dataclass(frozen=True)
class Receiver:
    port: int
    pid: int


@dataclass(frozen=True)
class Outcome:
    status: int
    duplicate: bool
    seconds: float


def make_deliveries(events: int, duplicate_share: float, seed: int) -> list[Delivery]:
    """Distinct Stripe-shaped events plus re-deliveries of randomly chosen ones, shuffled."""
    rng = random.Random(seed)
    run = secrets.token_hex(4)
    distinct = []
    for i in range(events):
        event_id = f"evt_{run}_{i:08d}"
        event = {
            "id": event_id,
            "object": "event",
            "type": "payment_intent.succeeded",
            "created": 1_760_000_000 + i,
            "livemode": False,
            "data": {
                "object": {
                    "id": f"pi_{run}_{i:08d}",
                    "object": "payment_intent",
                    "amount": rng.randrange(1_000, 500_000),
                    "currency": "eur",
                    "status": "succeeded",
                    "metadata": {"property_id": f"prop_{i % 7}", "booking_id": f"bk_{i:08d}"},
                }
            },
        }
        distinct.append(Delivery(event_id, json.dumps(event).encode()))
    deliveries = distinct + [rng.choice(distinct) for _ in range(round(events * duplicate_share))]
    rng.shuffle(deliveries)
    return deliveries


async def run_load(port: int, deliveries: list[Delivery], connections: int, secret: str) -> list[Outcome]:
    """Send every delivery over ``connections`` keep-alive connections, one request in flight on each.

    Plain asyncio streams rather than httpx: measured here, httpx's AsyncClient costs 2.5-10 ms of CPU per
    request (its pool's bookkeeping grows with the connection count), more than the receiver itself, so on
    a small machine the load generator, not the receiver, set the rate. This costs about 0.15 ms.
    """
    pending = iter(deliveries)
    outcomes: list[Outcome] = []

    async def connection_loop() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for delivery in pending:  # shared iterator: each delivery is taken by exactly one loop
                request = (
                    f"POST /webhooks/stripe HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(delivery.body)}\r\n"
                    f"{HEADER}: {sign(delivery.body, secret, int(time.time()))}\r\n\r\n"
                ).encode() + delivery.body
                started = time.perf_counter()
                writer.write(request)
                status, body = await asyncio.wait_for(read_response(reader), REQUEST_TIMEOUT_S)
                elapsed = time.perf_counter() - started
                duplicate = status == 200 and bool(json.loads(body)["duplicate"])
                outcomes.append(Outcome(status, duplicate, elapsed))
        finally:
            writer.close()
            await writer.wait_closed()

    await asyncio.gather(*(connection_loop() for _ in range(connections)))
    return outcomes


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Status and body of one HTTP/1.1 response framed by Content-Length (as uvicorn frames JSON replies)."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in head[1:] if line)
    return int(head[0].split()[1]), await reader.readexactly(int(headers["content-length"]))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def receiver_process(database_url: str, secret: str, workers: int, log: IO[bytes]) -> Iterator[Receiver]:
    """``recon webhooks serve`` on a free port of 127.0.0.1, healthy, then stopped gracefully."""
    port = free_port()
    env = {**os.environ, "RECON_DATABASE_URL": database_url, "RECON_WEBHOOK_SECRET": secret}
    command = [sys.executable, "-m", "recon_pipeline.cli", "webhooks", "serve"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
    process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url, process)
        yield Receiver(port, process.pid)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and its descendants (the uvicorn workers), from Linux's /proc.

    Sampled around the load, so the receiver's startup (imports, ``migrations.upgrade``) is not counted.
    """
    ticks = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:  # exited meanwhile
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
        pending += [int(child) for child in children]
    return ticks / os.sysconf("SC_CLK_TCK")


def wait_healthy(base_url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"receiver exited during startup with {process.returncode}")
        try:
            if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"receiver not healthy within {STARTUP_TIMEOUT_S} s")


def stored_counts(database_url: str, sent_ids: set[str]) -> dict[str, int]:
    """Rows in both tables, and how many stored ids this run sent (catches strays as well as losses)."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            ids = set(connection.execute(select(payment_events.c.event_id)).scalars())
            processing = connection.execute(
                select(func.count()).select_from(payment_event_processing)
            ).scalar_one()
    finally:
        engine.dispose()
    return {"stored": len(ids), "stored_processing": processing, "stored_sent": len(ids & sent_ids)}


def percentile_ms(seconds: list[float], q: int) -> float:
    return round(statistics.quantiles(seconds, n=100, method="inclusive")[q - 1] * 1000, 2)


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    deliveries = make_deliveries(args.events, args.duplicates, args.seed)
    sent_ids = {delivery.event_id for delivery in deliveries}
    secret = f"whsec_bench_{secrets.token_hex(16)}"
    with (
        scratch_database(args.postgres_url, "recon_bench") as database_url,
        tempfile.TemporaryFile() as log,
    ):
        try:
            with receiver_process(database_url, secret, args.workers, log) as receiver:
                server_cpu = tree_cpu_seconds(receiver.pid)
                started, client_cpu = time.perf_counter(), time.process_time()
                outcomes = asyncio.run(run_load(receiver.port, deliveries, args.connections, secret))
                wall, client_cpu = time.perf_counter() - started, time.process_time() - client_cpu
                server_cpu = tree_cpu_seconds(receiver.pid) - server_cpu
        except RuntimeError:
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-4000:])
            raise
        counts = stored_counts(database_url, sent_ids)
    accepted = [o for o in outcomes if o.status == 200]
    database = make_url(database_url).database
    latencies = [o.seconds for o in outcomes]
    return {
        "database": database,  # dropped by now
        "events": args.events,
        "distinct_sent": len(sent_ids),
        "duplicates_sent": len(deliveries) - len(sent_ids),
        "requests": len(deliveries),
        "connections": args.connections,
        "workers": args.workers,
        "accepted": len(accepted),
        "accepted_new": sum(not o.duplicate for o in accepted),
        "duplicate_answers": sum(o.duplicate for o in accepted),
        "refused": len(outcomes) - len(accepted),
        **counts,
        "wall_seconds": round(wall, 3),
        "accepted_per_second": round(len(accepted) / wall),
        "stored_per_second": round(counts["stored"] / wall),
        "p50_ms": percentile_ms(latencies, 50),
        "p99_ms": percentile_ms(latencies, 99),
        "client_cpu_ms_per_request": round(client_cpu / len(deliveries) * 1000, 3),
        "server_cpu_ms_per_request": round(server_cpu / len(deliveries) * 1000, 3),
        "load_average": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000, help="distinct events sent (5000)")
    parser.add_argument("--connections", type=int, default=32, help="concurrent keep-alive connections (32)")
    parser.add_argument(
        "--duplicates", type=float, default=0.1, help="re-deliveries, share of --events (0.1)"
    )
    parser.add_argument("--workers", type=int, default=2, help="uvicorn workers of the receiver (2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--postgres-url", default=DEFAULT_POSTGRES_URL, help="server to create the database on"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs; the median run is reported (1)")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    args = parser.parse_args(argv)
    if args.events < 2 or args.connections < 1 or args.workers < 1 or not 0 <= args.duplicates <= 10:
        parser.error("--events ≥ 2, --connections and --workers ≥ 1, 0 ≤ --duplicates ≤ 10")
    if not 1 <= args.repeat <= 20:
        parser.error("1 ≤ --repeat ≤ 20")

    runs = [benchmark(args) for _ in range(args.repeat)]
    ok = all(_exact(run) and not run["refused"] for run in runs)
    figures = {
        **sorted(runs, key=lambda run: run["accepted_per_second"])[len(runs) // 2],
        "runs": [
            {name: run[name] for name in ("accepted_per_second", "stored_per_second", "p99_ms")}
            for run in runs
        ],
    }
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    else:
        print(
            f"deliveries   {figures['requests']:,} ({figures['distinct_sent']:,} distinct + "
            f"{figures['duplicates_sent']:,} duplicates) over {args.connections} connections, "
            f"{args.workers} workers"
        )
        print(
            f"accepted     {figures['accepted']:,} in {figures['wall_seconds']} s = "
            f"{figures['accepted_per_second']:,}/s ({figures['refused']} refused)"
        )
        print(
            f"stored       {figures['stored']:,} events, {figures['stored_processing']:,} pending rows = "
            f"{figures['stored_per_second']:,} distinct/s ({'exact' if _exact(figures) else 'MISMATCH'})"
        )
        print(f"latency      p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms")
        print(
            f"cpu/request  client {figures['client_cpu_ms_per_request']} ms, receiver "
            f"{figures['server_cpu_ms_per_request']} ms (load average {figures['load_average']})"
        )
        if len(runs) > 1:
            rates = ", ".join(f"{run['accepted_per_second']:,}" for run in figures["runs"])
            print(f"runs         {len(runs)}, accepted/s {rates}; the median run is shown above")
    return 0 if ok else 1


def _exact(figures: dict[str, Any]) -> bool:
    """Every distinct event sent is stored once, with its processing row: nothing lost, nothing twice."""
    return (
        figures["stored"]
        == figures["stored_sent"]
        == figures["stored_processing"]
        == figures["distinct_sent"]
    )


if __name__ == "__main__":
    raise SystemExit(main())
