"""Review desk sessions that end and a sign-in limit that cannot lock anyone out for good, on a real server
(127.0.0.1) over SQLite and PostgreSQL, the desk's clock moved by the test: a cookie copied before
sign-out, a password or role change, the idle and the absolute lifetime; failed sign-ins only, per name and
per client address (each client its own loopback address), shared by two desk servers, a lock lifted by its
bound and by `recon users unlock`; and no page of account data cached."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import Engine, insert, select

from recon_pipeline import cli
from recon_pipeline.db.schema import discrepancies, discrepancy_reviews, review_audit, review_sessions
from recon_pipeline.review_desk.app import SESSION_COOKIE, DeskSettings, review_desk_app
from recon_pipeline.review_desk.sessions import SessionLimits
from recon_pipeline.review_desk.signin import SignInLimit
from recon_pipeline.serving import ServerThread
from recon_pipeline_tests.support.desk_fixtures import (
    NIGHT,
    PASSWORD,
    add_user,
    csrf_of,
    finding,
    finding_ids,
    served_desk,
    sign_in,
)
from recon_pipeline_tests.support.loopback import loopback_client

LOCK = timedelta(seconds=SignInLimit().lock_s)
IDLE = timedelta(seconds=SessionLimits().idle_s)
LIFETIME = timedelta(seconds=SessionLimits().lifetime_s)
_addresses = itertools.count(2)


def new_address() -> str:
    """127.0.0.2, 127.0.0.3, …: a client address no other client of the test has (Linux answers on all of
    127.0.0.0/8)."""
    return f"127.0.0.{next(_addresses)}"


@dataclass
class MovedClock:
    """The desk's clock, moved by the test."""

    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __call__(self) -> datetime:
        return self.now

    def move(self, by: timedelta) -> None:
        self.now += by


@dataclass
class Desk:
    engine: Engine
    base_url: str
    clock: MovedClock
    finding_id: int

    def client(self, address: str | None = None) -> httpx.Client:
        """A client from its own loopback address (a new one unless ``address``)."""
        transport = httpx.HTTPTransport(local_address=address or new_address())
        return loopback_client(base_url=self.base_url, transport=transport, timeout=10)

    def audit(self) -> list[tuple[str, str, str | None]]:
        c = review_audit.c
        with self.engine.connect() as connection:
            return [tuple(row) for row in connection.execute(select(c.user_name, c.action, c.target))]


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    clock = MovedClock()
    with served_desk(database_url, monkeypatch, clock=clock) as served:
        with served.engine.begin() as connection:
            connection.execute(insert(discrepancies), [finding("p1", "r-1", 1500)])
            ids = finding_ids(connection)
        add_user("ana", "analyst", "p1")
        add_user("bob", "analyst", "p1")
        yield Desk(served.engine, served.base_url, clock, ids["r-1"])


def signed_in(client: httpx.Client) -> bool:
    """Whether the client's session shows the findings (else the desk sends it to sign in)."""
    response = client.get("/findings")
    assert response.status_code in (200, 303), response.status_code
    return response.status_code == 200 and response.headers.get("location") is None


def replay(desk: Desk, cookie: str) -> httpx.Client:
    """A client from elsewhere holding a copy of ``cookie``."""
    client = desk.client()
    client.cookies.set(SESSION_COOKIE, cookie)
    return client


def acknowledge(client: httpx.Client, desk: Desk, csrf_token: str) -> httpx.Response:
    data = {"csrf_token": csrf_token, "action": "acknowledge", "comment": "seen", "difference_seen": "1500"}
    return client.post(f"/findings/{desk.finding_id}/review", data=data)


def assert_nothing_reviewed(desk: Desk) -> None:
    with desk.engine.connect() as connection:
        assert connection.execute(select(discrepancies.c.review_status)).scalar_one() == "open"
        assert connection.execute(select(discrepancy_reviews)).all() == []
    assert [row for row in desk.audit() if row[1] == "acknowledge"] == []


def test_a_cookie_replayed_after_sign_out_is_signed_out_and_its_post_refused(desk: Desk) -> None:
    with desk.client() as ana, desk.client() as ana_elsewhere:
        assert sign_in(ana).status_code == 303 and sign_in(ana_elsewhere).status_code == 303
        token = csrf_of(ana.get("/findings"))
        copied = ana.cookies[SESSION_COOKIE]  # taken with its CSRF token
        assert ana.post("/signout", data={"csrf_token": token}).status_code == 303
        assert not signed_in(ana)
        with replay(desk, copied) as thief:
            assert not signed_in(thief)
            refused = acknowledge(thief, desk, token)  # the cookie's own CSRF token, still valid as a form
            assert (refused.status_code, refused.headers["location"]) == (303, "/signin")
        assert signed_in(ana_elsewhere)  # sign-out ends that session only
    assert_nothing_reviewed(desk)
    assert [row[:2] for row in desk.audit()] == [("ana", "sign_in"), ("ana", "sign_in"), ("ana", "sign_out")]


