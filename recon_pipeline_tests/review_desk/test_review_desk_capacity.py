"""No one waits for another at the desk: every handler runs off the event loop, so a page answers while
another request is stuck in the database, and downloads take turns of their own, a download beyond them
refused with a 503 and Retry-After once it has waited its bound; and one person's page after page waits
for that person's share of the page time while another's page does not.

The stuck request is made, not timed: on PostgreSQL another connection holds an exclusive lock on
``discrepancies``, the slow request is seen waiting for it in ``pg_locks``, and only then is the light page
asked for; its answer must come while the slow one is still waiting. On SQLite another connection holds
the write lock, so a note's write waits in SQLite's busy handler, and the page is asked for a second later.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

import anyio
import httpx
import pytest
from sqlalchemy import Connection, Engine, insert, select, text
from sqlalchemy.engine import make_url

from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies
from recon_pipeline.review_desk import web
from recon_pipeline.review_desk.app import DeskSettings, review_desk_app
from recon_pipeline.review_desk.capacity import HASHING_NICENESS, RETRY_AFTER_S, Capacity, Workers
from recon_pipeline.review_desk.pages import signin as signin_pages
from recon_pipeline.review_desk.shares import ShareLimits
from recon_pipeline.review_desk.users import ReviewUser, authenticate, load_user
from recon_pipeline.review_desk.web import BUSY_EXPORTS
from recon_pipeline_tests.support.dagster_processes import wait_until
from recon_pipeline_tests.support.desk_fixtures import (
    add_user,
    csrf_of,
    desk_database,
    finding,
    sign_in,
)
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.shared_servers import serving


@contextmanager
def desk_with(database_url: str, monkeypatch: pytest.MonkeyPatch, capacity: Capacity) -> Iterator[str]:
    """A desk of ``capacity`` with one finding and user ana over p1, its pool sized as `recon review
    serve` sizes it; its URL."""
    with desk_database(database_url, monkeypatch) as setup:
        with setup.begin() as connection:
            connection.execute(insert(discrepancies), finding("p1", "r-1", 250, booking_id="bk-1"))
        add_user("ana", "analyst", "p1")
        engine = make_engine(database_url, pool_size=capacity.pool_size)
        try:
            with serving(review_desk_app(engine, DeskSettings("s" * 40, capacity=capacity))) as server:
                yield server.base_url
        finally:
            engine.dispose()


@contextmanager
def findings_locked(engine: Engine) -> Iterator[Connection]:
    """``discrepancies`` locked against every reader until the block ends."""
    with engine.connect() as connection:
        transaction = connection.begin()
        connection.execute(text("LOCK TABLE discrepancies IN ACCESS EXCLUSIVE MODE"))
        try:
            yield connection
        finally:
            transaction.rollback()


def waiting_on_findings(connection: Connection, count: int) -> bool | None:
    """True once ``count`` other sessions wait for the lock on ``discrepancies`` (None until then)."""
    waiting = connection.execute(
        text("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'discrepancies'::regclass")
    ).scalar_one()
    return True if waiting >= count else None


@contextmanager
def signed_in_client(base_url: str, name: str = "ana") -> Iterator[httpx.Client]:
    """A client signed in as ``name``; its requests give up after 10 s (a desk whose loop is blocked never
    answers the page asked for while the lock is held)."""
    with loopback_client(base_url=base_url, timeout=10) as client:
        assert sign_in(client, name).status_code == 303
        yield client


def test_a_page_answers_while_a_search_waits_on_a_lock(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        desk_with(postgres_url, monkeypatch, Capacity(threads=2)) as base_url,
        signed_in_client(base_url) as searcher,
        signed_in_client(base_url) as reader,
        ThreadPoolExecutor(1) as background,
    ):
        engine = make_engine(postgres_url)
        try:
            with findings_locked(engine) as locker:
                search: Future[httpx.Response] = background.submit(searcher.get, "/findings?q=bk-1")
                wait_until("the search waits on the lock", lambda: waiting_on_findings(locker, 1), 30, 0.05)
                legend = reader.get("/legend")
                stylesheet = reader.get("/static/desk.css")
                assert not search.done()  # answered while the search was still held
                assert waiting_on_findings(locker, 1)
            assert (legend.status_code, stylesheet.status_code) == (200, 200)
            assert "Legend" in legend.text
            found = search.result(timeout=15)
            assert found.status_code == 200 and "bk-1" in found.text
        finally:
            engine.dispose()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # PostgreSQL: the search above
def test_a_page_answers_while_a_note_waits_for_the_write_lock(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        desk_with(database_url, monkeypatch, Capacity(threads=2)) as base_url,
        signed_in_client(base_url) as writer,
        signed_in_client(base_url) as reader,
        ThreadPoolExecutor(1) as background,
    ):
        engine = make_engine(database_url)
        with engine.connect() as connection:
            finding_id = connection.execute(select(discrepancies.c.discrepancy_id)).scalar_one()
        engine.dispose()
        form = {"csrf_token": csrf_of(writer.get("/findings")), "note": "asked the front desk"}
        locker = sqlite3.connect(str(make_url(database_url).database), isolation_level=None)
        try:
            locker.execute("BEGIN IMMEDIATE")  # the write lock: the note's INSERT waits for it
            note: Future[httpx.Response] = background.submit(
                writer.post, f"/findings/{finding_id}/note", data=form
            )
            time.sleep(1)  # for the note to reach its wait (a desk that blocks its loop then stops answering)
            legend = reader.get("/legend")
            assert not note.done()  # answered while the note was still waiting
            locker.execute("ROLLBACK")
        finally:
            locker.close()
        assert legend.status_code == 200 and "Legend" in legend.text
        assert note.result(timeout=15).status_code == 303


def test_downloads_take_turns_of_their_own_and_one_too_many_is_a_503(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    capacity = Capacity(threads=1, exports=1, export_wait_s=0.3)
    with (
        desk_with(postgres_url, monkeypatch, capacity) as base_url,
        signed_in_client(base_url) as downloader,
        signed_in_client(base_url) as reader,
        ThreadPoolExecutor(1) as background,
    ):
        engine = make_engine(postgres_url)
        try:
            with findings_locked(engine) as locker:
                held: Future[httpx.Response] = background.submit(downloader.get, "/findings/export.csv")
                wait_until("the export waits on the lock", lambda: waiting_on_findings(locker, 1), 30, 0.05)
                # the desk's one page thread is free: the download holds a turn, not a page's thread
                legend = reader.get("/legend")
                refused = reader.get("/findings/export.xlsx")
                assert not held.done()
            assert legend.status_code == 200
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == str(RETRY_AFTER_S)
            assert refused.text == BUSY_EXPORTS
            assert refused.headers["x-frame-options"] == "DENY"  # the security headers, as on every answer
            exported = held.result(timeout=15)
            assert exported.status_code == 200 and "bk-1" in exported.text
            assert reader.get("/findings/export.xlsx").status_code == 200  # the turn came back
        finally:
            engine.dispose()


SLOW_S = 0.5  # how long each of ana's pages is made to take in a page thread


def timed_get(client: httpx.Client, path: str) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = client.get(path)
    return response, time.monotonic() - started


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_one_persons_back_to_back_slow_pages_wait_for_their_share_and_anothers_does_not(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every page of ana's is made to take ``SLOW_S`` in its thread (her user is loaded slowly), and her
    share is a quarter of the time, 0.3 s ahead of it: her first page starts at once, the second waits
    (0.5 - 0.3) / 0.25 = 0.8 s, the third (0.5 - 1.3 × 0.25 + 0.5 - 0.3) / 0.25 = 1.5 s (the first's time
    drains while the second waits and runs); bea's page, asked while ana's third waits, answers first, and
    all of them are answered."""

    def slow_for_ana(connection: Connection, name: str) -> ReviewUser | None:
        if name == "ana":
            time.sleep(SLOW_S)
        return load_user(connection, name)

    capacity = Capacity(threads=4, share=ShareLimits(share=0.25, burst_s=0.3, max_wait_s=3.0))
    with desk_with(database_url, monkeypatch, capacity) as base_url:
        add_user("bea", "analyst", "p1")
        with (
            signed_in_client(base_url, "ana") as ana,
            signed_in_client(base_url, "bea") as bea,
            ThreadPoolExecutor(1) as background,
        ):
            assert bea.get("/legend").status_code == 200  # bea is at the desk: ana is not alone
            monkeypatch.setattr(web, "load_user", slow_for_ana)
            first, first_s = timed_get(ana, "/legend")
            second, second_s = timed_get(ana, "/legend")
            third: Future[tuple[httpx.Response, float]] = background.submit(timed_get, ana, "/legend")
            time.sleep(0.3)  # ana's third is waiting for her share by now (1.5 s)
            light, light_s = timed_get(bea, "/legend")
            assert not third.done()
            third_response, third_s = third.result(timeout=15)
    assert [page.status_code for page in (first, second, third_response, light)] == [200] * 4
    assert second_s >= SLOW_S + 0.6  # waited ~0.8 s before it started
    assert third_s >= SLOW_S + 1.3  # waited ~1.5 s
    assert light_s < 1.0  # bea's waited for no one; on a quiet host ~20 ms


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_sign_ins_check_their_passwords_one_at_a_time(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three people signing in at once, on a desk of ten page threads: each is signed in, and no two
    argon2 checks overlapped (each check here is made to last 0.2 s, so overlapping ones would be seen)."""
    checking: list[int] = []
    most = [0]
    lock = threading.Lock()

    def slow_authenticate(connection: Connection, name: str, password: str) -> object:
        with lock:
            checking.append(1)
            most[0] = max(most[0], len(checking))
        time.sleep(0.2)
        with lock:
            checking.pop()
        return authenticate(connection, name, password)

    monkeypatch.setattr(signin_pages, "authenticate", slow_authenticate)
    with desk_with(database_url, monkeypatch, Capacity(threads=10)) as base_url:

        def one_sign_in(_: int) -> int:
            with loopback_client(base_url=base_url, timeout=10) as client:
                return sign_in(client).status_code

        with ThreadPoolExecutor(3) as people:
            answers = list(people.map(one_sign_in, range(3)))
    assert answers == [303, 303, 303]
    assert most[0] == 1


@pytest.mark.fast
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own priority is Linux's")
def test_a_password_is_checked_below_the_pages_priority() -> None:
    """The hashing thread runs niced below the thread that asks (a page's), one check at a time."""

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    asking = niceness()
    workers = Workers(Capacity())
    assert workers.hashed(niceness) == min(asking + HASHING_NICENESS, 19)
    assert workers.hashed(threading.current_thread) is workers.hashed(threading.current_thread)
    assert niceness() == asking  # the asking thread is left as it was


STARTED_ENV = "RECON_TEST_PROCESS_STARTED"


def _opened(mark: str) -> None:
    os.environ[STARTED_ENV] = mark


def _process_facts(extra: int) -> tuple[int, int, str | None, int]:
    """The pid and niceness of the process this runs in, what its start left, and ``extra`` back."""
    niceness = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    return os.getpid(), niceness, os.environ.get(STARTED_ENV), extra


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own priority is Linux's")
def test_a_downloads_work_runs_in_a_process_of_its_own_below_the_pages() -> None:
    """While ``processes`` is open, ``in_process`` runs work in a spawned process (started by the given
    function), niced below the asking thread; closed, the desk has none (a download then writes in its
    own thread) and asking is an error, not a silent fallback."""
    asking = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    workers = Workers(Capacity(exports=1))
    assert not workers.has_processes
    with workers.processes(_opened, "started"):
        assert workers.has_processes
        first = workers.in_process(_process_facts, 1)
        second = workers.in_process(_process_facts, 2)
    assert first == (first[0], min(asking + HASHING_NICENESS, 19), "started", 1) and first[0] != os.getpid()
    assert second == (*first[:3], 2)  # the same process (one turn), started once
    assert STARTED_ENV not in os.environ
    assert not workers.has_processes
    with pytest.raises(RuntimeError, match="not open"):
        workers.in_process(_process_facts, 3)


def _dies() -> None:
    os._exit(1)  # as a process killed for its memory would


def test_a_dead_export_process_fails_its_download_and_the_next_gets_a_fresh_one() -> None:
    """A process that dies mid-work breaks its pool: that download fails (BrokenProcessPool, the caller's
    500), and the next one runs in fresh processes rather than every download failing until a restart."""
    workers = Workers(Capacity(exports=1))
    with workers.processes(_opened, "again"):
        with pytest.raises(BrokenProcessPool):
            workers.in_process(_dies)
        assert workers.in_process(_process_facts, 4)[2:] == ("again", 4)


@pytest.mark.fast
def test_a_download_waits_its_bound_for_a_turn_while_pages_go_on() -> None:
    """``Workers`` on its own: two downloads hold both turns; a third is refused (None) after waiting
    ``export_wait_s``, a page runs meanwhile, and a turn given back is taken by the next download."""
    release = threading.Event()
    workers = Workers(Capacity(threads=1, exports=2, export_wait_s=0.2))

    def held_download() -> str:
        release.wait(10)
        return "exported"

    async def scenario() -> list[object]:
        results: list[object] = []
        async with anyio.create_task_group() as tasks:

            async def download() -> None:
                results.append(await workers.export(held_download))

            tasks.start_soon(download)
            tasks.start_soon(download)
            await anyio.sleep(0.05)
            results.append(await workers.export(lambda: "never run"))
            results.append(await workers.page(lambda: "page", requester="ana"))
            release.set()
        results.append(await workers.export(lambda: "next"))
        return results

    assert anyio.run(scenario) == [None, "page", "exported", "exported", "next"]


@pytest.mark.fast
def test_a_requester_over_its_share_waits_holding_no_thread() -> None:
    """``Workers`` on its own, with one page thread: the admin's page of 0.2 s puts it 0.2 s over a share
    of half the time with nothing ahead of it, so its next page waits ~0.4 s on the event loop; bea's page,
    asked meanwhile, takes the one thread and is done first."""
    workers = Workers(Capacity(threads=1, share=ShareLimits(share=0.5, burst_s=0.0, max_wait_s=1.0)))
    done: list[str] = []

    async def scenario() -> float:
        workers.shares.charge("bea", 0.01, time.monotonic())  # bea is at the desk
        await workers.page(time.sleep, 0.2, requester="admin")
        started = time.monotonic()
        async with anyio.create_task_group() as tasks:

            async def admin() -> None:
                done.append(await workers.page(lambda: "admin", requester="admin"))

            tasks.start_soon(admin)
            await anyio.sleep(0.05)
            done.append(await workers.page(lambda: "bea", requester="bea"))
        return time.monotonic() - started

    assert anyio.run(scenario) >= 0.3
    assert done == ["bea", "admin"]


@pytest.mark.fast
def test_capacity_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECON_REVIEW_THREADS", raising=False)
    monkeypatch.delenv("RECON_REVIEW_EXPORTS", raising=False)
    assert Capacity.from_environment() == Capacity(10, 2)
    assert Capacity.from_environment().pool_size == 12
    monkeypatch.setenv("RECON_REVIEW_THREADS", "24")
    monkeypatch.setenv("RECON_REVIEW_EXPORTS", " 3 ")
    assert Capacity.from_environment() == Capacity(24, 3)
    assert Capacity.from_environment().pool_size == 27
    for bad in ("0", "101", "-1", "ten", "2.5", "٣"):
        monkeypatch.setenv("RECON_REVIEW_THREADS", bad)
        with pytest.raises(ValueError, match="RECON_REVIEW_THREADS must be a whole number from 1 to 100"):
            Capacity.from_environment()
