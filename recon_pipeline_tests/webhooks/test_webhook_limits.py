"""The receiver's limits, on a real ``recon webhooks serve`` process on 127.0.0.1: a frozen database is a
503 within 5 s and the provider's retry is stored once; oversized headers are a 431 and slow ones are cut,
with the receiver's memory measured; a reused event id with another body is kept as evidence."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, Table, func, select

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import payment_event_conflicts, payment_event_processing, payment_events
from recon_pipeline.serving import ServerThread
from recon_pipeline.webhooks.receiver import build_receiver
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.throwaway_postgres import ThrowawayCluster, free_port, throwaway_cluster
from recon_pipeline_tests.support.webhook_receiver import PATH, SECRET, event_body, signed

HEADER_TIMEOUT_S = 2
MAX_HEADER_BYTES = 16 * 1024


@dataclass
class ReceiverProcess:
    popen: subprocess.Popen[bytes]
    base_url: str
    port: int

    def rss_bytes(self) -> int:
        """The receiver process's resident memory, from /proc."""
        for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")


@contextmanager
def receiver_process(database_url: str, **variables: str) -> Iterator[ReceiverProcess]:
    """``recon webhooks serve`` on a free port (one worker: the CLI's process is the server), ready when
    /healthz answers 200; terminated and reaped afterwards."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECON_")}
    env |= {"RECON_DATABASE_URL": database_url, "RECON_WEBHOOK_SECRET": SECRET, **variables}
    command = [sys.executable, "-m", "recon_pipeline.cli", "webhooks", "serve", "--port", str(port)]
    popen = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    process = ReceiverProcess(popen, f"http://127.0.0.1:{port}", port)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert popen.poll() is None, "the receiver exited during startup"
            assert time.monotonic() < deadline, "the receiver did not answer /healthz within 60 s"
            try:
                if httpx.get(f"{process.base_url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        yield process
    finally:
        popen.terminate()
        try:
            popen.wait(timeout=20)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait(timeout=20)


def _count(engine: Engine, table: Table, **where: str) -> int:
    query = select(func.count()).select_from(table).where(*(table.c[k] == v for k, v in where.items()))
    with engine.connect() as connection:
        return int(connection.execute(query).scalar_one())


def _deliver(base_url: str, body: bytes, timeout_s: float = 10) -> tuple[int, float]:
    started = time.monotonic()
    response = httpx.post(f"{base_url}{PATH}", content=body, headers=signed(body), timeout=timeout_s)
    return response.status_code, time.monotonic() - started


# ----- a frozen database ----------------------------------------------------------------------------------


@pytest.fixture
def cluster() -> Iterator[ThrowawayCluster]:
    with throwaway_cluster() as started:
        yield started


@pytest.mark.postgres
@pytest.mark.slow
def test_a_frozen_database_is_a_503_within_5_s_and_the_retry_after_the_thaw_is_stored_once(
    cluster: ThrowawayCluster,
) -> None:
    engine = make_engine(cluster.url)
    with receiver_process(cluster.url) as receiver:
        assert _deliver(receiver.base_url, event_body("evt_before"))[0] == 200  # pooled connections exist

        cluster.freeze()
        try:
            frozen = event_body("evt_frozen")
            status, elapsed = _deliver(receiver.base_url, frozen)
            assert (status, elapsed < 5) == (503, True), elapsed
            print(f"frozen database: {status} after {elapsed:.2f} s")  # the figure, with pytest -s
            started = time.monotonic()
            health = httpx.get(f"{receiver.base_url}/healthz", timeout=10)
            assert (health.status_code, time.monotonic() - started < 5) == (503, True)
            assert _deliver(receiver.base_url, event_body("evt_frozen_2"))[0] == 503  # still answers
        finally:
            cluster.thaw()

        deadline = time.monotonic() + 30  # the provider retries until it gets a 2xx
        while (status := _deliver(receiver.base_url, frozen)[0]) != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert status == 200
        assert _deliver(receiver.base_url, frozen)[0] == 200  # a later retry: still one row

    assert _count(engine, payment_events, event_id="evt_frozen") == 1
    assert _count(engine, payment_event_processing, event_id="evt_frozen") == 1
    assert _count(engine, payment_events, event_id="evt_before") == 1
    engine.dispose()


# ----- header size and header time --------------------------------------------------------------------


@pytest.fixture
def limited_receiver(sqlite_url: str) -> Iterator[ReceiverProcess]:
    with receiver_process(
        sqlite_url,
        RECON_WEBHOOK_MAX_HEADER_BYTES=str(MAX_HEADER_BYTES),
        RECON_WEBHOOK_HEADER_TIMEOUT_S=str(HEADER_TIMEOUT_S),
    ) as receiver:
        yield receiver


def _request_head(port: int) -> bytes:
    return f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n".encode()


@pytest.mark.slow  # a receiver process
def test_oversized_headers_are_a_431_and_64_mib_are_refused_early_with_bounded_memory(
    limited_receiver: ReceiverProcess, sqlite_url: str
) -> None:
    receiver = limited_receiver
    filler = b"X-Filler: " + b"a" * 1000 + b"\r\n"
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as sock:
        sock.sendall(_request_head(receiver.port) + filler * (2 * MAX_HEADER_BYTES // len(filler)))
        assert sock.makefile("rb").readline().split()[1] == b"431"

    rss_before = receiver.rss_bytes()
    chunk = filler * 64  # 64 KiB of header lines per send
    sent = 0
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)  # what we sent is what it was offered
        sock.settimeout(10)
        sock.connect(("127.0.0.1", receiver.port))
        sock.sendall(_request_head(receiver.port))
        refused = False
        try:
            while sent < 64 * 1024 * 1024:
                sock.sendall(chunk)
                sent += len(chunk)
        except (ConnectionResetError, BrokenPipeError):  # the receiver closed: not a stall (TimeoutError)
            refused = True
    assert refused, "64 MiB of headers were read to the end"
    assert sent < 8 * 1024 * 1024, f"{sent} bytes of headers were read before the connection was closed"
    grown = receiver.rss_bytes() - rss_before
    print(f"oversized headers: cut after {sent:,} bytes sent, receiver RSS grew {grown:,} bytes")
    assert grown < 16 * 1024 * 1024

    body = event_body("evt_after_refusals")
    assert _deliver(receiver.base_url, body)[0] == 200  # the receiver still serves
    engine = make_engine(sqlite_url)
    assert _count(engine, payment_events) == 1
    engine.dispose()


def _whole_request(port: int, body: bytes, extra_headers: bytes) -> bytes:
    """A signed delivery, head and body, as one buffer: sent in one write, it is parsed in one read."""
    head = b"".join(f"{name}: {value}\r\n".encode() for name, value in signed(body).items())
    return (
        _request_head(port)
        + head
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n".encode()
        + extra_headers
        + b"\r\n"
        + body
    )


@pytest.mark.slow  # a receiver process
def test_a_delivery_with_100_kib_of_headers_in_one_write_is_a_431_and_nothing_is_stored(
    limited_receiver: ReceiverProcess, sqlite_url: str
) -> None:
    filler = b"X-Filler: " + b"a" * 1000 + b"\r\n"
    oversized = event_body("evt_oversized_in_one_write")
    request = _whole_request(limited_receiver.port, oversized, filler * 103)
    assert len(request) - len(oversized) > 100 * 1024
    with socket.create_connection(("127.0.0.1", limited_receiver.port), timeout=10) as sock:
        sock.sendall(request)
        assert sock.makefile("rb").readline().split()[1] == b"431"

    within = event_body("evt_within_the_cap_in_one_write")  # the same shape under the cap is stored
    with socket.create_connection(("127.0.0.1", limited_receiver.port), timeout=10) as sock:
        sock.sendall(_whole_request(limited_receiver.port, within, filler * 4))
        assert sock.makefile("rb").readline().split()[1] == b"200"
    engine = make_engine(sqlite_url)
    assert _count(engine, payment_events, event_id="evt_within_the_cap_in_one_write") == 1
    assert _count(engine, payment_events, event_id="evt_oversized_in_one_write") == 0
    engine.dispose()


@pytest.mark.slow  # a receiver process
def test_headers_slower_than_the_deadline_get_the_connection_cut(limited_receiver: ReceiverProcess) -> None:
    receiver = limited_receiver
    head = _request_head(receiver.port)
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as sock:
        started = time.monotonic()
        cut_after = None
        for byte in head * 10:  # one byte every 0.2 s: at most 20 s
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                cut_after = time.monotonic() - started
                break
            sock.settimeout(0.2)
            try:
                if sock.recv(1024) == b"":
                    cut_after = time.monotonic() - started
                    break
            except TimeoutError:
                pass
    assert cut_after is not None, "a client sending a byte every 0.2 s was never cut"
    assert HEADER_TIMEOUT_S - 0.5 <= cut_after <= HEADER_TIMEOUT_S + 2, cut_after

    body = event_body("evt_prompt")  # a client that sends its headers at once is unaffected
    assert _deliver(receiver.base_url, body)[0] == 200


# ----- a reused event id with another body ------------------------------------------------------------


def test_a_reused_event_id_with_another_body_is_kept_as_evidence_and_counted(database_url: str) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    original = event_body("evt_twice")
    tampered = event_body("evt_twice", type="charge.refunded")
    reserialised = original.replace(b"\n  ", b"\n    ")  # other bytes, same JSON: no conflict
    app = build_receiver(engine, [SECRET])
    with ServerThread(app) as server, loopback_client(base_url=server.base_url) as client:
        assert client.post(PATH, content=original, headers=signed(original)).json()["duplicate"] is False
        assert client.post(PATH, content=reserialised, headers=signed(reserialised)).json() == {
            "received": True,
            "duplicate": True,
        }
        for _ in range(2):  # kept once per distinct body
            response = client.post(PATH, content=tampered, headers=signed(tampered))
            assert (response.status_code, response.json()) == (
                200,
                {"received": True, "duplicate": True, "conflict": True},
            )
        health = client.get("/healthz").json()

    assert health["event_conflicts"] == 1
    with engine.connect() as connection:
        stored = connection.execute(select(payment_events)).mappings().one()
        kept = connection.execute(select(payment_event_conflicts)).mappings().one()
    assert stored["payload"].encode() == original  # the stored event is never modified
    assert (kept["event_id"], kept["payload"].encode(), kept["provider"]) == ("evt_twice", tampered, "stripe")
    assert kept["received_at"] is not None and len(kept["body_sha256"]) == 64
    assert _count(engine, payment_event_processing) == 1
    engine.dispose()
