"""The set-up the fleet benchmarks share, written once: the fleet's night seeded into a reconciliation
database (``scale.py``, ``batch_profile.py``), and a PostgreSQL-backed Dagster instance with its code
server and webserver (``scale.py``, ``ui_partitions.py``).

Each benchmark times something else on top; none of this is timed in their figures.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import dagster as dg
from sqlalchemy.engine import make_url

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.properties import PropertyRow
from recon_pipeline.simulation.demo.fleet import (
    PLATFORM_SHARE,
    fleet_properties,
    fleet_thresholds,
    fleet_world,
)
from recon_pipeline.simulation.demo.seed import seed_thresholds, seed_world
from recon_pipeline.simulation.demo.world import World
from recon_pipeline_tests.support.dagster_processes import (
    DagsterDeployment,
    GraphQL,
    dagster_pg_env,
    instance_from_home,
    write_dagster_home,
)
from recon_pipeline_tests.support.scratch import scratch_database

STARTUP_TIMEOUT_S = 90


@dataclass(frozen=True)
class FleetNight:
    """The fleet of ``properties`` and the demo world of its ``night`` (every category planted)."""

    fleet: tuple[PropertyRow, ...]
    world: World
    night: date
    build_s: float


def fleet_night(
    properties: int, night: date, bookings: int, platform_share: float = PLATFORM_SHARE, plant: bool = True
) -> FleetNight:
    """The fleet and its night's world, built (deterministic: the same arguments give the same ids);
    ``platform_share`` 0: every property on its own connected account; ``plant=False``: nothing to find."""
    started = time.perf_counter()
    fleet = fleet_properties(properties, platform_share=platform_share)
    world = fleet_world(fleet, night, bookings, plant=plant)
    return FleetNight(fleet, world, night, time.perf_counter() - started)


def seed(url: str, world: World, fleet: tuple[PropertyRow, ...]) -> float:
    """Migrate and seed the recon database (the world, the fleet's thresholds); the seconds it took."""
    started = time.perf_counter()
    engine = make_engine(url)
    try:
        migrations.upgrade(engine)
        seed_world(engine, world)
        seed_thresholds(engine, fleet_thresholds(fleet), datetime.now(UTC))
    finally:
        engine.dispose()
    return time.perf_counter() - started


@dataclass(frozen=True)
class DagsterOnPostgres:
    """A Dagster instance on a scratch PostgreSQL database (deploy/dagster.yaml with overrides), its
    DAGSTER_HOME and a scratch folder, ready for a deployment to be started over it."""

    instance: dg.DagsterInstance
    home: Path
    pg_env: dict[str, str]
    dagster_url: str
    tmp: Path

    def start(
        self, stack: ExitStack, env: Mapping[str, str], code_module: str = DagsterDeployment.code_module
    ) -> tuple[DagsterDeployment, GraphQL]:
        """Code server and webserver with ``env`` (DAGSTER_HOME and DAGSTER_PG_* added), the code location
        loaded; stopped (logs printed on failure) when ``stack`` closes."""
        process_env = {"DAGSTER_HOME": str(self.home), **self.pg_env, **env}
        deployment = stack.enter_context(DagsterDeployment(process_env, self.tmp / "logs", code_module))
        stack.enter_context(deployment.logs_on_failure())
        deployment.start_code_server(STARTUP_TIMEOUT_S)
        client = deployment.start_webserver(STARTUP_TIMEOUT_S)
        client.wait_for_location(STARTUP_TIMEOUT_S, deployment)
        return deployment, client


@contextmanager
def dagster_on_postgres(
    admin_url: str, prefix: str, overrides: Mapping[str, Any] | None = None
) -> Iterator[DagsterOnPostgres]:
    """A fresh Dagster database on ``admin_url``'s server and an instance over it; dropped afterwards."""
    with (
        scratch_database(admin_url, prefix) as dagster_url,
        tempfile.TemporaryDirectory(prefix=f"{prefix}_") as folder,
    ):
        tmp = Path(folder)
        home = write_dagster_home(tmp / "dagster_home", overrides)
        pg_env = dagster_pg_env(make_url(dagster_url))
        with instance_from_home(home, pg_env) as instance:
            yield DagsterOnPostgres(instance, home, pg_env, dagster_url, tmp)
