"""A provider request rate that holds for the whole deployment, not per client.

Every process that calls a provider (run workers of concurrent runs, the event worker, several machines)
takes its request slots from one bucket row in the reconciliation database, so the provider sees at most
``RECON_PROVIDER_MAX_RPS`` request starts a second in total. Pools and run tag limits bound how many steps
call the provider at once; they cannot bound the rate, since a step's request count is not known.

The bucket is a schedule, not a counter (GCRA without burst, as ``RequestRateLimiter`` is in one process):
one ``INSERT … ON CONFLICT DO UPDATE … RETURNING`` reserves the next free slot, ``1 / rate`` after the
previous one, by the database's clock, and the caller sleeps until its slot. It never retries (but for a
statement whose connection the database dropped, once: ``_Reserver``), holds no lock beyond the
statement, and idle time builds no credit. A slot is kept to: a request whose thread wakes from its wait
later than ``late_s`` past its slot (a loaded host, the GIL) does not start late beside requests that start
on time; its slot counts as spent and it reserves a fresh one. So every request starts within ``late_s`` of
a slot, and any one-second window holds at most ``rate · (1 + late_s) + 1`` request starts whatever the
number of processes (``rate + 2`` where ``late_s`` is one interval). Cost: one short statement per request
(figures in benchmarks/results.md), or one per batch: a caller about to send ``n`` requests (a page of
by-id reads) announces them (``SharedRateLimiter.hold``), its first request reserves ``n`` consecutive
slots in one statement, and the process's next ``n`` requests start at those slots. A held slot is spent
whether used or not: one not taken within ``late_s`` of its time is dropped, never used late, so holding
moves no request off the schedule.

On PostgreSQL the row is shared by every process and machine; the limiter keeps one connection of its
engine (``_Reserver``; ``deployment_limiter`` gives it an engine of its own), since taking one per
statement (the pool's liveness ping, its reset on return) cost more CPU than the statement. On SQLite (the
embedded single-machine default) the same statement runs in the SQLite file, serialised by its write
lock, which every process of the machine shares too.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import threading
import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, TextClause, text
from sqlalchemy.exc import DBAPIError

from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import provider_rate_slots
from recon_pipeline.providers import provider_named
from recon_pipeline.providers.http import late_by, start_on_a_slot
from recon_pipeline.providers.settings import SIMULATOR, ProviderSettings

# statement_timestamp() (PostgreSQL) / julianday('now') (SQLite): one clock for every process; the first
# slot is the later of now and the bucket's next slot, and the bucket moves ``span_s`` (one interval per
# slot reserved) past it.
_RESERVE_POSTGRES = text(
    f"""
    INSERT INTO {provider_rate_slots.name} AS b (bucket, next_slot_s)
    VALUES (:bucket, EXTRACT(EPOCH FROM statement_timestamp()) + :span_s)
    ON CONFLICT (bucket) DO UPDATE
    SET next_slot_s = GREATEST(EXCLUDED.next_slot_s, b.next_slot_s + :span_s)
    RETURNING next_slot_s - :span_s - EXTRACT(EPOCH FROM statement_timestamp())
    """
)
_SQLITE_NOW_S = "((julianday('now') - 2440587.5) * 86400.0)"
_RESERVE_SQLITE = text(
    f"""
    INSERT INTO {provider_rate_slots.name} AS b (bucket, next_slot_s)
    VALUES (:bucket, {_SQLITE_NOW_S} + :span_s)
    ON CONFLICT (bucket) DO UPDATE
    SET next_slot_s = MAX(excluded.next_slot_s, b.next_slot_s + :span_s)
    RETURNING next_slot_s - :span_s - {_SQLITE_NOW_S}
    """
)


class SharedRateLimiter:
    """At most ``rate`` request starts a second across every process using the same ``bucket`` row.

    Thread-safe: each ``acquire`` takes a slot this process holds (``hold``), else reserves one in one
    statement on a pooled connection of ``engine``."""

    def __init__(
        self,
        engine: Engine,
        bucket: str,
        rate: float,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < rate < math.inf:
            raise ValueError("rate must be a positive, finite number of requests per second")
        self.rate = rate
        self.bucket = bucket
        # Autocommit: the statement is its own transaction, no BEGIN/COMMIT round trips around it.
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._interval_s = 1.0 / rate
        self.late_s = late_by(self._interval_s)
        self._sleep = sleep
        self._clock = clock
        self._sqlite = engine.dialect.name == "sqlite"
        self._statement: TextClause = _RESERVE_SQLITE if self._sqlite else _RESERVE_POSTGRES
        self._reserver = _Reserver(self._engine)
        self._held: list[float] = []  # a heap of held slots, on ``clock``
        self._pending = 0  # slots announced by ``hold``, reserved by the next acquire without a held one
        self._held_lock = threading.Lock()
        self._reserving = threading.Lock()

    def reserve(self, count: int = 1) -> float:
        """Reserve the next ``count`` slots, ``1 / rate`` apart; the seconds until the first (≤ 0: now).

        On SQLite this statement's commit skips the WAL's fsync (``synchronous=NORMAL`` for it alone; the
        pooled connection's own setting is restored): a slot need not survive a power cut (PostgreSQL's
        table is UNLOGGED for the same reason), and the fsync, made under the file's write lock, cost
        each slot ~6 ms against 0.4 ms without, while every other process polled for the lock."""
        if count < 1:
            raise ValueError("count must be at least 1")
        if not self._sqlite:
            return self._reserver.run(lambda connection: self._execute(connection, count))
        with self._engine.connect() as connection:
            synchronous = int(connection.exec_driver_sql("PRAGMA synchronous").scalar_one())
            connection.exec_driver_sql("PRAGMA synchronous=NORMAL")
            try:
                return self._execute(connection, count)
            finally:
                connection.exec_driver_sql(f"PRAGMA synchronous={synchronous}")

    def _execute(self, connection: Connection, count: int) -> float:
        params = {"bucket": self.bucket, "span_s": count * self._interval_s}
        return float(connection.execute(self._statement, params).scalar_one())

    def hold(self, count: int) -> None:
        """This process is about to send ``count`` requests (a page of by-id reads): the next ``acquire``
        that finds no held slot reserves them all in one statement, starts on the first and holds the
        rest for the next acquires, instead of one statement each. Reserving at the first request, not
        here, keeps the held slots from passing while the caller's threads start.

        A token reserved is a token spent: a held slot not taken within ``late_s`` of its time is
        dropped, never used late, so an unused hold costs the deployment at most ``count / rate`` seconds
        of its rate and never lets a request start off the bucket's schedule."""
        with self._held_lock:
            self._pending += count

    def acquire(self) -> float:
        """Wait for this request's slot; the seconds waited. A thread that woke past its slot by more than
        ``late_s`` takes a fresh slot (at most ``MAX_MISSED_SLOTS`` times) rather than start off schedule."""
        return start_on_a_slot(self._slot, self.late_s, self._clock, self._sleep)

    def _slot(self) -> float:
        """A held slot still usable, else the first of freshly reserved ones."""
        slot = self._take_held()
        if slot is None:
            with self._reserving:  # one statement at a time: threads arriving meanwhile take its slots
                slot = self._take_held()
                if slot is None:
                    slot = self._reserve_held()
        return slot

    def _take_held(self) -> float | None:
        """The earliest held slot still usable (not past by ``late_s`` or more), dropping older ones."""
        with self._held_lock:
            expired = self._clock() - self.late_s
            while self._held:
                slot = heapq.heappop(self._held)
                if slot > expired:
                    return slot
        return None

    def _reserve_held(self) -> float:
        """Reserve this request's slot and those ``hold`` announced in one statement; the first slot is
        this request's, the others are held."""
        with self._held_lock:
            count, self._pending = max(1, self._pending), 0
        wait = self.reserve(count)
        first = self._clock() + wait  # read after the statement: the wait is slept from now
        with self._held_lock:
            for index in range(1, count):
                heapq.heappush(self._held, first + index * self._interval_s)
        return first


