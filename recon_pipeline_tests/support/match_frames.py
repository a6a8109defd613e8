"""A night's two sides as a PMS keeps them, for the matcher: records and entries with cards, approval codes
and references (the optional columns of the frame contracts), built on night_frames' rows."""

from __future__ import annotations

from typing import Any

import pandas as pd

from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS
from recon_pipeline_tests.support.night_frames import entry, record

CARD_COLUMNS = ("card_brand", "card_last4", "approval_code")


def charge(
    record_id: str,
    kind: str = "payment",
    amount: int = 10_000,
    booking: str | None = "bk_1",
    *,
    card: str | None = None,
    approval: str | None = None,
    minute: int = 60,
    currency: str = "EUR",
    status: str = "succeeded",
    charge_id: str | None = None,
    intent: str | None = None,
    settled_as: tuple[int, str] | None = None,
) -> dict[str, Any]:
    """A provider record with its card (``"visa 4242"``: brand and last four) and approval code."""
    brand, last4 = card.split() if card else (None, None)
    row = record(record_id, kind, amount, currency, status, booking, charge_id, minute)
    return row | {
        "payment_intent_id": intent,
        "settlement_amount_minor": settled_as[0] if settled_as else None,
        "settlement_currency": settled_as[1] if settled_as else None,
        "card_brand": brand,
        "card_last4": last4,
        "approval_code": approval,
    }


def posting(
    entry_id: str,
    kind: str = "payment",
    amount: int = 10_000,
    booking: str | None = "bk_1",
    *,
    record_id: str | None = None,
    card: str | None = None,
    approval: str | None = None,
    reference: str | None = None,
    minute: int = 65,
    in_night: bool = True,
    currency: str = "EUR",
) -> dict[str, Any]:
    """A ledger entry as a PMS posts it: by default without the provider's id; its card as the PMS wrote
    it (``"VISA **** 4242"``: the brand, then the rest)."""
    brand, last4 = card.split(maxsplit=1) if card else (None, None)
    row = entry(entry_id, record_id, kind, amount, currency, in_night, minute, booking)
    return row | {"card_brand": brand, "card_last4": last4, "approval_code": approval, "reference": reference}


def _frame(
    rows: tuple[dict[str, Any], ...], contract: dict[str, str], extra: tuple[str, ...]
) -> pd.DataFrame:
    columns = list(contract) + [name for name in extra if name not in contract]
    frame = pd.DataFrame(list(rows), columns=columns).astype(contract)
    return frame.astype({name: "object" for name in extra if name not in contract})


def pull(*rows: dict[str, Any]) -> pd.DataFrame:
    """Provider records (with the optional card columns, even when no row has them)."""
    return _frame(rows, PROVIDER_RECORD_COLUMNS, CARD_COLUMNS)


def folio(*rows: dict[str, Any]) -> pd.DataFrame:
    """Ledger entries (with the card and reference columns, even when no row has them)."""
    return _frame(rows, LEDGER_RECORD_COLUMNS, (*CARD_COLUMNS, "reference"))
