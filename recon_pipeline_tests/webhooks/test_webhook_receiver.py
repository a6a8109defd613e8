"""The webhook receiver over real HTTP on 127.0.0.1, on SQLite and on PostgreSQL.

Every refused delivery is checked twice: the status code the provider sees, and that neither
``payment_events`` nor ``payment_event_processing`` gained a row.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, select

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import payment_event_processing, payment_events
from recon_pipeline.providers import PROVIDER_NAMES, provider_named
from recon_pipeline.providers.stripe.webhook import sign
from recon_pipeline.serving import ServerThread
from recon_pipeline.webhooks.receiver import build_receiver
from recon_pipeline_tests.support import webhook_receiver
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.provider_fixtures import (
    WEBHOOK_SECRET,
    Flavour,
    make_charge,
    make_payment_intent,
)
from recon_pipeline_tests.support.webhook_receiver import (
    MAX_BODY,
    OLD_SECRET,
    PATH,
    SECRET,
    Receiver,
    counts,
    event_body,
    signed,
)

receiver = webhook_receiver.receiver  # the receiver fixture (SQLite and PostgreSQL)


def raw_request(server: ServerThread, request: bytes) -> int:
    """Send bytes httpx would refuse to send (a Content-Length that lies) and return the status code."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request)
        status_line = sock.makefile("rb").readline()
    return int(status_line.split()[1])


def test_valid_event_is_stored_once_byte_identical_and_pending(receiver: Receiver) -> None:
    body = event_body("evt_ünïcode_1")
    response = receiver.client.post(PATH, content=body, headers=signed(body))
    assert response.status_code == 200
    assert response.json() == {"received": True, "duplicate": False}
    with receiver.engine.connect() as connection:
        stored = connection.execute(select(payment_events)).mappings().one()
        processing = connection.execute(select(payment_event_processing)).mappings().one()
    assert stored["payload"].encode() == body
    assert (stored["event_id"], stored["provider"], stored["event_type"], stored["provider_payment_id"]) == (
        "evt_ünïcode_1",
        "stripe",
        "payment_intent.succeeded",
        "pi_123",
    )
    assert abs(stored["received_at"].timestamp() - time.time()) < 60
    assert (processing["event_id"], processing["status"], processing["attempts"]) == (
        "evt_ünïcode_1",
        "pending",
        0,
    )


def test_duplicate_delivery_is_200_and_stores_nothing_new(receiver: Receiver) -> None:
    body = event_body()
    assert receiver.client.post(PATH, content=body, headers=signed(body)).json()["duplicate"] is False
    # Stripe re-signs each retry; during a rotation the retry may carry the other secret.
    for secret in (SECRET, OLD_SECRET):
        response = receiver.client.post(PATH, content=body, headers=signed(body, secret))
        assert response.status_code == 200
        assert response.json() == {"received": True, "duplicate": True}
    assert counts(receiver.engine) == (1, 1)


def test_concurrent_duplicates_store_exactly_one(receiver: Receiver) -> None:
    body = event_body("evt_race")

    def deliver(_: int) -> bool:
        response = receiver.client.post(PATH, content=body, headers=signed(body))
        assert response.status_code == 200
        return bool(response.json()["duplicate"])

    with ThreadPoolExecutor(8) as pool:
        duplicates = list(pool.map(deliver, range(16)))
    assert duplicates.count(False) == 1
    assert counts(receiver.engine) == (1, 1)


def _no_object() -> bytes:
    return event_body(data={"previous_attributes": {}})


def _oversized() -> bytes:
    return event_body(description="x" * MAX_BODY)


Send = Callable[[Receiver], httpx.Response]


def _post(body: bytes, headers: dict[str, str]) -> Send:
    return lambda r: r.client.post(PATH, content=body, headers=headers)


def _chunked_oversized(r: Receiver) -> httpx.Response:
    body = _oversized()
    # A generator body goes out chunked, without Content-Length: only counting while reading catches it.
    return r.client.post(
        PATH, content=(body[i : i + 1000] for i in range(0, len(body), 1000)), headers=signed(body)
    )


