"""How much of the review desk's work runs at once, and where: never on the event loop.

Every page's work (its SQL, argon2 at sign-in, the template) is synchronous and runs in a worker thread,
so a slow request holds one thread while the loop goes on answering the others and serving static files.
Pages share ``threads`` threads (``RECON_REVIEW_THREADS``, default 10). Downloads, the heaviest requests,
take turns of their own (``exports``: ``RECON_REVIEW_EXPORTS``, default 2) and never a page's thread: one
beyond them waits up to ``export_wait_s`` for a turn, then is refused with a 503 and ``Retry-After``. A
download's file is written in a process of its own, one per turn (``in_process``: spawned on the first
download, stopped with the app, niced like the hashing thread), so its CPU never holds the GIL the pages'
threads share, and on a small host takes what the pages leave.
Sign-ins check their password one at a time, in one thread of lower priority (``Workers.hashed``: nice
+10 on Linux, per thread): argon2 is ~0.15-0.3 s of the host's cores, so people signing in over and over
would otherwise take a small host from everyone's pages; below them, a check takes what pages leave.

Threads bound how many requests run at once, not whose: one person's search after search, each cheap, would
hold a core and the others would wait for it. So each requester (a signed-in session; before sign-in, a
client address) has a share of the page time (``shares.WorkShares``, ``Capacity.share``): every page's
wall time in its thread is charged to its requester, and one over its share (a fifth of a core over time,
a second ahead of it at most) waits on the event loop before its next request starts, a few seconds at
most, while anyone else had a page in the last minute. It is never refused, and one under its share, or
alone, never waits.

The engine's pool is sized from the same numbers (``pool_size``): a connection for every thread and turn,
and as many again in overflow (a page may open a second while its template reads the saved views), so no
request waits for a connection that another kind of request holds.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import anyio.to_thread

from recon_pipeline.review_desk.shares import ShareLimits, WorkShares

THREADS_ENV = "RECON_REVIEW_THREADS"
EXPORTS_ENV = "RECON_REVIEW_EXPORTS"
DEFAULT_THREADS = 10
DEFAULT_EXPORTS = 2
MAX_THREADS = 100  # PostgreSQL's default max_connections: a pool larger than this would be refused anyway
EXPORT_WAIT_S = 10.0
RETRY_AFTER_S = 30  # what a refused download is told: a 100,000-row xlsx takes tens of seconds
HASHES_AT_ONCE = 1  # argon2 checks at once per desk process: a few sign-ins a second, one core at most
HASHING_NICENESS = 10  # how far below the pages the hashing thread and the export processes run (Linux)

T = TypeVar("T")


@dataclass(frozen=True)
class Capacity:
    """How many page threads and download turns the desk has, how long a download waits for a turn, and
    each requester's share of the page time."""

    threads: int = DEFAULT_THREADS
    exports: int = DEFAULT_EXPORTS
    export_wait_s: float = EXPORT_WAIT_S
    share: ShareLimits = field(default_factory=ShareLimits)

    def __post_init__(self) -> None:
        for name, value in (("threads", self.threads), ("exports", self.exports)):
            if not 1 <= value <= MAX_THREADS:
                raise ValueError(f"the desk's {name} must be 1 to {MAX_THREADS}, not {value}")

    @classmethod
    def from_environment(cls) -> Capacity:
        """``RECON_REVIEW_THREADS`` and ``RECON_REVIEW_EXPORTS``, each a whole number 1-100 when set."""
        return cls(
            _count(THREADS_ENV, DEFAULT_THREADS),
            _count(EXPORTS_ENV, DEFAULT_EXPORTS),
        )

    @property
    def pool_size(self) -> int:
        """The engine's pool: a connection for each page thread and each download turn."""
        return self.threads + self.exports


