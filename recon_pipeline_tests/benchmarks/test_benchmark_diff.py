"""The diff benchmark script runs end to end at a small N and finds exactly what was injected."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.datagen import DIFF_CATEGORIES, generate_frames, generate_night
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "diff.py"


@pytest.mark.slow  # runs the benchmark script
def test_benchmark_script_reports_the_injected_discrepancies() -> None:
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--n", "2000", "--repeat", "2", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    figures = json.loads(completed.stdout)
    night = generate_night(2_000)
    assert figures["n"] == 2_000
    assert figures["discrepancies"] == figures["injected"] == sum(night.injected.values()) == 20
    assert figures["by_category"] == {category: count for category, count in night.injected.items() if count}
    assert figures["median_seconds"] > 0
    assert figures["rows_per_second"] > 0
    assert figures["peak_rss_mb"] > 0


@pytest.mark.slow  # runs the benchmark script
def test_benchmark_script_prints_text_by_default() -> None:
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--n", "500", "--repeat", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert "rows/s" in completed.stdout
    assert "peak RSS" in completed.stdout


def test_generated_frames_follow_the_contracts() -> None:
    provider_records, ledger_records = generate_frames(3_000, seed=7)
    assert provider_records.dtypes.astype(str).to_dict() == PROVIDER_RECORD_COLUMNS
    assert ledger_records.dtypes.astype(str).to_dict() == LEDGER_RECORD_COLUMNS
    assert set(provider_records["kind"]) == {"payment", "fee", "refund"}
    assert {"EUR", "JPY"} <= set(provider_records["currency"])
    assert set(ledger_records["kind"]) == {"payment", "fee", "refund", "adjustment"}
    assert (~ledger_records["in_night"]).any()
    assert ledger_records["provider_record_id"].isna().any()
    assert not provider_records.duplicated(["provider_record_id", "kind"]).any()
    refunds_per_charge = provider_records[provider_records["kind"] == "refund"]["charge_id"].value_counts()
    assert refunds_per_charge.max() > 1


def test_generation_is_seeded() -> None:
    first, second = generate_night(1_000, seed=3), generate_night(1_000, seed=3)
    pd.testing.assert_frame_equal(first.provider_records, second.provider_records)
    pd.testing.assert_frame_equal(first.ledger_records, second.ledger_records)
    assert set(first.injected) == set(DIFF_CATEGORIES)


@pytest.mark.slow  # runs the benchmark script
def test_benchmark_script_times_the_matcher_when_asked() -> None:
    """On a keyed night the matcher changes nothing: the same findings as the diff alone (or, before the
    matcher exists, a null figure saying it was not timed)."""
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--n", "2000", "--repeat", "1", "--json", "--matcher"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    figures = json.loads(completed.stdout)
    assert figures["matcher_same_findings"] is True
    assert figures["matcher_ratio"] > 0
