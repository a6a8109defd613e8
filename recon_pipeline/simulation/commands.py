"""What `recon demo` and `recon simulator serve` do: the simulated world's entry points.

The cli (``cli/simulation.py``) parses the arguments and imports this module inside those two commands
only; it is the one import from a lower floor to a higher one, so nothing else in production loads the
simulated world.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime

import uvicorn
from sqlalchemy import Engine

from recon_pipeline.providers.settings import simulator_flavour
from recon_pipeline.simulation.demo import desk
from recon_pipeline.simulation.demo.properties import demo_properties
from recon_pipeline.simulation.demo.run import DemoRunFailed, demo_nights, run_demo, unlike_the_world
from recon_pipeline.simulation.demo.world import build_world
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline.simulation.host.store import SimulatorStore


def demo(args: argparse.Namespace, database: Callable[[], AbstractContextManager[Engine]]) -> int:
    """Reconcile the demo world's last night through Dagster; 1 if the findings are not the planted ones.
    ``database`` opens the command's database (the cli's, so its errors read as every command's)."""
    properties = demo_properties(args.provider)
    if args.desk_users:
        desk.demo_password()  # a bad RECON_NEW_USER_PASSWORD stops the demo before it starts
    try:
        outcomes = run_demo(bookings_per_night=args.bookings, seed=args.seed, flavour=args.provider)
    except DemoRunFailed as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    unlike = unlike_the_world(outcomes)
    if unlike:
        print(f"error: {unlike}", file=sys.stderr)
        return 1
    if args.desk_users:
        with database() as engine:
            added = desk.add_desk_demo(engine, properties, datetime.now(UTC))
        print("")
        print("\n".join(desk.render_desk_demo(added)))
        print(
            "start the desk with RECON_REVIEW_SECRET (32+ random characters) set: recon review serve; "
            "sign in as demo-analyst"
        )
    return 0


def simulator_serve(args: argparse.Namespace) -> int:
    """Serve a provider's simulated API on ``--host``/``--port`` until interrupted."""
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
