"""A record's fee folded into its movement for the finding page (``reconcile/evidence.py``)."""

from __future__ import annotations

import pytest

from recon_pipeline.reconcile.evidence import folded_records

pytestmark = pytest.mark.fast


def row(record_id: str, kind: str, amount: int) -> dict[str, object]:
    return {"provider_record_id": record_id, "kind": kind, "amount_minor": amount}


def test_fees_fold_into_their_movement_a_dispute_before_its_reversal_and_a_lone_fee_stays() -> None:
    folded = folded_records(
        [
            row("ch_1", "payment", 10_000),
            row("ch_1", "fee", -320),
            row("du_1", "dispute_reversal", 5_000),
            row("du_1", "dispute", -5_000),
            row("du_1", "fee", -1_500),
            row("re_1", "refund", -2_000),
            row("ch_0", "fee", -90),  # its payment settled on another night
        ]
    )
    by_key = {(r["provider_record_id"], r["kind"]): (r["fee_minor"], r["net_minor"]) for r in folded}
    assert by_key == {
        ("ch_1", "payment"): (-320, 9_680),
        ("du_1", "dispute"): (-1_500, -6_500),
        ("du_1", "dispute_reversal"): (None, None),
        ("re_1", "refund"): (None, None),
        ("ch_0", "fee"): (None, None),
    }


def test_a_key_seen_twice_is_one_row_the_last() -> None:
    [only] = folded_records([row("ch_1", "payment", 1), row("ch_1", "payment", 2)])
    assert only["amount_minor"] == 2
