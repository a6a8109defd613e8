"""Posted adjustments folded into the night's ledger (pure): for each action of the adjustment policy, the
finding's own proposal, posted as the ``sql`` adapter books it (an ``adjustment`` entry days later), clears
the finding when the night is diffed again, and leaves every other entry as it was."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

from recon_pipeline.postings.sql_adapter import ADJUSTMENT_KIND, entry_id_for
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.reconcile.posted import PostedAdjustment, fold_posted_adjustments
from recon_pipeline_tests.support.night_frames import NIGHT, entry, ledger, providers, record

POSTED_AT = NIGHT + pd.Timedelta(days=4)  # the PMS posts the correction days after the night


def posted_for(provider: pd.DataFrame, entries: pd.DataFrame, category: str) -> list[PostedAdjustment]:
    """The night's proposals for ``category``'s findings, as posted: each with its ``adjustment`` entry."""
    findings = diff_night(provider, entries).findings
    findings = findings[findings["category"] == category]
    assert len(findings) == 1, findings
    planned = plan_adjustments("prop_1", "2025-03-15", findings, None, datetime(2025, 3, 20, tzinfo=UTC))
    return [
        PostedAdjustment.of(
            row,
            {
                "entry_id": entry_id_for(row["idempotency_key"]),
                "property_id": "prop_1",
                "booking_id": "bk_1",
                "provider_record_id": row["provider_record_id"],
                "kind": ADJUSTMENT_KIND,
                "amount_minor": row["amount_minor"],
                "currency": row["currency"].lower(),  # the PMS may store it in lower case
                "posted_at": POSTED_AT.to_pydatetime(),
            },
        )
        for row in planned
    ]


def adjustment_entries(posted: list[PostedAdjustment]) -> list[dict[str, object]]:
    """The adjustment entries as the night's ledger frame holds them when posted within its margin."""
    return [{**p.entry, "currency": "EUR", "in_night": False} for p in posted]


def test_nothing_posted_is_the_frame_itself() -> None:
    entries = ledger(entry("le_1", "ch_1"))
    assert fold_posted_adjustments(entries, []) is entries


def test_a_posted_missing_payment_stands_as_the_payment() -> None:
    provider = providers(record("ch_1"), record("ch_2", amount=7_000))
    entries = ledger(entry("le_1", "ch_1"))
    posted = posted_for(provider, entries, "missing_in_ledger")
    assert posted[0].kind == "post_missing_payment"

    folded = fold_posted_adjustments(ledger(entry("le_1", "ch_1"), *adjustment_entries(posted)), posted)
    result = diff_night(provider, folded)
    assert result.findings.empty
    assert result.matched_count == 2 and result.ledger_total_by_currency == {"EUR": 17_000}
    standing = folded.loc[folded["entry_id"] == posted[0].entry["entry_id"]].iloc[0]
    assert (standing["kind"], standing["provider_record_id"], standing["in_night"]) == (
        "payment",
        "ch_2",
        True,
    )
    assert (standing["currency"], standing["amount_minor"]) == ("EUR", 7_000)
    assert folded.dtypes.to_dict() == entries.dtypes.to_dict()


@pytest.mark.parametrize("kind", ["payment", "refund"])
def test_a_posted_amount_correction_is_added_to_the_entry_it_corrects(kind: str) -> None:
    amount = 10_000 if kind == "payment" else -4_000
    provider = providers(record("ch_1", kind=kind, amount=amount), record("ch_2"))
    entries = ledger(entry("le_1", "ch_1", kind=kind, amount=amount + 250), entry("le_2", "ch_2"))
    posted = posted_for(provider, entries, "amount_mismatch")
    assert (posted[0].kind, posted[0].amount_minor) == (f"correct_amount_{kind}", -250)

    folded = fold_posted_adjustments(entries, posted)
    result = diff_night(provider, folded)
    assert result.findings.empty and result.matched_count == 2
    assert folded.set_index("entry_id")["amount_minor"].to_dict() == {"le_1": amount, "le_2": 10_000}
    assert entries.set_index("entry_id")["amount_minor"].to_dict()["le_1"] == amount + 250  # not modified


def test_a_posted_fx_correction_is_added_in_the_settlement_currency() -> None:
    converted = {
        **record("ch_1", amount=10_000, currency="USD"),
        "settlement_amount_minor": 9_200,
        "settlement_currency": "EUR",
    }
    provider = providers(record("ch_0"), converted)
    entries = ledger(entry("le_0", "ch_0"), entry("le_1", "ch_1", amount=9_000, currency="EUR"))
    posted = posted_for(provider, entries, "fx_difference")
    assert (posted[0].kind, posted[0].amount_minor, posted[0].currency) == ("correct_fx_payment", 200, "EUR")

    result = diff_night(provider, fold_posted_adjustments(entries, posted))
    assert result.findings.empty and result.matched_count == 2


@pytest.mark.parametrize(
    ("category", "action"),
    [("duplicate_in_ledger", "reverse_duplicate"), ("missing_at_provider", "reverse_unmatched")],
)
def test_a_posted_reversal_and_the_entry_it_reverses_cancel(category: str, action: str) -> None:
    provider = providers(record("ch_1"))
    extra = entry("le_2", "ch_1", minute=90) if category == "duplicate_in_ledger" else entry("le_2", "ch_9")
    entries = ledger(entry("le_1", "ch_1"), extra)
    posted = posted_for(provider, entries, category)
    assert (posted[0].kind, posted[0].ledger_entry_id, posted[0].amount_minor) == (
        f"{action}_payment",
        "le_2",
        -10_000,
    )

    folded = fold_posted_adjustments(
        ledger(entry("le_1", "ch_1"), extra, *adjustment_entries(posted)), posted
    )
    assert folded["entry_id"].tolist() == ["le_1"]
    result = diff_night(provider, folded)
    assert result.findings.empty and result.matched_count == 1


def test_an_adjustment_kind_no_policy_makes_is_named() -> None:
    posted = PostedAdjustment("refund_everything", "ch_1", None, 1, "EUR", {"entry_id": "recon_adj_x"})
    with pytest.raises(ValueError, match="adjustment kind 'refund_everything' names no action"):
        fold_posted_adjustments(ledger(entry("le_1", "ch_1")), [posted])
