"""The engines benchmark compares like with like: DuckDB's SQL finds exactly what ``diff_night`` finds.

duckdb is in the dev extras (and the ``bench`` extra), so CI runs these; they skip only where it is not
installed. The timings are the script's to print, never asserted here.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from benchmarks.datagen import DIFF_CATEGORIES, SyntheticNight, generate_night
from benchmarks.engines import compare_at, diff_findings, duckdb_findings

pytest.importorskip("duckdb")


def test_both_engines_find_the_same_on_a_generated_night() -> None:
    figures = compare_at(2_000, repeat=1)  # compare_at itself raises when the two disagree
    assert figures["same_findings"] is True
    assert figures["findings"] == 20
    assert set(figures["by_category"]) == set(DIFF_CATEGORIES)
    assert all(count > 0 for count in figures["by_category"].values())


def test_both_engines_find_the_same_on_late_entries_and_unposted_times() -> None:
    """The generated night books every late entry correctly: here some disagree with the record of another
    night they book (amount, currency, status), and duplicates have a null posted_at (ordered last)."""
    night = _perturbed(generate_night(2_000, seed=5))
    ours = diff_findings(night)
    assert {"amount_mismatch", "currency_mismatch", "status_mismatch"} <= {c for c, _ in ours}
    assert sum(key.endswith("_again") for _, key in ours) == 4  # an entry posted at no time comes second
    assert ours == duckdb_findings(night)


def _perturbed(night: SyntheticNight) -> SyntheticNight:
    ledger = night.ledger_records.copy()
    elsewhere = night.provider_elsewhere.copy()
    late = np.flatnonzero(ledger["provider_record_id"].isin(elsewhere["provider_record_id"]).to_numpy())
    assert len(late) >= 3
    amount, currency, status = (ledger.index[late[i]] for i in range(3))
    ledger.loc[amount, "amount_minor"] += 7
    ledger.loc[currency, "currency"] = "CHF" if ledger.loc[currency, "currency"] != "CHF" else "EUR"
    unsettled = elsewhere["provider_record_id"] == ledger.loc[status, "provider_record_id"]
    unsettled &= elsewhere["kind"] == ledger.loc[status, "kind"]
    elsewhere.loc[unsettled, "settled"] = False
    keyed = ledger["provider_record_id"].notna() & (ledger["kind"] != "adjustment")
    keyed = ledger.index[keyed & ledger["in_night"]]
    repeated = ledger.loc[keyed[:4]].assign(entry_id=lambda f: f["entry_id"] + "_again")
    repeated["posted_at"] = pd.Series(pd.NaT, index=repeated.index, dtype=ledger["posted_at"].dtype)
    ledger = pd.concat([ledger, repeated], ignore_index=True)
    return dataclasses.replace(night, ledger_records=ledger, provider_elsewhere=elsewhere)
