"""``/metrics`` in the Prometheus text format: the queue gauges, read from the database at each scrape
(so any process serves them truthfully), beside this process's own counters (``instruments``).

The route renders with prometheus-client's ``generate_latest`` in Starlette's thread pool rather than
mounting ``make_asgi_app``: that app collects on the event loop, and collecting here queries the
database, which would stall the webhook receiver's deliveries behind a slow scrape.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recon_pipeline.metrics.instruments import PROCESS_METRICS
from recon_pipeline.metrics.queues import POSTINGS, read_queues

logger = logging.getLogger(__name__)


class QueueCollector(Collector):
    """The queues' gauges, queried at collect time. A database that cannot be read yields only
    ``recon_metrics_database_up 0`` (alert on it), never stale figures or a failed scrape."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def describe(self) -> list[GaugeMetricFamily]:
        return []  # registering must not query the database; the names are unique by construction

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("recon_metrics_database_up", "1 when the queue gauges could be read.")
        try:
            with self._engine.connect() as connection:
                queues = read_queues(connection)
        except SQLAlchemyError as error:
            logger.warning("metrics: the queues could not be read (%s)", type(error).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        now = datetime.now(UTC)
        depth = GaugeMetricFamily(
            "recon_queue_depth", "Rows in the queue, by state.", labels=["queue", "state"]
        )
        oldest = GaugeMetricFamily(
            "recon_queue_oldest_open_age_seconds",
            "Age of the oldest job not yet settled (from when it entered the queue; 0 when none).",
            labels=["queue"],
        )
        unknown = GaugeMetricFamily(
            "recon_queue_unknown_outcomes", "Jobs sent with no answer, awaiting a lookup.", labels=["queue"]
        )
        for queue in queues:
            for state, count in queue.depth.items():
                depth.add_metric([queue.queue, state], count)
            oldest.add_metric([queue.queue], queue.oldest_age_s(now))
            if queue.queue == POSTINGS:
                unknown.add_metric([queue.queue], queue.unknown)
        yield from (depth, oldest, unknown)


def metrics_registry(engine: Engine) -> CollectorRegistry:
    """A registry of this process's counters and the queue gauges read through ``engine``."""
    registry = CollectorRegistry()
    for metric in PROCESS_METRICS:
        registry.register(metric)
    registry.register(QueueCollector(engine))
    return registry


def metrics_route(engine: Engine) -> Route:
    """``GET /metrics`` for an existing Starlette app (the webhook receiver's)."""
    registry = metrics_registry(engine)

    async def metrics(_request: Request) -> Response:
        return Response(await run_in_threadpool(generate_latest, registry), media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", metrics, methods=["GET"])


def metrics_app(engine: Engine) -> Starlette:
    """The app of ``recon metrics serve``: ``/metrics`` alone."""
    return Starlette(routes=[metrics_route(engine)])
