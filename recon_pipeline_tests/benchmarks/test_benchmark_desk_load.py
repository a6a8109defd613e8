"""The desk load benchmark (``benchmarks/desk_load.py``) still seeds, serves `recon review serve` and runs
every scenario at a tiny size: the analysts' light pages, the stylesheet and each scenario's heavy load
answered, with no error; its timings are printed, never asserted."""

from __future__ import annotations

import pytest

from benchmarks import desk_load
from recon_pipeline_tests.support.benchmark_runs import benchmark_json


@pytest.mark.postgres
@pytest.mark.slow
def test_desk_load_benchmark_runs_every_scenario_without_an_error(postgres_url: str) -> None:
    figures = benchmark_json(
        "benchmarks.desk_load",
        "--properties",
        "3",
        "--nights",
        "2",
        "--analysts",
        "2",
        "--seconds",
        "2",
        timeout_s=300,
    )
    print(desk_load.markdown(figures))
    assert figures["errors"] == 0
    scenarios = {scenario["scenario"]: scenario for scenario in figures["scenarios"]}
    assert list(scenarios) == list(desk_load.SCENARIOS)
    for name, scenario in scenarios.items():
        assert scenario["light"]["requests"] > 0 and scenario["static"]["requests"] > 0, name
        assert scenario["load"]["refused"] == 0, name
        assert (scenario["load"]["requests"] > 0) == (name != "quiet"), name