class _Reserver:
    """One connection of ``engine``'s pool kept for the bucket's statements, one statement at a time.

    Kept, a connection is not pinged before each statement: one the database dropped (a restart, an idle
    timeout) fails its statement as a disconnect, and that statement is run once more on a fresh connection
    (pinged by the pool). A statement that reserved before its answer was lost then reserves twice: slots
    are only ever wasted that way, never granted beyond the rate."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._connection: Connection | None = None
        self._lock = threading.Lock()

    def run(self, statement: Callable[[Connection], float]) -> float:
        with self._lock:
            try:
                return self._on_kept(statement)
            except DBAPIError as error:
                if not error.connection_invalidated:
                    raise
            return self._on_kept(statement)

    def _on_kept(self, statement: Callable[[Connection], float]) -> float:
        """``statement`` on the kept connection (taken from the pool if none is); a connection whose
        statement failed is given back, its state unknown."""
        if self._connection is None:
            self._connection = self._engine.connect()
        try:
            return statement(self._connection)
        except BaseException:
            connection, self._connection = self._connection, None
            connection.close()
            raise


def bucket_name(kind: str, base_url: str, api_key: str | None) -> str:
    """One bucket per provider account: its API root and a digest of its key (the key is never stored)."""
    digest = hashlib.sha256((api_key or "").encode()).hexdigest()[:16]
    return f"{kind}:{base_url}:{digest}"


def deployment_rate(settings: ProviderSettings, configured: float | None) -> float | None:
    """The deployment's request rate for this provider: the configured one (``max_rps`` /
    RECON_PROVIDER_MAX_RPS), else the provider's documented limit (its ``default_max_rps``), so that an
    unset variable never lets a deployment run into a live provider's 429s.

    The simulator documents no limit (it enforces one only when a test sets ``rate_limit_rps``): against
    it an unset rate stays unbounded (None), whatever API it speaks."""
    if configured is not None or settings.kind == SIMULATOR:
        return configured
    return provider_named(settings.kind).default_max_rps


def deployment_limiter(
    database_url: str, settings: ProviderSettings, rate: float | None
) -> SharedRateLimiter | None:
    """The limiter every process calling this provider account shares (None: no rate configured), on an
    engine of its own: the connection it keeps (``_Reserver``) is never one the pipeline's pool lacks."""
    if rate is None:
        return None
    engine = make_engine(database_url, pool_size=1)
    return SharedRateLimiter(engine, bucket_name(settings.kind, settings.base_url, settings.api_key), rate)
