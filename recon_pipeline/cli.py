"""The `recon` command line. Every command exits non-zero with a one-line reason on bad input."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from recon_pipeline import config

Handler = Callable[[argparse.Namespace], int]


def cmd_db_init(_args: argparse.Namespace) -> int:
    from recon_pipeline.db.engine import init_db, make_engine

    created = init_db(make_engine(config.database_url()))
    print(f"created tables: {', '.join(created)}" if created else "all tables already exist")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from recon_pipeline.demo.run import run_demo

    outcomes = run_demo(bookings_per_night=args.bookings, seed=args.seed)
    mismatched = [o.property_id for o in outcomes if o.found != o.planted]
    if mismatched:
        print(
            f"error: findings differ from the planted discrepancies for {', '.join(mismatched)}",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_simulator_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from recon_pipeline.demo.run import demo_nights
    from recon_pipeline.demo.world import build_world
    from recon_pipeline.simulator.app import build_app
    from recon_pipeline.simulator.store import SimulatorStore

    if args.data:
        store = SimulatorStore.from_json(args.data)
    else:
        store = build_world(demo_nights(datetime.now(UTC)), args.bookings, args.seed).store
    print(f"simulator on http://{args.host}:{args.port} ({len(store.charges)} charges)", flush=True)
    # With RECON_PROVIDER_API_KEY set, the simulator demands it as the bearer key, as Stripe would.
    api_key = os.environ.get("RECON_PROVIDER_API_KEY") or None
    uvicorn.run(build_app(store, api_key=api_key), host=args.host, port=args.port, log_level="warning")
    return 0


def cmd_webhooks_serve(args: argparse.Namespace) -> int:
    import uvicorn
    from sqlalchemy.exc import SQLAlchemyError

    from recon_pipeline.db.engine import init_db, make_engine
    from recon_pipeline.webhooks import receiver

    # Workers are processes built by the factory from the environment: pass the option that way, and
    # validate what they will read here, so bad configuration is one line, before the database is touched.
    if args.max_body_bytes is not None:
        os.environ[receiver.MAX_BODY_BYTES_ENV] = str(args.max_body_bytes)
    receiver.max_body_bytes_from_env()
    receiver.webhook_secrets_from_env()
    engine = make_engine(config.database_url())
    try:
        init_db(engine)
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or type(error).__name__).splitlines()[0]
        raise config.ConfigError(f"cannot initialise the database: {reason}") from None
    finally:
        engine.dispose()
    print(
        f"webhook receiver on http://{args.host}:{args.port}/webhooks/stripe ({args.workers} workers)",
        flush=True,
    )
    uvicorn.run(
        "recon_pipeline.webhooks.receiver:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_config=receiver.uvicorn_log_config(),
        access_log=False,  # the receiver logs each event by id; requests carry nothing more worth keeping
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="recon", description="Nightly payment reconciliation on Dagster.")
    commands = parser.add_subparsers(dest="command", required=True)

    db = commands.add_parser("db", help="the reconciliation database").add_subparsers(
        dest="db_command", required=True
    )
    init = db.add_parser("init", help="create the contract's tables in RECON_DATABASE_URL (idempotent)")
    init.set_defaults(handler=cmd_db_init)

    demo = commands.add_parser(
        "demo", help="seed, simulate and reconcile last night of three demo properties"
    )
    demo.add_argument(
        "--bookings",
        type=config.positive_argument,
        default=1000,
        help="ordinary bookings per property (1000)",
    )
    demo.add_argument("--seed", type=int, default=7, help="seed of the demo world (7)")
    demo.set_defaults(handler=cmd_demo)

    simulator = commands.add_parser("simulator", help="the provider simulator").add_subparsers(
        dest="simulator_command", required=True
    )
    serve = simulator.add_parser("serve", help="serve the Stripe subset from seeded data")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=12111)
    serve.add_argument("--seed", type=int, default=7)
    serve.add_argument("--bookings", type=config.positive_argument, default=1000)
    serve.add_argument(
        "--data", help="serve this JSON store (SimulatorStore.to_json) instead of the demo world"
    )
    serve.set_defaults(handler=cmd_simulator_serve)

    webhooks = commands.add_parser("webhooks", help="the webhook receiver").add_subparsers(
        dest="webhooks_command", required=True
    )
    receive = webhooks.add_parser(
        "serve", help="receive Stripe webhooks (RECON_WEBHOOK_SECRET) into payment_events"
    )
    receive.add_argument("--host", default="127.0.0.1")
    receive.add_argument("--port", type=int, default=12112)
    receive.add_argument(
        "--max-body-bytes",
        type=config.positive_argument,
        help="larger bodies get 413 (RECON_WEBHOOK_MAX_BODY_BYTES, 256 KiB)",
    )
    receive.add_argument(
        "--workers", type=config.positive_argument, default=1, help="uvicorn worker processes (1)"
    )
    receive.set_defaults(handler=cmd_webhooks_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `recon` console script."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except (config.ConfigError, ValueError, LookupError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
