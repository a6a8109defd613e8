"""What the review desk's tests share: two properties, users added through the CLI, a desk on a real
loopback server, and signing in through its form (CSRF token included)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Connection, Engine, insert, select

from recon_pipeline import cli
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies, properties
from recon_pipeline.review_desk.app import DeskSettings, review_desk_app
from recon_pipeline.review_desk.web import Clock, utc_now
from recon_pipeline.serving import ServerThread
from recon_pipeline_tests.support.dagster_processes import wait_until
from recon_pipeline_tests.support.loopback import loopback_client

NOW = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
NIGHT = "2026-12-02"
PASSWORD = "correct horse battery"
PROPERTIES = ("p1", "p2")


@dataclass
class ServedDesk:
    engine: Engine
    base_url: str

    def client(self) -> httpx.Client:
        return loopback_client(base_url=self.base_url)


def finding(
    property_id: str, record_key: str, difference: int, detail: str | None = None, **facts: object
) -> dict[str, object]:
    """A ``discrepancies`` row of ``NIGHT`` (amount_mismatch in EUR unless ``facts`` say otherwise)."""
    return {
        "property_id": property_id,
        "night": NIGHT,
        "category": "amount_mismatch",
        "record_key": record_key,
        "difference_minor": difference,
        "currency": "EUR",
        "detail": detail,
        "detected_at": NOW,
        **facts,
    }


def finding_ids(connection: Connection) -> dict[str, int]:
    """Each finding's id by its record key (a desk test's findings have one record key each)."""
    return dict(connection.execute(select(discrepancies.c.record_key, discrepancies.c.discrepancy_id)).all())


def wait_for_desk(base_url: str, log_path: Path) -> None:
    """Until a `recon review serve` child answers its sign-in page (at most 60 s); its log on failure."""

    def signin_page() -> int | None:
        try:
            return httpx.get(f"{base_url}/signin", timeout=5).status_code
        except httpx.TransportError:
            return None

    assert wait_until("recon review serve", signin_page, timeout_s=60) == 200, log_path.read_text()


def add_user(name: str, role: str, property_ids: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``recon users add`` with ``PASSWORD`` (RECON_DATABASE_URL must name the desk's database)."""
    monkeypatch.setenv("RECON_NEW_USER_PASSWORD", PASSWORD)
    assert cli.main(["users", "add", name, "--role", role, "--properties", property_ids]) == 0


@contextmanager
def desk_database(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """A migrated database with ``PROPERTIES``, for a desk in this process or a `recon review serve`
    child; RECON_DATABASE_URL names it."""
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            [
                {"property_id": p, "name": p, "timezone": "Europe/Paris", "currency": "EUR"}
                for p in PROPERTIES
            ],
        )
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    try:
        yield engine
    finally:
        engine.dispose()


@contextmanager
def served_desk(
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    dagster_ui_url: str | None = None,
    clock: Clock = utc_now,
) -> Iterator[ServedDesk]:
    """A migrated database with ``PROPERTIES`` and the desk serving it (linking to ``dagster_ui_url``,
    timing sessions and sign-in locks by ``clock``); RECON_DATABASE_URL names it."""
    with (
        desk_database(database_url, monkeypatch) as engine,
        ServerThread(
            review_desk_app(engine, DeskSettings("s" * 40, dagster_ui_url=dagster_ui_url), clock)
        ) as server,
    ):
        yield ServedDesk(engine, server.base_url)


def csrf_of(page: httpx.Response) -> str:
    """The CSRF token of the page's first form."""
    match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert match, page.text
    return match.group(1)


def sign_in(client: httpx.Client, name: str = "ana", password: str = PASSWORD) -> httpx.Response:
    token = csrf_of(client.get("/signin"))
    return client.post("/signin", data={"csrf_token": token, "name": name, "password": password})


def post_form(client: httpx.Client, path: str, data: dict[str, str]) -> httpx.Response:
    """A POST of ``data`` with the CSRF token of the signed-in session (read from ``/findings``)."""
    return client.post(path, data={"csrf_token": csrf_of(client.get("/findings")), **data})
