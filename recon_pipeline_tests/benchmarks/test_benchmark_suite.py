"""The whole benchmark suite runs at CI sizes with one command and writes a complete report; its timings
are printed, never asserted: what is asserted is that every suite produced figures and its checks held."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.datacompy_diff import compare_at
from benchmarks.report import SECTION_TITLES, render
from benchmarks.run_all import QUICK, SUITES
from recon_pipeline_tests.support.postgres import admin_url

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.postgres
@pytest.mark.slow
def test_quick_suite_writes_every_section_with_sane_figures(postgres_url: str, tmp_path: Path) -> None:
    # postgres_url only proves the server is up (or fails/skips as the suite requires); every benchmark
    # creates and drops its own scratch databases on that server.
    output, figures_path = tmp_path / "results.md", tmp_path / "results.json"
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.run_all", "--quick", "--output", str(output)]
        + ["--json", str(figures_path), "--postgres-url", admin_url()],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    report = output.read_text()
    for heading in ["## Machine and versions", "## Targets", "## Checks"] + list(SECTION_TITLES.values()):
        assert f"{heading}\n" in report, heading
    assert "FAIL" not in report and "**Failed**" not in report
    results = json.loads(figures_path.read_text())
    assert sorted(results["suites"]) == sorted(SUITES)
    assert all("figures" in suite and suite["seconds"] > 0 for suite in results["suites"].values())
    assert int(results["machine"]["cores"]) >= 1 and results["versions"]["postgresql"][0].isdigit()
    figures = {name: suite["figures"] for name, suite in results["suites"].items()}

    cases = figures["diff"]["cases"]
    assert [case["n"] for case in cases] == list(QUICK.diff_n)
    for case in cases:
        assert case["counts_agree"] is True and case["diff_findings"] == case["n"] // 100
        assert case["diff_median_s"] > 0 and case["datacompy_median_s"] > 0 and case["ratio"] > 0

    written = figures["writer"]
    assert written["rows"] == QUICK.writer_rows and written["table_rows_after_each_run"] == [
        QUICK.writer_rows
    ]
    assert [(run["first_new"], run["replay_new"]) for run in written["runs"]] == [(QUICK.writer_rows, 0)]
    assert written["first_rows_per_second"] > 0 and written["replay_rows_per_second"] > 0

    pull = figures["pull"]
    assert pull["responses_429"] == 0 and pull["records"] == pull["records_expected"] > 0
    assert pull["control_unpaced"]["records"] + pull["control_unpaced"]["failed_pulls"] > 0
    assert 0 < pull["requests_per_second"] <= QUICK.pull_rate * 1.05  # paced: never over the limit

    night, backfill = figures["pipeline"]["night"], figures["pipeline"]["backfill"]
    assert abs(night["provider_records"] - QUICK.night_records) <= QUICK.night_records * 0.05
    assert night["findings_as_planted"] and night["rerun_adjustments_new"] == [0]
    assert backfill["partitions"] == QUICK.backfill_nights  # one run per night, every property in it
    assert backfill["property_nights"] == QUICK.backfill_properties * QUICK.backfill_nights
    assert backfill["findings_as_planted"] == backfill["property_nights"] and backfill["wall_s"] > 0

    assert figures["webhooks"]["every_event_stored_once"] and figures["webhooks"]["accepted_per_second"] > 0
    assert [w["workers"] for w in figures["processor"]["workers"]] == list(QUICK.processor_workers)
    assert all(w["every_event_processed"] for w in figures["processor"]["workers"])


def test_datacompy_over_its_time_limit_bounds_the_ratio() -> None:
    case = compare_at(2_000, repeat=2, limit_s=1e-6)
    assert case["datacompy_over_limit"] and case["datacompy_seconds"] == []
    assert case["counts_agree"] is None and len(case["diff_seconds"]) == 2
    assert case["ratio"] == round(1e-6 / case["diff_median_s"], 2)


def _results(diff_ratio: float, writer_rps: int, replay_new: int) -> dict[str, Any]:
    """Figures shaped as run_all makes them, for two suites at the target sizes."""
    case = {
        "n": 1_000_000,
        "ledger_rows": 1_030_000,
        "diff_median_s": 1.0,
        "datacompy_median_s": diff_ratio,
        "datacompy_limit_s": 300,
        "datacompy_over_limit": False,
        "ratio": diff_ratio,
        "diff_rows_per_second": 1_000_000,
        "diff_findings": 10_000,
        "diff_mismatches": {"amount_minor": 5, "currency": 5, "settled": 5},
        "datacompy_counts": {"amount_minor": 5, "currency": 5, "settled": 5},
        "counts_agree": True,
    }
    run = {"first_new": 100_000, "replay_new": replay_new}
    writer = {
        "rows": 100_000,
        "runs": [run],
        "first_median_s": 100_000 / writer_rps,
        "first_rows_per_second": writer_rps,
        "replay_median_s": 1.0,
        "replay_rows_per_second": 100_000,
        "replay_to_first": 0.2,
        "every_first_write_inserted_all": True,
        "every_replay_inserted_none": replay_new == 0,
    }
    return {
        "command": "python -m benchmarks.run_all --only diff writer",
        "started_at": "2026-12-01T00:00:00+00:00",
        "quick": False,
        "repeat": 1,
        "machine": {"cpu": "test", "cores": "2", "ram_gb": "8", "os": "Linux"},
        "load_average": {"start": 0.1, "end": 0.2},
        "versions": {"python": "3.11"},
        "suites": {
            "diff": {"figures": {"cases": [case]}, "seconds": 1.0},
            "writer": {"figures": writer, "seconds": 1.0},
            "pull": {"error": "RuntimeError: simulator down", "seconds": 0.5},
        },
    }


def test_report_judges_targets_at_their_sizes_and_checks_decide() -> None:
    markdown, checks_hold = render(_results(diff_ratio=2.5, writer_rps=25_000, replay_new=0))
    assert "| diff ≥ 3× faster than datacompy at N = 10^6 | 2.5× (1.0 s vs 2.5 s) | FAIL |" in markdown
    assert "25,000 rows/s at 100,000 rows | pass |" in markdown
    assert checks_hold  # a missed performance target is a measurement, not a broken check
    assert "**Failed** after 0.5 s: `RuntimeError: simulator down`" in markdown
    assert "Not run (`--only`)." in markdown and "Measured under load" not in markdown
    markdown, checks_hold = render(_results(diff_ratio=4.0, writer_rps=9_000, replay_new=3))
    assert (
        "4.0× (1.0 s vs 4.0 s) | pass |" in markdown and "9,000 rows/s at 100,000 rows | FAIL |" in markdown
    )
    assert (
        not checks_hold
        and "| replay of the same rows inserts 0 | new rows per replay: [3] | FAIL |" in markdown
    )