def bad_deliveries() -> dict[str, tuple[Send, int, str | None]]:
    """Each bad delivery, signed now (a signature made at import would go stale in a long run)."""
    return {
        "wrong_secret": (
            _post(event_body(), signed(event_body(), "whsec_attacker")),
            400,
            "no_matching_signature",
        ),
        "tampered_body": (_post(event_body(amount=1), signed(event_body())), 400, "no_matching_signature"),
        "stale_timestamp": (
            _post(event_body(), signed(event_body(), age_s=301)),
            400,
            "timestamp_outside_tolerance",
        ),
        "future_timestamp": (
            _post(event_body(), signed(event_body(), age_s=-400)),
            400,
            "timestamp_outside_tolerance",
        ),
        "missing_header": (_post(event_body(), {"Content-Type": "application/json"}), 400, "missing_header"),
        "malformed_header": (
            _post(event_body(), {"Stripe-Signature": "t=now,v1=abc"}),
            400,
            "malformed_header",
        ),
        "v0_only": (_post(event_body(), {"Stripe-Signature": "t=1,v0=abc"}), 400, "no_v1_signature"),
        "malformed_json": (_post(b'{"id": "evt_1",', signed(b'{"id": "evt_1",')), 400, "malformed_event"),
        "not_utf8": (_post(b'{"id": "\xff"}', signed(b'{"id": "\xff"}')), 400, "malformed_event"),
        "missing_id": (_post(event_body(id=None), signed(event_body(id=None))), 400, "malformed_event"),
        "missing_type": (_post(event_body(type=""), signed(event_body(type=""))), 400, "malformed_event"),
        "missing_data_object": (_post(_no_object(), signed(_no_object())), 400, "malformed_event"),
        "oversized_signed": (_post(_oversized(), signed(_oversized())), 413, "body_too_large"),
        "oversized_chunked": (_chunked_oversized, 413, "body_too_large"),
        "get": (lambda r: r.client.get(PATH), 405, None),
        "put": (lambda r: r.client.put(PATH, content=event_body(), headers=signed(event_body())), 405, None),
    }


BAD_CASES = list(bad_deliveries())


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_delivery_is_refused_and_stores_nothing(receiver: Receiver, case: str) -> None:
    send, status, reason = bad_deliveries()[case]
    response = send(receiver)
    assert response.status_code == status
    if reason is not None:
        assert response.json() == {"error": reason}
    assert SECRET not in response.text and OLD_SECRET not in response.text
    assert counts(receiver.engine) == (0, 0)


def test_content_length_that_claims_too_much_is_refused_before_reading(receiver: Receiver) -> None:
    body = event_body()
    header = sign(body, SECRET, int(time.time()))
    request = (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nStripe-Signature: {header}\r\n"
        f"Content-Length: {MAX_BODY * 100}\r\n\r\n"
    ).encode() + body
    assert raw_request(receiver.server, request) == 413
    assert counts(receiver.engine) == (0, 0)


def test_accepted_event_is_logged_by_id_without_body_or_secret(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="recon_pipeline")
    body = event_body("evt_logged")
    receiver.client.post(PATH, content=body, headers=signed(body))
    receiver.client.post(PATH, content=body, headers=signed(body, "whsec_attacker"))
    lines = [record.getMessage() for record in caplog.records if record.name.startswith("recon_pipeline")]
    assert "webhook event evt_logged type=payment_intent.succeeded duplicate=False" in lines
    assert "webhook rejected: no_matching_signature" in lines
    assert not any("pi_123" in line or SECRET in line or "t=" in line for line in lines)


def test_healthz_reports_a_reachable_database(receiver: Receiver) -> None:
    response = receiver.client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "reachable", "event_conflicts": 0}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["sqlite", "postgres"])
def unreachable_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An engine whose database cannot be opened: a SQLite path that is a directory, or a closed port."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}"
    else:
        url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/test"
    engine = make_engine(url)
    yield engine
    engine.dispose()


def test_unreachable_database_is_503_everywhere_and_logs_no_payload(
    unreachable_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="recon_pipeline")
    body = event_body("evt_down")
    app = build_receiver(unreachable_engine, [SECRET])
    with ServerThread(app) as server, loopback_client(base_url=server.base_url, timeout=10) as client:
        health = client.get("/healthz")
        delivery = client.post(PATH, content=body, headers=signed(body))
    assert health.status_code == 503
    assert health.json() == {"status": "unavailable", "database": "unreachable"}
    assert delivery.status_code == 503  # Stripe retries non-2xx answers
    assert delivery.json() == {"error": "database_unavailable"}
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "could not store webhook event evt_down" in logged
    assert "pi_123" not in logged and "payment_intent.succeeded" not in logged and SECRET not in logged


def _recon(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recon_pipeline.cli", "webhooks", "serve", "--port", "12112", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _env(tmp_path: Path, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECON_")}
    return {**env, "RECON_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite'}", **variables}


