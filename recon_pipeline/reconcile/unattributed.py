"""Money on a shared account that no property can be given: reported once, proposing nothing.

Attribution (``providers/attribution.py``) hands these records only to the first property on the account,
so each one is a finding in exactly one partition. Only money that moved is reported (a settled payment or
refund; a fee goes with its payment), and the category has no adjustment policy: no property's ledger is
the place to book someone else's payment, a person decides whose it is.
"""

from __future__ import annotations

import pandas as pd

from recon_pipeline.categories import UNATTRIBUTED_PAYMENT, empty_findings, finding_frame
from recon_pipeline.money import format_minor


def unattributed_findings(records: pd.DataFrame) -> pd.DataFrame:
    """One ``unattributed_payment`` finding per settled payment or refund of ``records``, by record_key."""
    if records.empty:  # every property but the first on a shared account, and most of those too
        return empty_findings()
    moved = records[records["settled"] & records["kind"].isin(("payment", "refund"))]
    moved = moved.sort_values(["provider_record_id", "kind"], kind="stable")
    amounts = moved["amount_minor"].astype("int64").tolist()
    return finding_frame(
        {
            "category": [UNATTRIBUTED_PAYMENT] * len(moved),
            "record_key": [
                f"{rid}:{kind}" for rid, kind in zip(moved["provider_record_id"], moved["kind"], strict=True)
            ],
            "kind": moved["kind"].tolist(),
            "provider_record_id": moved["provider_record_id"].tolist(),
            "booking_id": [None if pd.isna(b) else b for b in moved["booking_id"]],
            "provider_amount_minor": amounts,
            "difference_minor": amounts,
            "currency": moved["currency"].tolist(),
            "detail": [
                f"provider {kind} {rid} of {format_minor(amount, currency)} names no property "
                "and no payment order attributes it"
                for kind, rid, amount, currency in zip(
                    moved["kind"], moved["provider_record_id"], amounts, moved["currency"], strict=True
                )
            ],
        }
    )
