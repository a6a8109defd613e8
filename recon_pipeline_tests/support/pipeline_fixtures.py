"""A seeded property-night world, served by the simulator, reconciled through Dagster's own APIs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any

import dagster as dg
import httpx
import pytest
from sqlalchemy import Engine, select

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.batches import batch_run_config
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers import PROVIDER_NAMES
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.seed import seed_world
from recon_pipeline.simulation.demo.world import World, build_world
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline.simulation.registry import simulation_named
from recon_pipeline_tests.support.provider_fixtures import flavour_of

NIGHT = date(2026, 11, 30)
BOOKINGS_PER_NIGHT = 120  # > 100 platform charges per window: every pull spans several pages


@dataclass
class SeededPipeline:
    """Everything a pipeline test touches: the database, the simulator, a Dagster instance."""

    engine: Engine
    world: World
    simulator: ServerThread
    instance: dg.DagsterInstance
    resources: dict[str, Any]
    properties: tuple[PropertyRow, ...] = DEMO_PROPERTIES
    flavour: str = "stripe"

    def materialize(self, *property_ids: str, **kwargs: Any) -> dg.ExecuteInProcessResult:
        """One run of the night for a batch of ``property_ids`` (none: every property)."""
        run_config = {**kwargs.pop("run_config", {}), **batch_run_config(property_ids)}
        return dg.materialize(
            reconciliation_assets,
            partition_key=NIGHT.isoformat(),
            instance=self.instance,
            resources=self.resources,
            run_config=run_config,
            **kwargs,
        )

    def faults(self, **settings: Any) -> None:
        httpx.post(
            f"{self.simulator.base_url}/_simulator/faults", json=settings, timeout=5
        ).raise_for_status()

    def stats(self) -> dict[str, Any]:
        response = httpx.get(f"{self.simulator.base_url}/_simulator/stats", timeout=5)
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def found(self, property_id: str) -> dict[str, int]:
        with self.engine.connect() as connection:
            categories = connection.execute(
                select(discrepancies.c.category).where(discrepancies.c.property_id == property_id)
            ).scalars()
            counts: dict[str, int] = {}
            for category in categories:
                counts[category] = counts.get(category, 0) + 1
            return counts

    def planted(self, property_id: str) -> dict[str, int]:
        """What the world planted for the property, as its provider can show it (``DemoWorld``)."""
        return {cat: n for (p, _night, cat), n in self.world.expected.items() if p == property_id}

    def table(self, table: Any) -> list[tuple[Any, ...]]:
        with self.engine.connect() as connection:
            return [
                tuple(row) for row in connection.execute(select(table).order_by(*table.primary_key.columns))
            ]


def asset_metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    """The plain metadata values of the run's one materialization of ``asset``."""
    [materialization] = [
        event.materialization
        for event in result.get_asset_materialization_events()
        if event.asset_key == dg.AssetKey(asset)
    ]
    return {key: value.value for key, value in materialization.metadata.items()}


@contextmanager
def seeded(
    database_url: str,
    flavour: str = "stripe",
    *,
    plant: bool = True,
    properties: tuple[PropertyRow, ...] | None = None,
    edit: Callable[[World], None] | None = None,
) -> Iterator[SeededPipeline]:
    """The demo world of ``flavour``'s properties (or ``properties``), seeded and served by a simulator
    speaking its API; ``plant=False``: a clean night; ``edit`` changes the world before it is seeded."""
    # the flavour's keyed properties (the demo's hotel-style one is tested by the demo's own tests)
    properties = properties or simulation_named(flavour).demo_world().properties
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    world = build_world(
        {p.property_id: NIGHT for p in properties},
        bookings_per_night=BOOKINGS_PER_NIGHT,
        properties=properties,
        flavour=flavour,
        plant=plant,
    )
    if edit is not None:
        edit(world)
        world.store.reindex()
    seed_world(engine, world)
    app = build_app(flavour_of(flavour).served(world.store), flavour=flavour)
    with ServerThread(app) as simulator, dg.instance_for_test() as instance:
        resources = {
            "recon_db": ReconDatabase(database_url=database_url),
            "provider": ProviderResource(
                provider="simulator",
                flavour=flavour,
                base_url=simulator.base_url,
                max_concurrency=4,
                base_delay_s=0.01,
                max_delay_s=0.05,
            ),
        }
        yield SeededPipeline(engine, world, simulator, instance, resources, properties, flavour)
    engine.dispose()


@pytest.fixture
def seeded_pipeline(database_url: str) -> Iterator[SeededPipeline]:
    """The Stripe demo world on SQLite and on PostgreSQL."""
    with seeded(database_url) as pipeline:
        yield pipeline


# Every registered provider on SQLite, Stripe on PostgreSQL too (the database paths are the same).
PROVIDER_WORLDS = [
    *(pytest.param((name, "sqlite_url"), id=f"{name}-sqlite") for name in PROVIDER_NAMES),
    pytest.param(("stripe", "postgres_url"), id="stripe-postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=PROVIDER_WORLDS)
def provider_pipeline(request: pytest.FixtureRequest) -> Iterator[SeededPipeline]:
    """The demo world of each registered provider."""
    flavour, database_fixture = request.param
    with seeded(str(request.getfixturevalue(database_fixture)), flavour) as pipeline:
        yield pipeline


@pytest.fixture(params=PROVIDER_WORLDS)
def clean_pipeline(request: pytest.FixtureRequest) -> Iterator[SeededPipeline]:
    """The demo world of each provider on a night where nothing is wrong."""
    flavour, database_fixture = request.param
    with seeded(str(request.getfixturevalue(database_fixture)), flavour, plant=False) as pipeline:
        yield pipeline
