"""The review desk on a real server (127.0.0.1) over SQLite and PostgreSQL: users added by the CLI, sign-in,
its rate limit, CSRF, per-property access, escaping, a tampered session cookie, the security headers (a
server error's too) and the request body limit."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx
import pytest
from playwright.sync_api import expect
from sqlalchemy import Engine, insert, select

from recon_pipeline import cli
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies, review_audit, review_signin_failures, review_users
from recon_pipeline.review_desk.app import MAX_BODY_BYTES, SESSION_COOKIE, DeskSettings, review_desk_app
from recon_pipeline.serving import ServerThread
from recon_pipeline_tests.support.browser import chromium_page
from recon_pipeline_tests.support.desk_fixtures import (
    PASSWORD,
    add_user,
    csrf_of,
    finding,
    finding_ids,
    served_desk,
    sign_in,
)
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.shared_servers import serving

SCRIPT = "<script>alert('x')</script>"


@dataclass
class Desk:
    engine: Engine
    base_url: str
    ids: dict[str, int]  # finding id by record key


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    with served_desk(database_url, monkeypatch) as served:
        with served.engine.begin() as connection:
            connection.execute(
                insert(discrepancies),
                [
                    finding("p1", "r-script", 1500, SCRIPT),
                    finding("p1", "r-small", 20),
                    finding("p2", "r-other", 900),
                ],
            )
            ids = finding_ids(connection)
        # This module tests `recon users add` itself: its users are added by the command, at the real cost.
        monkeypatch.setenv("RECON_NEW_USER_PASSWORD", PASSWORD)
        assert cli.main(["users", "add", "ana", "--role", "analyst", "--properties", "p1"]) == 0
        yield Desk(served.engine, served.base_url, ids)


def test_users_add_stores_an_argon2_hash_and_refuses_bad_input_in_one_line(
    desk: Desk, capsys: pytest.CaptureFixture[str]
) -> None:
    with desk.engine.connect() as connection:
        row = connection.execute(select(review_users)).one()
    assert (row.name, row.role, row.properties) == ("ana", "analyst", "p1")
    assert row.password_hash.startswith("$argon2id$") and PASSWORD not in row.password_hash
    capsys.readouterr()
    for argv, named in (
        (["users", "add", "bob", "--role", "boss", "--properties", "p1"], "boss"),
        (["users", "add", "bob", "--role", "analyst", "--properties", "p1,p9"], "p9"),
        (["users", "add", "ana", "--role", "analyst", "--properties", "p1"], "ana"),
    ):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and named in err, err
    with desk.engine.connect() as connection:
        assert connection.execute(select(review_users.c.name)).scalars().all() == ["ana"]


def test_users_add_reads_the_password_from_stdin(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECON_NEW_USER_PASSWORD")
    assert cli.main(["users", "add", "bob", "--role", "approver", "--properties", "p2,p1"]) == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("another long passphrase\n"))
    assert (
        cli.main(["users", "add", "bob", "--role", "approver", "--properties", "p2,p1", "--password-stdin"])
        == 0
    )
    with loopback_client(base_url=desk.base_url) as client:
        assert sign_in(client, "bob", "another long passphrase").status_code == 303
        listing = client.get("/findings")
        assert "r-other" in listing.text and "r-script" in listing.text


def test_users_are_listed_changed_and_removed_and_a_session_follows_or_ends(
    desk: Desk, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    add_user("bob", "approver", "p2")
    capsys.readouterr()
    assert cli.main(["users", "list"]) == 0
    listed = capsys.readouterr().out
    assert [line.split("\t")[:3] for line in listed.splitlines()[:2]] == [
        ["ana", "analyst", "p1"],
        ["bob", "approver", "p2"],
    ]
    assert all("\tadded 20" in line for line in listed.splitlines()[:2])
    assert listed.splitlines()[2] == "2 users" and "argon2" not in listed
    with loopback_client(base_url=desk.base_url) as client:
        assert sign_in(client).status_code == 303
        assert client.get(f"/findings/{desk.ids['r-script']}").status_code == 200
        assert "Approve selected" not in client.get("/adjustments").text
        # Other properties count from the session's next request.
        assert cli.main(["users", "change", "ana", "--properties", "p2"]) == 0
        assert capsys.readouterr().out == "ana is analyst for p2\n"
        assert client.get(f"/findings/{desk.ids['r-script']}").status_code == 404
        assert client.get(f"/findings/{desk.ids['r-other']}").status_code == 200
        # Another role ends the session; signed in again, the pages offer the role's actions.
        assert cli.main(["users", "change", "ana", "--role", "approver"]) == 0
        assert capsys.readouterr().out == "ana is approver for p2; 1 session ended\n"
        assert client.get("/adjustments").headers["location"] == "/signin"
        assert sign_in(client).status_code == 303
        assert "Approve selected" in client.get("/adjustments").text
        # A removed user's sessions end; the audit log keeps their name.
        assert cli.main(["users", "remove", "ana"]) == 0
        assert capsys.readouterr().out == "removed ana: their sessions ended\n"
        assert client.get("/findings").headers["location"] == "/signin"
    with desk.engine.connect() as connection:
        assert ("ana", "sign_in") in connection.execute(
            select(review_audit.c.user_name, review_audit.c.action)
        ).all()
    monkeypatch.setenv("RECON_NEW_USER_PASSWORD", "a brand new passphrase")
    assert cli.main(["users", "change", "bob", "--new-password"]) == 0
    assert capsys.readouterr().out == "bob is approver for p2; password changed\n"
    with loopback_client(base_url=desk.base_url) as client:
        assert sign_in(client, "bob").status_code == 401
        assert sign_in(client, "bob", "a brand new passphrase").status_code == 303
    for argv, named in (
        (["users", "remove", "ana"], "ana"),
        (["users", "change", "ana", "--role", "admin"], "ana"),
        (["users", "change", "bob"], "--role"),
        (["users", "change", "bob", "--properties", "p9"], "p9"),
    ):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and named in err, err


def test_sign_in_shows_only_the_users_findings_and_filters_them(desk: Desk) -> None:
    with loopback_client(base_url=desk.base_url) as client:
        assert client.get("/findings").headers["location"] == "/signin"
        assert sign_in(client).status_code == 303
        listing = client.get("/findings")
        assert listing.status_code == 200
        assert "r-script" in listing.text and "r-small" in listing.text and "r-other" not in listing.text
        filtered = client.get("/findings", params={"amount_at_least": "1.00", "cleared": "no"})
        assert "r-script" in filtered.text and "r-small" not in filtered.text
        assert client.get("/findings", params={"property": "p2"}).status_code == 400
    with desk.engine.connect() as connection:
        assert connection.execute(select(review_audit.c.user_name, review_audit.c.action)).all() == [
            ("ana", "sign_in")
        ]


def test_a_wrong_password_does_not_sign_in_and_attempts_are_rate_limited(desk: Desk) -> None:
    with loopback_client(base_url=desk.base_url) as client:
        for _ in range(5):
            assert sign_in(client, password="wrong password!").status_code == 401
        assert client.get("/findings").status_code == 303
        # the sixth attempt within the minute is refused, even with the right password
        assert sign_in(client).status_code == 429
        assert client.get("/findings").status_code == 303


def test_a_post_without_the_csrf_token_is_refused(desk: Desk) -> None:
    with loopback_client(base_url=desk.base_url) as client:
        client.get("/signin")
        assert client.post("/signin", data={"name": "ana", "password": PASSWORD}).status_code == 403
        assert (
            client.post("/signin", data={"csrf_token": "x", "name": "ana", "password": PASSWORD}).status_code
            == 403
        )
        assert sign_in(client).status_code == 303
        assert client.post("/signout", data={}).status_code == 403
        assert client.get("/findings").status_code == 200  # still signed in
        token = csrf_of(client.get("/findings"))
        assert client.post("/signout", data={"csrf_token": token}).status_code == 303
        assert client.get("/findings").status_code == 303


def test_a_nul_in_a_form_field_is_refused_and_stores_nothing(desk: Desk) -> None:
    """PostgreSQL stores no NUL in text: a sign-in name or a review comment holding one was a 500 there."""
    nul = (400, "a form field holds a NUL character")
    with loopback_client(base_url=desk.base_url) as client:
        token = csrf_of(client.get("/signin"))
        named = client.post("/signin", data={"csrf_token": token, "name": "ana\x00", "password": PASSWORD})
        assert (named.status_code, named.text) == nul
        assert sign_in(client).status_code == 303
        token = csrf_of(client.get("/findings"))
        review = {
            "csrf_token": token,
            "action": "acknowledge",
            "comment": "seen\x00",
            "difference_seen": "20",
        }
        reviewed = client.post(f"/findings/{desk.ids['r-small']}/review", data=review)
        assert (reviewed.status_code, reviewed.text) == nul
    with desk.engine.connect() as connection:
        statuses = connection.execute(select(discrepancies.c.review_status)).scalars().all()
        actions = connection.execute(select(review_audit.c.action)).scalars().all()
    assert set(statuses) == {"open"} and actions == ["sign_in"]


def test_another_propertys_finding_is_not_found_and_a_script_renders_as_text(desk: Desk) -> None:
    with loopback_client(base_url=desk.base_url) as client:
        sign_in(client)
        assert client.get(f"/findings/{desk.ids['r-other']}").status_code == 404
        assert client.get("/findings/999999").status_code == 404
        assert client.get("/findings/1%20OR%201=1").status_code == 404
        page = client.get(f"/findings/{desk.ids['r-script']}")
        assert page.status_code == 200
        assert SCRIPT not in page.text and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page.text


def test_a_session_cookie_altered_by_one_byte_signs_out(desk: Desk) -> None:
    with loopback_client(base_url=desk.base_url) as client:
        sign_in(client)
        cookie = client.cookies[SESSION_COOKIE]
        assert client.get("/findings").status_code == 200
        middle = len(cookie) // 2
        altered = cookie[:middle] + ("A" if cookie[middle] != "A" else "B") + cookie[middle + 1 :]
        client.cookies.clear()
        client.cookies.set(SESSION_COOKIE, altered)
        assert client.get("/findings").headers["location"] == "/signin"


def assert_security_headers(response: httpx.Response, no_store: bool = True) -> None:
    csp = response.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"
    assert ("cache-control" in response.headers) == no_store
    if no_store:
        assert response.headers["cache-control"] == "no-store"


def test_every_response_has_the_security_headers_and_a_strict_cookie(desk: Desk) -> None:
    with loopback_client(base_url=desk.base_url) as client:
        signin_page = client.get("/signin")
        cookie = signin_page.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=lax" in cookie and "secure" not in cookie
        responses = [
            signin_page,
            client.get("/static/desk.css"),
            client.post("/signin", data={}),
            client.get("/nowhere"),
            client.get("/findings"),
        ]
        assert [response.status_code for response in responses] == [200, 200, 403, 404, 303]
        for response in responses:
            assert_security_headers(response, no_store=response is not responses[1])  # but a static file
        assert "<script" not in signin_page.text and " style=" not in signin_page.text


def test_a_server_error_carries_the_security_headers(sqlite_url: str) -> None:
    """A desk on a database without its tables: the sign-in's query fails, a real unhandled error."""
    engine = make_engine(sqlite_url)
    try:
        with (
            serving(review_desk_app(engine, DeskSettings("s" * 40))) as server,
            loopback_client(base_url=server.base_url) as client,
        ):
            token = csrf_of(client.get("/signin"))
            failed = client.post("/signin", data={"csrf_token": token, "name": "ana", "password": "x"})
    finally:
        engine.dispose()
    assert (failed.status_code, failed.text) == (500, "Internal Server Error")
    assert_security_headers(failed)


