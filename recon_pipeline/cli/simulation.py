"""`recon demo` and `recon simulator`: the simulated world, imported inside the commands only, so that
no other command (and nothing in production) loads it."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime

from recon_pipeline.cli import args as cli_args
from recon_pipeline.cli.common import Commands, recon_database
from recon_pipeline.providers import PROVIDER_NAMES
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR, simulator_flavour

MAX_BOOKINGS = 1_000_000  # per property and night: beyond it the demo world would not fit in memory


def cmd_demo(args: argparse.Namespace) -> int:
    from recon_pipeline.simulation.demo import desk
    from recon_pipeline.simulation.demo.properties import demo_properties
    from recon_pipeline.simulation.demo.run import DemoRunFailed, run_demo

    properties = demo_properties(args.provider)
    if args.desk_users:
        desk.demo_password()  # a bad RECON_NEW_USER_PASSWORD stops the demo before it starts
    try:
        outcomes = run_demo(bookings_per_night=args.bookings, seed=args.seed, flavour=args.provider)
    except DemoRunFailed as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    mismatched = [o.property_id for o in outcomes if o.found != o.planted]
    if mismatched:
        print(
            f"error: findings differ from the planted discrepancies for {', '.join(mismatched)}",
            file=sys.stderr,
        )
        return 1
    if args.desk_users:
        with recon_database() as engine:
            added = desk.add_desk_demo(engine, properties, datetime.now(UTC))
        print("")
        print("\n".join(desk.render_desk_demo(added)))
        print(
            "start the desk with RECON_REVIEW_SECRET (32+ random characters) set: recon review serve; "
            "sign in as demo-analyst"
        )
    return 0


def cmd_simulator_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from recon_pipeline.simulation.demo.properties import demo_properties
    from recon_pipeline.simulation.demo.run import demo_nights
    from recon_pipeline.simulation.demo.world import build_world
    from recon_pipeline.simulation.host.app import build_app
    from recon_pipeline.simulation.host.store import SimulatorStore

    flavour = simulator_flavour(args.flavour)
    if args.data:
        store = SimulatorStore.from_json(args.data)
    else:
        properties = demo_properties(flavour)
        nights = demo_nights(datetime.now(UTC), flavour)
        store = build_world(nights, args.bookings, args.seed, properties, flavour).store
    print(
        f"simulator on http://{args.host}:{args.port} speaking {flavour} ({len(store.charges)} payments)",
        flush=True,
    )
    # With RECON_PROVIDER_API_KEY set, the simulator demands it as the provider would (its dialect says how).
    api_key = os.environ.get("RECON_PROVIDER_API_KEY") or None
    app = build_app(store, api_key=api_key, flavour=flavour)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def add_commands(commands: Commands) -> None:
    """Add `recon demo` and `recon simulator serve`."""
    demo = commands.add_parser(
        "demo",
        help="seed, simulate and reconcile the demo properties of one provider, each its newest night whose "
        "money the provider has published (last night, but for Adyen)",
    )
    demo.add_argument(
        "--provider",
        choices=PROVIDER_NAMES,
        default=DEFAULT_FLAVOUR,
        help="whose API the simulator speaks and whose demo properties are seeded "
        f"({DEFAULT_FLAVOUR})",
    )
    demo.add_argument(
        "--bookings",
        type=cli_args.count(MAX_BOOKINGS),
        default=1000,
        help="ordinary bookings per property (1000)",
    )
    demo.add_argument("--seed", type=int, default=7, help="seed of the demo world (7)")
    demo.add_argument(
        "--desk-users",
        action="store_true",
        help="then add (or reset) the review desk's demo users demo-analyst, demo-approver and "
        "demo-approver2 over the demo's properties, with RECON_NEW_USER_PASSWORD or a generated password "
        "printed once, and lower one property's four-eyes threshold so that its larger proposals need two "
        "approvers",
    )
    demo.set_defaults(handler=cmd_demo)

    simulator = commands.add_parser("simulator", help="the provider simulator").add_subparsers(
        dest="simulator_command", required=True
    )
    serve = simulator.add_parser("serve", help="serve one provider's API subset from seeded data")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument(
        "--flavour",
        choices=PROVIDER_NAMES,
        help="the API to speak and whose demo properties to seed "
        f"(RECON_PROVIDER_FLAVOUR, else {DEFAULT_FLAVOUR})",
    )
    serve.add_argument("--port", type=cli_args.port, default=12111)
    serve.add_argument("--seed", type=int, default=7)
    serve.add_argument("--bookings", type=cli_args.count(MAX_BOOKINGS), default=1000)
    serve.add_argument(
        "--data", help="serve this JSON store (SimulatorStore.to_json) instead of the demo world"
    )
    serve.set_defaults(handler=cmd_simulator_serve)