def test_a_new_password_or_role_signs_the_old_sessions_out(
    desk: Desk, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with desk.client() as ana, desk.client() as bob:
        assert sign_in(ana).status_code == 303 and sign_in(bob, "bob").status_code == 303
        token = csrf_of(ana.get("/findings"))
        copied = ana.cookies[SESSION_COOKIE]  # taken with its CSRF token
        monkeypatch.setenv("RECON_NEW_USER_PASSWORD", "a brand new passphrase")
        capsys.readouterr()
        assert cli.main(["users", "change", "ana", "--new-password"]) == 0
        assert capsys.readouterr().out == "ana is analyst for p1; password changed; 1 session ended\n"
        assert not signed_in(ana)
        with replay(desk, copied) as thief:
            assert acknowledge(thief, desk, token).headers["location"] == "/signin"
        assert signed_in(bob)  # another user's session goes on
        assert sign_in(ana, "ana", PASSWORD).status_code == 401
        assert sign_in(ana, "ana", "a brand new passphrase").status_code == 303 and signed_in(ana)
        assert cli.main(["users", "change", "bob", "--role", "approver"]) == 0
        assert capsys.readouterr().out == "bob is approver for p1; 1 session ended\n"
        assert not signed_in(bob) and signed_in(ana)
    assert_nothing_reviewed(desk)


def test_a_session_ends_when_idle_and_at_its_lifetime_however_busy(desk: Desk) -> None:
    with desk.client() as busy, desk.client() as idle:
        assert sign_in(busy).status_code == 303 and sign_in(idle).status_code == 303
        for _ in range(5):  # a request every 2 h 24 min: never idle, and every response renews the cookie
            desk.clock.move(LIFETIME / 5 - timedelta(seconds=1))
            assert signed_in(busy)
        assert not signed_in(idle)  # idle since sign-in for longer than IDLE
        desk.clock.move(timedelta(seconds=5))
        assert not signed_in(busy)  # LIFETIME after sign-in
        assert sign_in(busy).status_code == 303 and signed_in(busy)
        desk.clock.move(IDLE - timedelta(seconds=1))
        assert signed_in(busy)
        desk.clock.move(IDLE)
        assert not signed_in(busy)
    with desk.engine.connect() as connection:
        assert connection.execute(select(review_sessions)).all() == []  # ended sessions are removed


def test_failed_sign_ins_lock_a_name_for_a_bounded_time_and_good_ones_never_count(desk: Desk) -> None:
    guesser_address = new_address()
    with desk.client(guesser_address) as guesser, desk.client() as ana, desk.client() as bob:
        for _ in range(8):  # good sign-ins do not count: bob signs in as often as he likes
            assert sign_in(bob, "bob").status_code == 303
        assert [sign_in(guesser, "ana", "wrong password!").status_code for _ in range(6)] == [401] * 5 + [429]
        assert sign_in(guesser, "bob").status_code == 429  # the guesser's address is locked as well
        assert sign_in(ana).status_code == 429  # so is the name, from any address, right password or not
        assert "Too many failed sign-ins: wait 15 minutes." in sign_in(ana).text
        desk.clock.move(LOCK - timedelta(seconds=10))
        assert sign_in(ana).status_code == 429  # refused while locked: not counted, the lock not extended
        desk.clock.move(timedelta(seconds=11))
        assert sign_in(ana).status_code == 303 and signed_in(ana)
        assert sign_in(guesser, "bob").status_code == 303  # the address is free again too
    assert sorted(row for row in desk.audit() if row[1] == "sign_in_locked") == [
        ("ana", "sign_in_locked", f"client:{guesser_address}"),
        ("ana", "sign_in_locked", "name:ana"),
    ]


def test_a_lock_is_shared_by_two_desk_servers_and_lifted_by_users_unlock(
    desk: Desk, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = DeskSettings("s" * 40)
    with ServerThread(review_desk_app(desk.engine, settings, desk.clock)) as other_server:
        for _ in range(5):
            with desk.client() as guesser:  # a new address each time: only the name's count runs out
                assert sign_in(guesser, "ana", "wrong password!").status_code == 401
        transport = httpx.HTTPTransport(local_address=new_address())
        with loopback_client(base_url=other_server.base_url, transport=transport) as ana:
            assert sign_in(ana).status_code == 429  # the other desk process counts the same failures
            capsys.readouterr()
            assert cli.main(["users", "unlock", "ana", "--by", "root"]) == 0
            assert capsys.readouterr().out == "unlocked ana: 5 failed sign-ins forgotten\n"
            assert sign_in(ana).status_code == 303 and signed_in(ana)
    assert [row for row in desk.audit() if row[1] in ("sign_in_locked", "unlock")] == [
        ("ana", "sign_in_locked", "name:ana"),
        ("root", "unlock", "ana"),
    ]
    assert cli.main(["users", "unlock", "ana", "--by", "root"]) == 0
    assert capsys.readouterr().out == "unlocked ana: 0 failed sign-ins forgotten\n"
    assert cli.main(["users", "unlock", "an a"]) == 2


def test_no_page_or_export_of_account_data_is_cached(desk: Desk) -> None:
    pages = [
        "/findings",
        f"/findings/{desk.finding_id}",
        "/adjustments",
        "/payouts",
        "/nights",
        f"/nights/p1/{NIGHT}",
        "/findings/export.csv",
        "/adjustments/export.xlsx",
        "/payouts/export.csv",
        "/nights/export.xlsx",
        f"/nights/p1/{NIGHT}/report.html",
    ]
    with desk.client() as ana:
        assert sign_in(ana).status_code == 303
        responses = {path: ana.get(path) for path in ["/signin", *pages]}
        assert {path: r.status_code for path, r in responses.items()} == dict.fromkeys(responses, 200)
        assert {path: r.headers.get("cache-control") for path, r in responses.items()} == dict.fromkeys(
            responses, "no-store"
        )
        assert "cache-control" not in ana.get("/static/desk.css").headers  # the stylesheet may be cached
