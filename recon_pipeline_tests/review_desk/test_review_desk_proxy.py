"""`recon review serve` behind a reverse proxy: the sign-in limit counts per client address, so the server
takes the client's address from X-Forwarded-For when (and only when) the request comes from the proxy
named by ``--forwarded-allow-ips``; without the option, from no one (not even 127.0.0.1, which uvicorn
would trust by default). Run as a person runs it: a `recon review serve` child on a loopback port, the
proxy's connections from 127.0.0.2 and everyone else's from 127.0.0.1."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import review_audit
from recon_pipeline_tests.support.dagster_processes import free_port
from recon_pipeline_tests.support.desk_fixtures import (
    PASSWORD,
    add_user,
    desk_database,
    sign_in,
    wait_for_desk,
)
from recon_pipeline_tests.support.loopback import loopback_client

PROXY = "127.0.0.2"  # the deployment's reverse proxy (Linux answers on all of 127.0.0.0/8)
DIRECT = "127.0.0.1"  # a client that reaches the desk without the proxy
LIMIT = 5  # failed sign-ins per client address before its lock (review_desk/signin.py)
_guesses = itertools.count()


@contextmanager
def recon_review_serve(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *options: str
) -> Iterator[str]:
    """`recon review serve OPTIONS` on the desk's database, with user ana; its URL."""
    port = free_port()
    log_path = tmp_path / "serve.log"
    with desk_database(database_url, monkeypatch), log_path.open("wb") as log:
        add_user("ana", "analyst", "p1")
        command = ["review", "serve", "--port", str(port), *options]
        server = subprocess.Popen(
            [sys.executable, "-m", "recon_pipeline.cli", *command],
            env={**os.environ, "RECON_REVIEW_SECRET": "s" * 40},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: ended whole below
        )
        base_url = f"http://127.0.0.1:{port}"

        try:
            wait_for_desk(base_url, log_path)
            yield base_url
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


@pytest.fixture
def desk_behind_proxy(database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """`recon review serve --forwarded-allow-ips PROXY`; its URL."""
    with recon_review_serve(database_url, monkeypatch, tmp_path, "--forwarded-allow-ips", PROXY) as url:
        yield url


@pytest.fixture
def desk_served_directly(database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """`recon review serve` as the README serves it, without a proxy; its URL."""
    with recon_review_serve(database_url, monkeypatch, tmp_path) as url:
        yield url


def attempt(base_url: str, source: str, forwarded_for: str, name: str = "", password: str = "wrong") -> int:
    """One sign-in from the ``source`` address claiming to be for ``forwarded_for``; its status. A fresh
    name per wrong guess, so only the per-client budget can run out."""
    transport = httpx.HTTPTransport(local_address=source)
    headers = {"X-Forwarded-For": forwarded_for}
    with loopback_client(base_url=base_url, transport=transport, headers=headers, timeout=10) as client:
        return sign_in(client, name or f"guess{next(_guesses)}", password).status_code


def test_clients_behind_the_named_proxy_have_their_own_sign_in_budgets(desk_behind_proxy: str) -> None:
    guesser = [attempt(desk_behind_proxy, PROXY, "203.0.113.7") for _ in range(LIMIT + 1)]
    assert guesser == [401] * LIMIT + [429]
    # Another client behind the same proxy: neither the guesser's budget nor the proxy's own address.
    assert attempt(desk_behind_proxy, PROXY, "203.0.113.8", "ana", PASSWORD) == 303
    assert attempt(desk_behind_proxy, PROXY, "203.0.113.9") == 401


def test_a_forwarded_for_header_from_anywhere_else_is_ignored(desk_behind_proxy: str) -> None:
    """A direct client claims a new address on every attempt: all count against its own address."""
    claims = [attempt(desk_behind_proxy, DIRECT, f"198.51.100.{i}") for i in range(LIMIT + 1)]
    assert claims == [401] * LIMIT + [429]
    assert attempt(desk_behind_proxy, PROXY, "198.51.100.1") == 401  # the same claim, from the proxy


def test_served_without_a_proxy_no_forwarded_for_is_trusted_not_even_from_127_0_0_1(
    desk_served_directly: str, database_url: str
) -> None:
    """Every local client claims a new address on every wrong guess: all count against its own address,
    the only one the lock records."""
    claims = [attempt(desk_served_directly, DIRECT, f"198.51.100.{i}") for i in range(LIMIT + 1)]
    assert claims == [401] * LIMIT + [429]
    assert attempt(desk_served_directly, PROXY, "198.51.100.1", "ana", PASSWORD) == 303  # another address
    engine = make_engine(database_url)
    with engine.connect() as connection:
        locked = connection.execute(
            select(review_audit.c.target).where(review_audit.c.action == "sign_in_locked")
        ).scalars()
        assert [target for target in locked if target.startswith("client:")] == [f"client:{DIRECT}"]
    engine.dispose()
