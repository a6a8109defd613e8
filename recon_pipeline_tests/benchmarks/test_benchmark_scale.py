"""The issue 13 benchmarks (``scale.py``, ``ui_partitions.py``, ``batch_profile.py``) still run at a tiny
size and their checks hold; their timings are printed, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from recon_pipeline_tests.support.benchmark_runs import REPO, benchmark_json


@pytest.mark.postgres
@pytest.mark.slow
def test_scale_benchmark_reconciles_a_tiny_fleet_through_the_daemon(postgres_url: str) -> None:
    # Three properties in three timezones, window by window as the nightly schedule asks: three night
    # windows, so three batch runs, two at a time, the very batches the schedule's ticks request.
    figures = benchmark_json(
        "benchmarks.scale",
        "--properties",
        "3",
        "--window-by-window",
        "--max-concurrent-runs",
        "2",
        "--timeout-s",
        "400",
        timeout_s=600,
    )
    print(f"scale benchmark, 3 properties: {figures['wall_s']} s for {figures['runs']} runs")
    assert figures["runs"] == 3 and figures["statuses"] == {"SUCCESS": 3}
    assert figures["schedule_batches"] == 3 and figures["schedule_requests_the_same_batches"] is True
    assert figures["property_nights"] == {"succeeded": 3}
    assert figures["findings_found"] == figures["findings_planted"] > 0
    assert figures["properties_differing"] == 0
    assert figures["provider_requests"] > 0 and figures["provider_rate_limited"] == 0
    assert figures["wall_s"] > 0 and figures["seed_s"] >= 0


@pytest.mark.postgres
@pytest.mark.slow
def test_scale_benchmark_on_connected_accounts_sends_only_what_stripe_documents(postgres_url: str) -> None:
    # One connected account per property against the strict simulator: nothing refused, all reconciled;
    # the night asked for whole, its three windows one batch run.
    figures = benchmark_json(
        "benchmarks.scale",
        "--properties",
        "3",
        "--connected-accounts",
        "--rps",
        "200",
        "--max-concurrent-runs",
        "2",
        "--timeout-s",
        "400",
        timeout_s=600,
    )
    print(
        f"scale benchmark, 3 connected accounts: {figures['wall_s']} s, "
        f"{figures['requests_per_property_night']} requests a property-night"
    )
    assert figures["connected_accounts"] is True and figures["statuses"] == {"SUCCESS": 1}
    assert figures["runs"] == 1 and figures["schedule_batches"] == 3
    assert figures["property_nights"] == {"succeeded": 3} and figures["provider_refused"] == 0
    assert figures["findings_found"] == figures["findings_planted"] > 0
    assert figures["properties_differing"] == 0
    assert figures["requests_per_property_night"] == round(figures["provider_requests"] / 3, 2)
    assert 0 < figures["peak_requests_per_s"] <= 200 and figures["provider_rate_limited"] == 0


@pytest.mark.postgres
@pytest.mark.slow
def test_ui_partitions_benchmark_reads_every_seeded_partition_in_both_designs(postgres_url: str) -> None:
    figures = benchmark_json(
        "benchmarks.ui_partitions",
        "--properties",
        "20",
        "--nights",
        "5",
        "--old-design",
        "--repeat",
        "1",
        timeout_s=400,
    )
    new, old = figures["new"], figures["old"]
    assert new["queries"]["stats"] == {
        "numFailed": 0,
        "numMaterialized": 5,
        "numMaterializing": 0,
        "numPartitions": 5,
    }
    assert old["queries"]["stats"] == {
        "numFailed": 0,
        "numMaterialized": 100,
        "numMaterializing": 0,
        "numPartitions": 100,
    }
    assert old["seed"]["events"] == 100
    assert all(seed["events"] == 5 * new["batches_per_night"] for seed in new["seed"].values())
    assert new["queries"]["warm_median_s"] > 0 and old["queries"]["warm_median_s"] > 0


@pytest.mark.postgres
@pytest.mark.slow
def test_batch_profile_counts_each_process_cpu_and_finds_what_was_planted() -> None:
    # Its own throwaway cluster (so PostgreSQL's CPU is counted), the simulator in a process of its own;
    # twelve batches of one, so that the cluster's backends do more than the CPU clock's 10 ms tick.
    profile = [sys.executable, "-m", "benchmarks.batch_profile", "--properties", "12", "--batch-size", "1"]
    completed = subprocess.run(
        [*profile, "--json", "--profile"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    figures = json.loads(completed.stdout.strip().splitlines()[-1])
    assert figures["property_nights"] == {"succeeded": 12} and figures["property_nights_succeeded"] == 12
    assert figures["findings_found"] == figures["findings_planted"] > 0
    assert all(seconds > 0 for seconds in figures["cpu_s"].values()), figures["cpu_s"]
    assert figures["provider_requests"] == sum(figures["provider_requests_by_endpoint"].values()) > 0
    # a pool thread's loop, which no other thread runs: the top 30 is over every thread
    assert "concurrent/futures/thread.py" in completed.stderr and "(_worker)" in completed.stderr


@pytest.mark.postgres
@pytest.mark.slow
def test_dagster_cost_benchmark_counts_a_backfilled_nights_runs_and_events(postgres_url: str) -> None:
    # One night of three properties in three timezones, batches of one: the night's run and its three
    # batch runs.
    figures = benchmark_json(
        "benchmarks.dagster_cost", "--nights", "1", "--bookings", "5", "--batch-size", "1", timeout_s=600
    )
    print(f"dagster cost benchmark, 1 night: {figures}")
    assert figures["runs_per_night"] == 4.0 and figures["batch_runs_per_night"] == 3.0
    assert figures["events_per_batch_run"] > 0 and figures["events_per_property_night"] > 0