@pytest.mark.parametrize("secret", [None, "", " , "])
@pytest.mark.slow  # a `recon` process
def test_cli_without_a_secret_exits_2_with_one_line(tmp_path: Path, secret: str | None) -> None:
    env = _env(tmp_path) if secret is None else _env(tmp_path, RECON_WEBHOOK_SECRET=secret)
    completed = _recon(env)
    assert completed.returncode == 2
    assert completed.stderr.strip().count("\n") == 0
    assert "RECON_WEBHOOK_SECRET" in completed.stderr
    assert not (tmp_path / "cli.sqlite").exists()  # refused before touching the database


@pytest.mark.slow  # a `recon` process
def test_cli_configuration_errors_never_print_the_secret(tmp_path: Path) -> None:
    unreachable = f"postgresql://postgres@127.0.0.1:{_closed_port()}/test"
    for env, code in (  # an unreachable database is a failure (1), a malformed setting bad input (2)
        (_env(tmp_path, RECON_WEBHOOK_SECRET=f"{SECRET},{OLD_SECRET}", RECON_DATABASE_URL=unreachable), 1),
        (_env(tmp_path, RECON_WEBHOOK_SECRET=SECRET, RECON_WEBHOOK_MAX_BODY_BYTES="lots"), 2),
    ):
        completed = _recon(env)
        assert completed.returncode == code, completed.stderr
        assert completed.stderr.startswith("error: ") and completed.stderr.strip().count("\n") == 0
        assert SECRET not in completed.stderr + completed.stdout
        assert OLD_SECRET not in completed.stderr + completed.stdout


def test_concurrent_mixed_deliveries_share_transactions_correctly(receiver: Receiver) -> None:
    bodies = [event_body(f"evt_mix_{i:03d}") for i in range(40)]

    def deliver(body: bytes) -> bool:
        response = receiver.client.post(PATH, content=body, headers=signed(body))
        assert response.status_code == 200
        return bool(response.json()["duplicate"])

    with ThreadPoolExecutor(16) as pool:
        duplicates = list(pool.map(deliver, bodies + bodies[::-1]))
    assert duplicates.count(False) == 40
    assert counts(receiver.engine) == (40, 40)


def test_an_unknown_provider_is_a_404_and_stores_nothing(receiver: Receiver) -> None:
    body = event_body("evt_nobody")
    response = receiver.client.post("/webhooks/nobody", content=body, headers=signed(body))
    assert (response.status_code, response.json()) == (404, {"error": "unknown_provider"})
    assert counts(receiver.engine) == (0, 0)


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_every_registered_provider_refuses_an_unsigned_delivery(receiver: Receiver, provider: str) -> None:
    """One route serves the registry: each provider's own check refuses a delivery it did not sign."""
    body = event_body("evt_unsigned")
    response = receiver.client.post(
        f"/webhooks/{provider}", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    refusals = {"missing_header", "malformed_header", "no_matching_signature", "malformed_event"}
    assert response.json()["error"] in refusals
    assert counts(receiver.engine) == (0, 0)


def test_every_registered_provider_stores_its_signed_delivery_once_and_acknowledges_it(
    database_url: str, provider: Flavour
) -> None:
    """The provider's own signed webhook about a payment, POSTed twice: stored once and pending, and each
    delivery answered with the provider's acknowledgement (the second as a duplicate)."""
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    charge = make_charge(provider.charge_id("hook"), int(time.time()) - 60)
    intent = make_payment_intent(charge)
    body, headers = provider.payment_delivery("evt_hook", charge, intent, int(time.time()))
    app = build_receiver(engine, [WEBHOOK_SECRET], max_body_bytes=64 * 1024)
    with ServerThread(app) as server, loopback_client(base_url=server.base_url, timeout=10) as client:
        answers = [client.post(f"/webhooks/{provider.name}", content=body, headers=headers) for _ in range(2)]
    expected = [provider_named(provider.name).acknowledgement([outcome]) for outcome in ("new", "duplicate")]
    assert [(a.status_code, a.text, a.headers["content-type"].split(";")[0]) for a in answers] == [
        (200, text, media_type) for text, media_type in expected
    ]
    assert counts(engine) == (1, 1)
    with engine.connect() as connection:
        stored = connection.execute(select(payment_events)).mappings().one()
    payment_id = intent["id"] if provider.intents else charge["id"]  # what the order is keyed by
    assert (stored["provider"], stored["provider_payment_id"]) == (provider.name, payment_id)
    engine.dispose()
