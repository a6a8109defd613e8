"""A standalone event worker process: drain the due events, print the counts as one JSON line, exit.

    RECON_PROVIDER_API_KEY=... python -m recon_pipeline.events.worker \\
        --database-url postgresql://... --provider-base-url http://127.0.0.1:12111 --worker-id w1

Several of these may run at once against one PostgreSQL database (claims use ``SKIP LOCKED``); the
multi-process test and the processor benchmark start them this way. The provider key is read from
``RECON_PROVIDER_API_KEY`` only, never from the command line, where ``ps`` would show it.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import timedelta

from recon_pipeline import config
from recon_pipeline.arguments import bounded_integer
from recon_pipeline.db.engine import make_engine
from recon_pipeline.errors import ConfigError
from recon_pipeline.events.processor import DEFAULT_LEASE, process_available
from recon_pipeline.providers import build_client
from recon_pipeline.providers.http import ProviderHttp, max_rps_from_env
from recon_pipeline.providers.ratelimit import deployment_limiter, deployment_rate
from recon_pipeline.providers.settings import provider_settings


def positive(text: str) -> int:
    """A positive count an SQL Integer column holds (``recon``'s own counts have the same bounds)."""
    return bounded_integer(text, 1, config.MAX_INT_SETTING, "a count")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m recon_pipeline.events.worker", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--database-url", help="SQLAlchemy URL (default: RECON_DATABASE_URL)")
    parser.add_argument("--provider-base-url", help="provider API root (default: RECON_PROVIDER_BASE_URL)")
    parser.add_argument("--worker-id", required=True, help="unique name of this worker (the lease owner)")
    parser.add_argument(
        "--batch-size", type=positive, default=100, help="events claimed per batch"
    )
    parser.add_argument(
        "--max-batches", type=positive, default=10_000, help="stop after this many batches"
    )
    parser.add_argument(
        "--lease-s",
        type=positive,
        default=int(DEFAULT_LEASE.total_seconds()),
        help="lease per claim",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # it logs every request at INFO
    try:
        settings = provider_settings(base_url=args.provider_base_url)
        rate = deployment_rate(settings, max_rps_from_env())
        database_url = args.database_url or config.database_url()
        engine = make_engine(database_url, pool_size=1)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        # RECON_PROVIDER_MAX_RPS is the deployment's: this worker takes its slots from the shared bucket.
        limiter = deployment_limiter(database_url, settings, rate)
        with ProviderHttp(
            settings.base_url,
            settings.api_key,
            settings.max_concurrency,
            limiter=limiter,
            provider=settings.flavour,
        ) as http:
            counts = process_available(
                engine,
                build_client(settings.flavour, http, settings.client_settings()),
                args.worker_id,
                batch_size=args.batch_size,
                max_batches=args.max_batches,
                lease=timedelta(seconds=args.lease_s),
            )
    finally:
        engine.dispose()
    print(json.dumps(asdict(counts), sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
