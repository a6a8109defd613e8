"""What the review desk's tests share: two properties, users added through the CLI, a desk on a real
loopback server, and signing in through its form (CSRF token included)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from argon2 import PasswordHasher
from sqlalchemy import Connection, Engine, insert, select

from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies, properties, review_users
from recon_pipeline.review_desk.app import DeskSettings, review_desk_app
from recon_pipeline.review_desk.users import parse_properties
from recon_pipeline.review_desk.web import Clock, utc_now
from recon_pipeline_tests.support.dagster_processes import wait_until
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.migrated import migrated_engine
from recon_pipeline_tests.support.shared_servers import serving

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


@functools.cache
def cheap_password_hash() -> str:
    """An argon2id hash of ``PASSWORD`` at the lowest cost argon2 allows, made once per process.

    The desk verifies whatever parameters a stored hash names, so its sign-in works the same on it; at
    the desk's own cost (~0.09 s to hash, as much to verify) the fast tier's few hundred users and
    sign-ins would spend ~20 s of CPU on hashing. `recon users add` itself, with the real cost, is
    tested in ``review_desk/test_review_desk.py``."""
    return PasswordHasher(time_cost=1, memory_cost=8, parallelism=1).hash(PASSWORD)


def add_user(name: str, role: str, property_ids: str) -> None:
    """A desk user with ``PASSWORD``, as `recon users add` stores one, in the database RECON_DATABASE_URL
    names (the desk's)."""
    engine = make_engine(os.environ["RECON_DATABASE_URL"])
    try:
        with engine.begin() as connection:
            connection.execute(
                insert(review_users).values(
                    name=name,
                    role=role,
                    properties=",".join(parse_properties(property_ids)),
                    password_hash=cheap_password_hash(),
                    created_at=datetime.now(UTC),
                )
            )
    finally:
        engine.dispose()


@contextmanager
def desk_database(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """A migrated database with ``PROPERTIES``, for a desk in this process or a `recon review serve`
    child; RECON_DATABASE_URL names it."""
    engine = migrated_engine(database_url)
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
        serving(
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