def _count(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_THREADS:
        raise ValueError(f"{name} must be a whole number from 1 to {MAX_THREADS}, not {raw[:20]!r}")
    return int(raw)


class Workers:
    """The threads the desk's work runs in: ``page`` for every page (its requester's share of them kept in
    ``shares``), ``export`` for downloads, each bounded by ``Capacity``, and ``hashed`` for a password
    check; the event loop only reads requests and writes responses. While ``processes`` is open (the
    app's lifespan), ``in_process`` runs a download's file in one of ``exports`` processes."""

    def __init__(self, capacity: Capacity) -> None:
        self.capacity = capacity
        self._hashing = ThreadPoolExecutor(
            HASHES_AT_ONCE, thread_name_prefix="desk-hashing", initializer=_below_pages
        )
        self._pages = anyio.CapacityLimiter(capacity.threads)
        self.shares = WorkShares(capacity.share)  # used on the event loop only
        self._turns = anyio.Semaphore(capacity.exports)
        self._export_threads = anyio.CapacityLimiter(capacity.exports)
        self._processes: ProcessPoolExecutor | None = None
        self._start_process: tuple[Callable[..., None], tuple[object, ...]] | None = None
        self._processes_lock = threading.Lock()

    def hashed(self, work: Callable[..., T], *args: object) -> T:
        """``work(*args)`` (a password check) in the hashing thread, the caller's page thread waiting."""
        return self._hashing.submit(work, *args).result()

    async def page(self, work: Callable[..., T], *args: object, requester: str) -> T:
        """``work(*args)`` in a page thread, once ``requester`` is within its share (``shares``) and a
        thread is free; the time it spent in the thread is charged to ``requester``."""
        if wait_s := self.shares.wait_for(requester, time.monotonic()):
            await anyio.sleep(wait_s)
        spent = [0.0]

        def timed() -> T:
            started = time.monotonic()
            try:
                return work(*args)
            finally:
                spent[0] = time.monotonic() - started

        try:
            return await anyio.to_thread.run_sync(timed, limiter=self._pages)
        finally:
            self.shares.charge(requester, spent[0], time.monotonic())

    async def export(self, work: Callable[..., T], *args: object) -> T | None:
        """``work(*args)`` in a download's thread once a turn is free; None when none came free within
        ``export_wait_s`` (the caller's 503)."""
        with anyio.move_on_after(self.capacity.export_wait_s) as waiting:
            await self._turns.acquire()
        if waiting.cancelled_caught:
            return None
        try:
            return await anyio.to_thread.run_sync(work, *args, limiter=self._export_threads)
        finally:
            self._turns.release()

    @contextmanager
    def processes(self, start: Callable[..., None], *args: object) -> Iterator[None]:
        """While open, ``in_process`` runs work in up to ``exports`` processes, each started by
        ``start(*args)`` (its own database engine, say) when first needed; closed, they are stopped."""
        self._start_process = (start, args)
        try:
            yield
        finally:
            with self._processes_lock:
                self._start_process, pool, self._processes = None, self._processes, None
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    @property
    def has_processes(self) -> bool:
        """Whether ``processes`` is open (the app was started with its lifespan)."""
        return self._start_process is not None

    def in_process(self, work: Callable[..., T], *args: object) -> T:
        """``work(*args)`` (top-level and picklable, as its arguments and result) in one of the processes,
        the caller's download thread waiting for it. A process that died (killed for its memory, say)
        breaks the pool: that download fails, and the next one gets fresh processes."""
        pool = self._pool()
        try:
            return pool.submit(work, *args).result()
        except BrokenProcessPool:
            with self._processes_lock:
                if self._processes is pool:
                    self._processes = None
            pool.shutdown(wait=False, cancel_futures=True)
            raise

    def _pool(self) -> ProcessPoolExecutor:
        """The processes, made on first use: spawned (a fork of a process running threads may copy a
        lock another thread held), each started once, at most ``exports`` of them."""
        with self._processes_lock:
            if self._start_process is None:
                raise RuntimeError("the desk's export processes are not open (the app's lifespan runs them)")
            if self._processes is None:
                start, args = self._start_process
                self._processes = ProcessPoolExecutor(
                    self.capacity.exports,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_started_below_pages,
                    initargs=(start, args),
                )
            return self._processes


def _started_below_pages(start: Callable[..., None], args: tuple[object, ...]) -> None:
    """An export process's start: below the pages, then ``start(*args)``."""
    _below_pages()
    start(*args)


def _below_pages() -> None:
    """Lower the calling thread's priority (the hashing thread; an export process's one working thread),
    where the system lets a thread have its own (Linux)."""
    with suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HASHING_NICENESS)
