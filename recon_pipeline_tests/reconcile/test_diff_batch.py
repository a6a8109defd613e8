"""The diff over many nights at once (``diff_nights``) is each night's diff alone, row for row, and so are
the ids each night looks up (``unmatched_ids_of_nights``): the same ids in several nights never pair
across them, and each night states its findings with its own property's tolerance and currency, and
counts its own totals."""

from __future__ import annotations

from typing import Any

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from recon_pipeline.reconcile.diff import (
    DiffResult,
    NightToDiff,
    diff_night,
    diff_nights,
    unmatched_ids_of_nights,
    unmatched_ledger_record_ids,
)
from recon_pipeline_tests.support.fuzzing import fuzz_settings
from recon_pipeline_tests.support.night_frames import entry, ledger, providers, record

IDS = [f"ch_{n}" for n in range(6)]  # few ids: the nights of a batch share most of them


def _converted(row: dict[str, Any], settled: int) -> dict[str, Any]:
    return {**row, "settlement_amount_minor": settled, "settlement_currency": "EUR"}


@st.composite
def nights(draw: st.DrawFn) -> NightToDiff:
    """A night with records, entries (in night, adjacent, twice, unkeyed), records found elsewhere,
    conversions, a tolerance and a property currency: every branch of the diff, on ids other nights use."""
    records = []
    for record_id in draw(st.lists(st.sampled_from(IDS), unique=True, max_size=5)):
        row = record(
            record_id,
            kind=draw(st.sampled_from(["payment", "refund"])),
            amount=draw(st.sampled_from([1_000, 1_050, 2_000])),
            currency=draw(st.sampled_from(["EUR", "USD"])),
            status=draw(st.sampled_from(["succeeded", "pending"])),
        )
        settled = draw(st.sampled_from([920, 1_000]))
        records.append(_converted(row, settled) if row["currency"] == "USD" else row)
    entries = [
        entry(
            f"le_{n}",
            draw(st.sampled_from([*IDS, None])),
            kind=draw(st.sampled_from(["payment", "refund"])),
            amount=draw(st.sampled_from([1_000, 920, 925, 2_000])),
            currency=draw(st.sampled_from(["EUR", "USD", "GBP"])),
            in_night=draw(st.booleans()),
            minute=n,
        )
        for n in range(draw(st.integers(0, 6)))
    ]
    taken = {row["provider_record_id"] for row in records}
    elsewhere = [
        record(record_id, amount=draw(st.sampled_from([1_000, 2_000])), minute=-600)
        for record_id in draw(st.lists(st.sampled_from(IDS), unique=True, max_size=3))
        if record_id not in taken
    ]
    return NightToDiff(
        providers(*records),
        ledger(*entries),
        providers(*elsewhere),
        draw(st.sampled_from([0, 100, 10_000])),
        draw(st.sampled_from(["EUR", "USD", None])),
    )


def _same(together: DiffResult, alone: DiffResult) -> None:
    pd.testing.assert_frame_equal(together.findings, alone.findings)
    assert together.matched_count == alone.matched_count
    assert together.timing_difference_count == alone.timing_difference_count
    assert together.matched_amount_by_currency == alone.matched_amount_by_currency
    assert together.provider_total_by_currency == alone.provider_total_by_currency
    assert together.ledger_total_by_currency == alone.ledger_total_by_currency


@fuzz_settings(max_examples=150)
@given(st.lists(nights(), min_size=1, max_size=6))
def test_a_batch_diffed_at_once_is_each_night_diffed_alone(batch: list[NightToDiff]) -> None:
    together = diff_nights(batch)
    assert len(together) == len(batch)
    for night, result in zip(batch, together, strict=True):
        alone = diff_night(
            night.provider_records,
            night.ledger_records,
            night.provider_elsewhere,
            night.fx_tolerance_bps,
            night.property_currency,
        )
        _same(result, alone)
    assert unmatched_ids_of_nights(batch) == [
        unmatched_ledger_record_ids(night.provider_records, night.ledger_records) for night in batch
    ]


def test_one_id_in_three_nights_pairs_within_each_night_only() -> None:
    """ch_1 is a record of every night; only the second night's ledger books it (at another amount), so
    the first and third report it missing in the ledger, the second an amount mismatch, nothing across."""
    night = NightToDiff(providers(record("ch_1")), ledger())
    booked = NightToDiff(providers(record("ch_1")), ledger(entry("le_1", "ch_1", amount=9_000)))
    results = diff_nights([night, booked, night])
    assert [r.findings["category"].tolist() for r in results] == [
        ["missing_in_ledger"],
        ["amount_mismatch"],
        ["missing_in_ledger"],
    ]
    assert [r.provider_total_by_currency for r in results] == [{"EUR": 10_000}] * 3
    assert [r.ledger_total_by_currency for r in results] == [{}, {"EUR": 9_000}, {}]


def test_each_night_states_its_findings_with_its_own_propertys_tolerance_and_currency() -> None:
    """Two nights with the same converted charge (100.00 USD settled as 92.00 EUR): the EUR property
    booked 92.05 EUR (5.4 bp off) and states a missing refund at its EUR figure; the USD property, tolerance
    1 bp, names its own tolerance and states the refund in USD."""
    charge = _converted(record("ch_1", amount=10_000, currency="USD"), 9_200)
    refund = _converted(record("re_1", kind="refund", amount=-1_000, currency="USD"), -920)
    booked = ledger(entry("le_1", "ch_1", amount=9_205, currency="EUR"))
    eur = NightToDiff(providers(charge, refund), booked, None, 0, "EUR")
    usd = NightToDiff(providers(charge, refund), booked, None, 1, "USD")
    for night, result in zip([eur, usd], diff_nights([eur, usd]), strict=True):
        _same(result, diff_night(night.provider_records, night.ledger_records, None, night.fx_tolerance_bps,
                                 night.property_currency))  # fmt: skip
    first, second = diff_nights([eur, usd])
    assert "tolerance of 0 bp" in first.findings.set_index("category").loc["fx_difference", "detail"]
    assert "tolerance of 1 bp" in second.findings.set_index("category").loc["fx_difference", "detail"]
    missing = [r.findings.set_index("category").loc["missing_in_ledger"] for r in (first, second)]
    assert [(m["provider_amount_minor"], m["currency"]) for m in missing] == [(-920, "EUR"), (-1_000, "USD")]
