"""`recon demo` and `recon simulator`: the simulated world, imported inside the commands only, so that
no other command (and nothing in production) loads it."""

from __future__ import annotations

import argparse

from recon_pipeline.cli import args as cli_args
from recon_pipeline.cli.common import Commands, recon_database
from recon_pipeline.providers import PROVIDER_NAMES
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR

MAX_BOOKINGS = 1_000_000  # per property and night: beyond it the demo world would not fit in memory


def cmd_demo(args: argparse.Namespace) -> int:
    from recon_pipeline.simulation import commands  # the one way up a floor: only this command loads it

    return commands.demo(args, recon_database)


def cmd_simulator_serve(args: argparse.Namespace) -> int:
    from recon_pipeline.simulation import commands  # the one way up a floor: only this command loads it

    return commands.simulator_serve(args)


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
        help=f"whose API the simulator speaks and whose demo properties are seeded ({DEFAULT_FLAVOUR})",
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
