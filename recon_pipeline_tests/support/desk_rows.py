"""Rows the review desk's pages list, written straight into the tables: adjustments and payouts."""

from __future__ import annotations

from typing import Any

from recon_pipeline_tests.support.desk_fixtures import NIGHT, NOW


def adjustment(adjustment_id: str, property_id: str, status: str, amount: int) -> dict[str, Any]:
    return {
        "adjustment_id": adjustment_id,
        "idempotency_key": f"key-{adjustment_id}",
        "property_id": property_id,
        "night": NIGHT,
        "kind": "payment",
        "provider_record_id": f"ch-{adjustment_id}",
        "amount_minor": amount,
        "currency": "EUR",
        "reason": "missing in ledger",
        "status": status,
        "created_at": NOW,
    }


def payout_row(payout_id: str, holder: str, status: str = "paid", **facts: Any) -> dict[str, Any]:
    return {
        "payout_id": payout_id,
        "provider": "stripe",
        "amount_minor": 12_345,
        "currency": "EUR",
        "status": status,
        "arrival_night": NIGHT,
        "automatic": True,
        "created_at": NOW,
        "traced": True,
        "transactions": 3,
        "sum_difference_minor": 0,
        "holder_property_id": holder,
        "last_seen_at": NOW,
        **facts,
    }