def test_a_body_over_the_limit_is_refused_before_it_is_parsed(desk: Desk) -> None:
    """A wrong password counts as a failed sign-in once its form is parsed: a body one byte over the limit,
    with its length or streamed without one, is a 413 and counts nothing; one at the limit is parsed."""

    def signin_body(client: httpx.Client, size: int) -> bytes:
        fields = {"csrf_token": csrf_of(client.get("/signin")), "name": "ana", "password": "wrong", "pad": ""}
        body = urlencode(fields).encode()
        return body + b"x" * (size - len(body))

    def failures() -> int:
        with desk.engine.connect() as connection:
            return len(connection.execute(select(review_signin_failures)).all())

    form = {"content-type": "application/x-www-form-urlencoded"}
    with loopback_client(base_url=desk.base_url) as client:
        over = signin_body(client, MAX_BODY_BYTES + 1)
        sized = client.post("/signin", content=over, headers=form)
        chunks = (over[start : start + 65536] for start in range(0, len(over), 65536))
        streamed = client.post("/signin", content=chunks, headers=form)  # chunked: no Content-Length
        assert "content-length" not in streamed.request.headers
        assert [sized.status_code, streamed.status_code] == [413, 413]
        for refused in (sized, streamed):
            assert_security_headers(refused)
        assert failures() == 0
        at_limit = client.post("/signin", content=signin_body(client, MAX_BODY_BYTES), headers=form)
    assert at_limit.status_code == 401 and "Wrong name or password." in at_limit.text
    assert failures() == 2  # the name's and the address's


