"""Two nights of the demo's EUR and JPY properties, reconciled through Dagster, with RECON_HOME in tmp,
then their reports rendered on demand by `recon report night` into a folder of their own.

The nights are nine days apart, so the by-night chart has two bars and the overview two age buckets
(while the wall clock is within a month of NIGHT).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import Engine

from recon_pipeline import cli
from recon_pipeline.db.engine import make_engine
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.batches import batch_run_config
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline_tests.support.dagster_processes import NightsWorld, build_nights_world, seed_database
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, asset_metadata
from recon_pipeline_tests.support.postgres import postgres_database

_BY_ID = {p.property_id: p for p in DEMO_PROPERTIES}
LISBON, KYOTO = _BY_ID["lisbon-riverside"], _BY_ID["kyoto-gion"]  # EUR, JPY (zero-decimal)
OLD_NIGHT = NIGHT - timedelta(days=9)
NIGHTS = (OLD_NIGHT, NIGHT)
BOOKINGS_PER_NIGHT = 30


@dataclass
class ReportedNights:
    """The database, the Dagster instance and RECON_HOME after every (property, night) was reconciled, and
    the reports rendered on demand under ``rendered``."""

    engine: Engine
    world: NightsWorld
    home: Path
    rendered: Path
    instance: dg.DagsterInstance
    resources: dict[str, Any]
    results: dict[tuple[str, str], dg.ExecuteInProcessResult] = field(default_factory=dict)

    def materialize(self, property_id: str, night: str) -> dg.ExecuteInProcessResult:
        result = dg.materialize(
            reconciliation_assets,
            partition_key=night,
            run_config=batch_run_config([property_id]),
            instance=self.instance,
            resources=self.resources,
        )
        assert result.success
        self.results[(property_id, night)] = result
        return result

    def render(self, night: str) -> None:
        """`recon report night NIGHT --out rendered`: every property's files, read from the database."""
        assert cli.main(["report", "night", night, "--out", str(self.rendered)]) == 0

    def report_metadata(self, property_id: str, night: str) -> dict[str, Any]:
        return asset_metadata(self.results[(property_id, night)], "discrepancy_report")


@contextmanager
def _database(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'recon.sqlite'}"
    else:
        with postgres_database() as url:
            yield url


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def reported_nights(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReportedNights]:
    """Module-scoped (four runs of the pipeline are the slow part): tests must only read, or, like
    test_reports_overview's ``overviews``, change the rows once for the whole module."""
    tmp_path = tmp_path_factory.mktemp("reported_nights")
    home = tmp_path / "recon_home"
    world = build_nights_world(NIGHTS, BOOKINGS_PER_NIGHT, (LISBON, KYOTO))
    with (
        _database(request.param, tmp_path) as database_url,
        pytest.MonkeyPatch.context() as monkeypatch,
        ServerThread(build_app(world.world.store)) as simulator,
        dg.instance_for_test() as instance,
    ):
        monkeypatch.setenv("RECON_HOME", str(home))
        monkeypatch.setenv("RECON_DATABASE_URL", database_url)
        seed_database(database_url, world)
        engine = make_engine(database_url)
        resources = {
            "recon_db": ReconDatabase(database_url=database_url),
            "provider": ProviderResource(
                provider="simulator", base_url=simulator.base_url, max_concurrency=4
            ),
        }
        reported = ReportedNights(engine, world, home, tmp_path / "rendered", instance, resources)
        for night in NIGHTS:
            for prop in (LISBON, KYOTO):
                reported.materialize(prop.property_id, night.isoformat())
            reported.render(night.isoformat())
        yield reported
        engine.dispose()
