"""The code location's wiring: importing it reads no environment, a bad setting fails the run naming its
variable, and the steps of a process share one provider client."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import dagster as dg
import pytest

from recon_pipeline.definitions import build_definitions
from recon_pipeline.defs import resources as resources_module
from recon_pipeline.defs.resources import ProviderResource
from recon_pipeline_tests.support.pipeline_fixtures import SeededPipeline, seeded

RECON_VARIABLES = (
    "RECON_DATABASE_URL",
    "RECON_HOME",
    "RECON_PROVIDER",
    "RECON_PROVIDER_BASE_URL",
    "RECON_PROVIDER_API_KEY",
    "RECON_PROVIDER_MAX_CONCURRENCY",
    "RECON_PROVIDER_MAX_RPS",
    "RECON_FIRST_NIGHT",
    "RECON_EXECUTOR",
    "RECON_RUN_MAX_RUNTIME_S",
    "RECON_STEP_RETRY_DELAY_S",
    "RECON_EVENTS_SENSOR_INTERVAL_S",
    "RECON_EVENTS_MAX_RUNS",
    "RECON_POSTINGS_SENSOR_INTERVAL_S",
    "RECON_POSTING_ADAPTER",
    "RECON_MORNING_CLOSE",
    "RECON_NIGHTLY_LOOKBACK",
)
IMPORT_ONLY = (
    "import sys, recon_pipeline.definitions as d; "
    "loaded = sorted(m for m in sys.modules if m.startswith('recon_pipeline.defs')); "
    "print('defs modules imported:', loaded); assert not loaded, loaded"
)


def _import_definitions(recon_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("RECON_")}
    return subprocess.run(
        [sys.executable, "-c", IMPORT_ONLY],
        env={**env, **recon_env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("value", [None, "garbage \x7f ~!"], ids=["unset", "garbage"])
def test_importing_the_code_location_reads_no_environment(value: str | None) -> None:
    done = _import_definitions({} if value is None else dict.fromkeys(RECON_VARIABLES, value))
    assert done.returncode == 0, done.stderr
    assert "defs modules imported: []" in done.stdout


def test_the_code_location_loads_its_defs_folder() -> None:
    # Loading the defs folder reads the current instance's definitions-state storage; a live instance of
    # its own keeps an earlier test's disposed instance (a dead weakref in that context) out of it.
    with dg.instance_for_test():
        defs = build_definitions()
        dg.Definitions.validate_loadable(defs)
    assert set(defs.resources) == {"recon_db", "provider", "posting"}
    assert defs.resolve_job_def("reconcile_night").partitions_def is not None
    assert defs.resolve_sensor_def("due_postings_sensor").job_name == "post_adjustments"
    assert isinstance(defs.resources["provider"], ProviderResource)


@pytest.fixture
def pipeline(sqlite_url: str) -> Iterator[SeededPipeline]:
    with seeded(sqlite_url) as seeded_pipeline:
        yield seeded_pipeline


@pytest.mark.parametrize(
    "variable", ["RECON_PROVIDER_MAX_CONCURRENCY", "RECON_PROVIDER_MAX_RPS", "RECON_PROVIDER"]
)
def test_a_bad_setting_fails_the_run_naming_its_variable(
    pipeline: SeededPipeline, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "garbage")
    database_url = pipeline.resources["recon_db"].database_url
    resources = {**pipeline.resources, "provider": ProviderResource(database_url=database_url)}
    monkeypatch.setenv("RECON_PROVIDER_BASE_URL", pipeline.simulator.base_url)
    pipeline.resources = resources
    result = pipeline.materialize(pipeline.properties[0].property_id, raise_on_error=False)
    assert not result.success
    [failure] = [event for event in result.all_events if event.is_step_failure]
    assert failure.step_key == "reconcile_batch"
    assert variable in str(failure.step_failure_data.error)


def test_the_steps_of_a_process_share_one_provider_client(pipeline: SeededPipeline) -> None:
    provider: ProviderResource = pipeline.resources["provider"]
    client = provider.http()
    assert provider.http() is client  # same settings: the process's one client
    other = ProviderResource(provider="simulator", base_url=pipeline.simulator.base_url, max_concurrency=2)
    assert other.http() is not client  # other settings, another client
    clients = dict(resources_module._clients)
    assert pipeline.materialize(pipeline.properties[0].property_id).success
    assert pipeline.materialize(pipeline.properties[1].property_id).success
    assert resources_module._clients == clients  # two runs' steps made no client of their own
