"""The webhook receiver: ``POST /webhooks/{provider}`` verifies, parses and stores a delivery's events;
nothing more. Every registered provider is served by the same route: the provider's ``read_delivery``
checks the signature and reads the events, they are stored the same way (``store_events``, deduped on the
event id the provider gives), and the provider's ``acknowledgement`` is the answer. An unknown provider
name is a 404.

It never calls the provider and never acts on the payload: the event is stored raw with a pending
processing row (``store_events``), and the process job later fetches the payment's current state. So the
only things that can go wrong here are the caller's (413/400/431, nothing stored) or the database's (503,
which makes the provider retry). A repeated delivery is a 200 that stores nothing, because providers retry
until they see a 2xx and an endpoint that answers duplicates with an error would be retried for days; one that
reuses a stored event id with a different body is kept in ``payment_event_conflicts`` as evidence,
logged and counted on ``/healthz`` (the stored event is never modified).

A frozen or unreachable database answers 503 within ``STORE_TIMEOUT_S``: the wait for the commit is
bounded in asyncio (a stopped PostgreSQL backend never answers, so no server-side timeout can fire), and
PostgreSQL connections get ``connect_timeout``, ``statement_timeout`` and ``lock_timeout`` so the threads
doing the work come back too. A write that was still running when its request gave up may commit once
the database thaws; the provider's retry is then a duplicate, so the event is stored once either way.
Header size and header time are bounded per connection by ``webhooks.limits``.

Blocking database work runs in Starlette's thread pool, on one engine per process, and concurrent
deliveries share transactions (``EventWriter``); logs carry ids and reasons, never bodies, headers or
secrets.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import uvicorn.config
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recon_pipeline import config
from recon_pipeline.db.engine import make_engine
from recon_pipeline.errors import ConfigError
from recon_pipeline.events.store import ReceivedEvent, conflict_count, record_conflicts, store_events
from recon_pipeline.metrics.exposition import metrics_route
from recon_pipeline.metrics.instruments import DUPLICATES_SUPPRESSED
from recon_pipeline.metrics.queues import EVENTS
from recon_pipeline.providers import PROVIDERS
from recon_pipeline.providers.errors import SignatureError
from recon_pipeline.providers.events import EventFormatError, ProviderEvent
from recon_pipeline.providers.interface import Provider, StoreOutcome

logger = logging.getLogger(__name__)

# A provider's events are a few KiB; 256 KiB leaves room for large metadata yet bounds memory per request.
DEFAULT_MAX_BODY_BYTES = 256 * 1024
MAX_BODY_BYTES_ENV = "RECON_WEBHOOK_MAX_BODY_BYTES"
SECRET_ENV = "RECON_WEBHOOK_SECRET"
# Transactions one worker runs at once: two keeps PostgreSQL busy while the other waits for its commit's
# fsync; more made smaller batches and more threads fighting over the GIL (benchmarks/webhooks.py: 4 in
# flight cost about 2.7 ms of receiver CPU per delivery, 2 about 1.7 ms, 1 gave up throughput).
MAX_IN_FLIGHT_BATCHES = 2
MAX_BATCH = 64
# make_engine allows as many overflow connections again: room for health checks beside the batches, and
# a few workers stay far below PostgreSQL's default 100 connections.
POOL_SIZE = MAX_IN_FLIGHT_BATCHES
HEALTH_TIMEOUT_S = 4.0
# A delivery waits this long for its commit before answering 503: inside the 5 s a provider can expect.
STORE_TIMEOUT_S = 4.0
# libpq's bounds (connect in whole seconds, statements in ms) so a slow or locked database frees threads.
POSTGRES_TIMEOUTS = {"connect_timeout": "3", "options": "-c statement_timeout=4000 -c lock_timeout=3000"}
NEW: StoreOutcome = "new"
DUPLICATE: StoreOutcome = "duplicate"
CONFLICT: StoreOutcome = "conflict"


class BodyTooLarge(Exception):
    """The body exceeds the limit: declared by Content-Length or counted while streaming."""


@dataclass
class _Pending:
    event: ProviderEvent
    payload: str
    received_at: datetime
    stored: asyncio.Future[StoreOutcome]


class EventWriter:
    """Stores events with ``store_events``, concurrent deliveries sharing one transaction (group commit).

    A request still waits for the commit of the transaction its event went into, so a 200 means durably
    stored. While ``max_in_flight`` transactions run, new events queue, and the next transaction takes all
    of them (up to ``max_batch``). There is no timer: a lone event is written at once, and only under load
    do events share the per-transaction costs (pool checkout, BEGIN, the COMMIT's fsync, the thread hop),
    which were most of a delivery's cost when each had its own. A failed transaction fails every event in
    it (503: the provider retries each). Each batch is written in event-id order, so two transactions that
    both hold redelivered ids lock them in the same order and cannot deadlock.
    """

    def __init__(
        self,
        engine: Engine,
        provider: str,
        max_batch: int = MAX_BATCH,
        max_in_flight: int = MAX_IN_FLIGHT_BATCHES,
    ) -> None:
        self._engine = engine
        self._provider = provider
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._queue: list[_Pending] = []
        self._in_flight: set[asyncio.Task[None]] = set()

    async def store(self, event: ProviderEvent, payload: str, received_at: datetime) -> StoreOutcome:
        """NEW, DUPLICATE or CONFLICT (a stored id, another body); raises what its transaction raised.

        A caller that stops waiting (timeout, client gone) takes its event out of the queue if no
        transaction has taken it yet, so a frozen database does not pile deliveries up in memory."""
        stored: asyncio.Future[StoreOutcome] = asyncio.get_running_loop().create_future()
        pending = _Pending(event, payload, received_at, stored)
        self._queue.append(pending)
        self._start_batches()
        try:
            return await stored
        except asyncio.CancelledError:
            if pending in self._queue:
                self._queue.remove(pending)
            raise

    def _start_batches(self) -> None:
        while self._queue and len(self._in_flight) < self._max_in_flight:
            batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
            task = asyncio.create_task(self._write(batch))
            self._in_flight.add(task)
            task.add_done_callback(self._batch_done)

    def _batch_done(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        self._start_batches()

    async def _write(self, batch: list[_Pending]) -> None:
        try:
            new = await run_in_threadpool(self._store_batch, batch)
        except Exception as error:  # noqa: BLE001 - handed to every waiting request, which decides
            for pending in batch:
                if not pending.stored.done():  # done: the request was cancelled (client gone)
                    pending.stored.set_exception(error)
            return
        for pending, outcome in zip(batch, new, strict=True):
            if not pending.stored.done():
                pending.stored.set_result(outcome)

    def _store_batch(self, batch: list[_Pending]) -> list[StoreOutcome]:
        received = [ReceivedEvent(p.event, p.payload, p.received_at) for p in batch]
        with self._engine.begin() as connection:
            new = store_events(connection, self._provider, received)
            duplicates = [item for item, is_new in zip(received, new, strict=True) if not is_new]
            conflicts = {id(item) for item in record_conflicts(connection, self._provider, duplicates)}
        return [
            NEW if is_new else CONFLICT if id(item) in conflicts else DUPLICATE
            for item, is_new in zip(received, new, strict=True)
        ]


def webhook_secrets_from_env() -> list[str]:
    """RECON_WEBHOOK_SECRET as a list (comma-separated during a rotation), or a ConfigError.

    The error names the variable, never its value.
    """
    secrets = [part.strip() for part in os.environ.get(SECRET_ENV, "").split(",") if part.strip()]
    if not secrets:
        raise ConfigError(f"{SECRET_ENV} is not set: the receiver needs the webhook signing secret")
    return secrets


def max_body_bytes_from_env() -> int:
    """RECON_WEBHOOK_MAX_BODY_BYTES (how ``recon webhooks serve`` hands its option to every worker)."""
    return config.positive_int(
        MAX_BODY_BYTES_ENV, os.environ.get(MAX_BODY_BYTES_ENV, str(DEFAULT_MAX_BODY_BYTES))
    )


def app_from_env() -> Starlette:
    """The receiver configured from the environment: the uvicorn factory each worker process calls."""
    # No pre-ping: a transaction on a dropped connection fails its batch with 503 and the provider retries.
    engine = make_engine(bounded_database_url(config.database_url()), pool_size=POOL_SIZE, pre_ping=False)
    return build_receiver(engine, webhook_secrets_from_env(), max_body_bytes=max_body_bytes_from_env())


def bounded_database_url(url: str) -> str:
    """``url`` with ``POSTGRES_TIMEOUTS`` for PostgreSQL (settings the URL names itself win); others as is."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return url
    query = {**POSTGRES_TIMEOUTS, **parsed.query}
    return parsed.update_query_dict(query).render_as_string(hide_password=False)


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's logging plus this package's INFO lines (accepted events), applied in every worker process:
    spawned workers inherit no logging setup from the ``recon`` process."""
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["loggers"]["recon_pipeline"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return log_config


def build_receiver(
    engine: Engine,
    secrets: Sequence[str],
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    providers: dict[str, Provider] = PROVIDERS,
) -> Starlette:
    """The Starlette app: ``POST /webhooks/{provider}`` for each of ``providers`` (the registry),
    ``GET /healthz`` and ``GET /metrics`` (``recon_pipeline.metrics``); disposes ``engine`` on shutdown.
    Every provider's deliveries are checked against ``secrets``."""
    if not secrets:
        raise ConfigError("the webhook receiver needs at least one signing secret")
    secret_list = list(secrets)
    writers = {name: EventWriter(engine, name) for name in providers}

    async def receive(request: Request) -> Response:
        name = request.path_params["provider"]
        provider = providers.get(name)
        if provider is None:
            return _rejected(404, "unknown_provider")
        try:
            raw_body = await read_limited_body(request, max_body_bytes)
        except BodyTooLarge:
            return _rejected(413, "body_too_large", headers={"Connection": "close"})
        try:
            received = provider.read_delivery(raw_body, request.headers, secret_list, int(time.time()))
        except SignatureError as error:
            return _rejected(400, error.reason)
        except (UnicodeDecodeError, EventFormatError):
            return _rejected(400, "malformed_event")
        now = datetime.now(UTC)
        try:
            outcomes = await asyncio.wait_for(
                asyncio.gather(*(writers[name].store(item.event, item.payload, now) for item in received)),
                STORE_TIMEOUT_S,
            )
        except (SQLAlchemyError, TimeoutError) as error:
            logger.error(
                "could not store webhook event %s: database unavailable (%s)",
                ", ".join(item.event.event_id for item in received),
                type(error).__name__,
            )
            return JSONResponse({"error": "database_unavailable"}, status_code=503)
        for item, outcome in zip(received, outcomes, strict=True):
            _log_stored(item.event, outcome)
        DUPLICATES_SUPPRESSED.labels(EVENTS).inc(sum(outcome != NEW for outcome in outcomes))
        body, media_type = provider.acknowledgement(outcomes)
        return Response(body, media_type=media_type)

    ping: asyncio.Future[int] | None = None

    async def healthz(_request: Request) -> JSONResponse:
        # Checks share the one in flight: a frozen database would otherwise hold a thread per check.
        nonlocal ping
        if ping is None or ping.done():
            ping = asyncio.ensure_future(run_in_threadpool(_conflicts_seen, engine))
        try:
            conflicts = await asyncio.wait_for(asyncio.shield(ping), HEALTH_TIMEOUT_S)
        except (SQLAlchemyError, TimeoutError) as error:
            logger.warning("health check: database unreachable (%s)", type(error).__name__)
            return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503)
        return JSONResponse({"status": "ok", "database": "reachable", "event_conflicts": conflicts})

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        engine.dispose()

    return Starlette(
        routes=[
            Route("/webhooks/{provider}", receive, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            metrics_route(engine),
        ],
        lifespan=lifespan,
    )


async def read_limited_body(request: Request, limit: int) -> bytes:
    """The raw body, refusing more than ``limit`` bytes before reading (Content-Length) and while reading
    (a chunked body, or a client that sends more than it declared)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge
    return bytes(body)


def _conflicts_seen(engine: Engine) -> int:
    """The health check's query: it proves the database answers, and counts the conflicting bodies kept."""
    with engine.connect() as connection:
        return conflict_count(connection)


def _log_stored(event: ProviderEvent, outcome: StoreOutcome) -> None:
    if outcome == CONFLICT:
        logger.warning(
            "webhook event %s reuses a stored event id with a different body: kept in "
            "payment_event_conflicts, the stored event is unchanged",
            event.event_id,
        )
    else:
        logger.info("webhook event %s type=%s duplicate=%s", event.event_id, event.event_type, outcome != NEW)


def _rejected(status: int, reason: str, headers: dict[str, str] | None = None) -> JSONResponse:
    logger.warning("webhook rejected: %s", reason)
    return JSONResponse({"error": reason}, status_code=status, headers=headers)