def test_secure_cookies_and_a_missing_secret(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECON_REVIEW_SECRET", raising=False)
    with pytest.raises(ValueError, match="RECON_REVIEW_SECRET"):
        DeskSettings.from_environment()
    monkeypatch.setenv("RECON_REVIEW_SECRET", "k" * 32)
    monkeypatch.setenv("RECON_REVIEW_SECURE_COOKIES", "1")
    settings = DeskSettings.from_environment()
    assert settings == DeskSettings("k" * 32, True)
    engine = make_engine(sqlite_url)
    with ServerThread(review_desk_app(engine, settings)) as server:
        cookie = httpx.get(f"{server.base_url}/signin").headers["set-cookie"].lower()
    engine.dispose()
    assert "; secure" in cookie and "httponly" in cookie


@pytest.mark.slow  # drives Chromium
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_person_signs_in_and_filters_in_chromium(desk: Desk) -> None:
    """Debian's Chromium signs in through the form, filters by amount, opens a finding and signs out; the
    pages load nothing but the desk's own stylesheet and log no error (the CSP would report a violation)."""
    with chromium_page("review-desk") as watched:
        page = watched.page
        page.goto(f"{desk.base_url}/findings")
        page.get_by_label("Name").fill("ana")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{desk.base_url}/findings")
        expect(page.get_by_role("link", name="r-small")).to_be_visible()
        page.get_by_label("Amount at least").fill("1.00")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url(re.compile(r".*amount_at_least=1\.00.*"))
        assert page.get_by_role("link", name="r-small").count() == 0
        page.get_by_role("link", name="r-script").click()
        page.wait_for_url(re.compile(rf".*/findings/{desk.ids['r-script']}\?.*"))
        expect(page.get_by_text(SCRIPT)).to_be_visible()  # shown as text, not run
        watched.screenshot("review-desk-finding")
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(f"{desk.base_url}/signin")
        assert watched.console_errors == [] and watched.page_errors == []
        assert {url.split("/")[2] for url in watched.requested_urls} == {desk.base_url.split("/")[2]}
