"""The desk load benchmark (``benchmarks/desk_load.py``) still seeds, serves `recon review serve` and runs
every scenario at a tiny size, twice over (``--turns 2``): the analysts' light pages, the stylesheet and each
scenario's heavy load answered, with no error, and each scenario's p95 set against its turn's quiet one;
its timings are printed, never asserted."""

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
        "--turns",
        "2",
        timeout_s=300,
    )
    print(desk_load.markdown(figures))
    assert figures["errors"] == 0
    runs = [(scenario["turn"], scenario["scenario"]) for scenario in figures["scenarios"]]
    assert runs == [(turn, name) for turn in (1, 2) for name in desk_load.SCENARIOS]
    assert set(figures["ratios"]) == set(desk_load.SCENARIOS) - {"quiet"}
    for ratio in figures["ratios"].values():
        per_turn = ratio["per_turn"]
        assert len(per_turn) == 2 and min(per_turn) <= ratio["median"] <= max(per_turn), ratio
    scenarios = {scenario["scenario"]: scenario for scenario in figures["scenarios"] if scenario["turn"] == 2}
    for name, scenario in scenarios.items():
        assert scenario["light"]["requests"] > 0 and scenario["static"]["requests"] > 0, name
        assert scenario["load"]["refused"] == 0, name
        assert (scenario["load"]["requests"] > 0) == (name != "quiet"), name
