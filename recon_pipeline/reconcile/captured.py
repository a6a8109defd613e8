"""Captured payments as the provider reports them, in the shape orphan detection reads."""

from __future__ import annotations

import pandas as pd

CAPTURED_PAYMENT_COLUMNS = ["payment_id", "booking_id", "amount_minor", "currency", "captured_at", "source"]


def captured_payments_from_provider(provider_records: pd.DataFrame) -> pd.DataFrame:
    """Settled payments of the pull, keyed by PaymentIntent id when there is one (as payment_orders are)."""
    payments = provider_records[(provider_records["kind"] == "payment") & provider_records["settled"]]
    frame = pd.DataFrame(
        {
            "payment_id": payments["payment_intent_id"].fillna(payments["provider_record_id"]),
            "booking_id": payments["booking_id"],
            "amount_minor": payments["amount_minor"].astype("int64"),
            "currency": payments["currency"],
            "captured_at": payments["created_at"],
            "source": "provider",
        },
        columns=CAPTURED_PAYMENT_COLUMNS,
    )
    return frame.reset_index(drop=True)
