"""`recon webhooks serve` and `recon metrics serve`: the long-running HTTP servers beside the pipeline
(the review desk's server is `recon review serve`, in ``desk``)."""

from __future__ import annotations

import argparse
import os

from recon_pipeline import config
from recon_pipeline.cli import args as cli_args
from recon_pipeline.cli.common import Commands, recon_database
from recon_pipeline.providers import PROVIDER_NAMES

MAX_BODY_BYTES = 64 * 2**20
MAX_WORKERS = 64


def cmd_webhooks_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from recon_pipeline.db import migrations
    from recon_pipeline.webhooks import limits, receiver

    # Workers are processes built by the factory from the environment: pass the option that way, and
    # validate what they will read here, so bad configuration is one line, before the database is touched.
    if args.max_body_bytes is not None:
        os.environ[receiver.MAX_BODY_BYTES_ENV] = str(args.max_body_bytes)
    receiver.max_body_bytes_from_env()
    limits.header_limits_from_env()
    receiver.webhook_secrets_from_env()
    with recon_database() as engine:
        migrations.upgrade(engine)
    print(
        f"webhook receiver on http://{args.host}:{args.port}: POST /webhooks/{{provider}} for "
        f"{', '.join(PROVIDER_NAMES)} ({args.workers} workers)",
        flush=True,
    )
    uvicorn.run(
        "recon_pipeline.webhooks.receiver:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        http=limits.PROTOCOL_PATH,  # header size cap and header deadline (httptools has neither)
        log_config=receiver.uvicorn_log_config(),
        access_log=False,  # the receiver logs each event by id; requests carry nothing more worth keeping
    )
    return 0


def cmd_metrics_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from recon_pipeline.db.engine import make_engine
    from recon_pipeline.metrics.exposition import metrics_app
    from recon_pipeline.webhooks.receiver import bounded_database_url

    # Bounded like the receiver's: a frozen database answers recon_metrics_database_up 0, not a hung scrape.
    engine = make_engine(bounded_database_url(config.database_url()), pool_size=1)
    print(f"metrics on http://{args.host}:{args.port}/metrics", flush=True)
    try:
        uvicorn.run(metrics_app(engine), host=args.host, port=args.port, log_config=None, access_log=False)
    finally:
        engine.dispose()
    return 0


def add_commands(commands: Commands) -> None:
    """Add `recon webhooks serve` and `recon metrics serve`."""
    webhooks = commands.add_parser("webhooks", help="the webhook receiver").add_subparsers(
        dest="webhooks_command", required=True
    )
    receive = webhooks.add_parser(
        "serve", help="receive every provider's webhooks (RECON_WEBHOOK_SECRET) into payment_events"
    )
    receive.add_argument("--host", default="127.0.0.1")
    receive.add_argument("--port", type=cli_args.port, default=12112)
    receive.add_argument(
        "--max-body-bytes",
        type=cli_args.count(MAX_BODY_BYTES),
        help="larger bodies get 413 (RECON_WEBHOOK_MAX_BODY_BYTES, 256 KiB)",
    )
    receive.add_argument(
        "--workers", type=cli_args.count(MAX_WORKERS), default=1, help="uvicorn worker processes (1)"
    )
    receive.set_defaults(handler=cmd_webhooks_serve)

    metrics = commands.add_parser("metrics", help="operational metrics").add_subparsers(
        dest="metrics_command", required=True
    )
    metrics_serve = metrics.add_parser(
        "serve",
        help="serve /metrics (Prometheus): the event queue and posting outbox, read from the database",
    )
    metrics_serve.add_argument("--host", default="127.0.0.1")
    metrics_serve.add_argument("--port", type=cli_args.port, default=12113)
    metrics_serve.set_defaults(handler=cmd_metrics_serve)
