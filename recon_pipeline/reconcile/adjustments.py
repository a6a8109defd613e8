"""Which adjustment a finding calls for: pure, so the policy can be read and tested in one place.

An adjustment is a *proposed* correction of the PMS ledger. Only findings whose correction is certain
propose one; currency and status mismatches and orphaned payments need a person and propose none. An FX
difference is certain too: the balance transaction says what the account received in its currency.
The adjustment kind names the action and the record kind (``post_missing_fee``), so a charge whose
payment and fee are both missing gets two adjustments with two distinct business keys.
Each takes the finding's amount and currency: a conversion missing in the ledger that settled in the
property's currency is stated by the diff at its settlement figure (what the account received, in the
currency the PMS books), so ``post_missing_<kind>`` posts that; otherwise the presentment figure.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pandas as pd

from recon_pipeline import categories as c
from recon_pipeline.frames import records
from recon_pipeline.keys import adjustment_id, adjustment_idempotency_key
from recon_pipeline.reconcile.lifecycle import PROPOSED

# category → (action, which side's id names the record, amount column and its sign)
ADJUSTMENT_POLICY: dict[str, tuple[str, str, str, int]] = {
    c.MISSING_IN_LEDGER: ("post_missing", "provider_record_id", "provider_amount_minor", 1),
    c.MISSING_AT_PROVIDER: ("reverse_unmatched", "ledger_entry_id", "ledger_amount_minor", -1),
    c.AMOUNT_MISMATCH: ("correct_amount", "provider_record_id", "difference_minor", 1),
    # in the settlement currency (the finding's): an operation of its own, never summed with an amount
    # correction in the presentment currency of the same movement
    c.FX_DIFFERENCE: ("correct_fx", "provider_record_id", "difference_minor", 1),
    c.DUPLICATE_IN_LEDGER: ("reverse_duplicate", "ledger_entry_id", "ledger_amount_minor", -1),
    # a payout's fees, where the PMS books them per payout (payouts/fees.py): the same two corrections of
    # a ``fee`` entry, under the payout id (the payouts asset proposes them, its own categories' writer)
    c.PAYOUT_FEE_MISSING: ("post_missing", "provider_record_id", "provider_amount_minor", 1),
    c.PAYOUT_FEE_MISMATCH: ("correct_amount", "provider_record_id", "difference_minor", 1),
}


def plan_adjustments(
    property_id: str, night: str, findings: pd.DataFrame, run_id: str | None, now: datetime
) -> list[dict[str, Any]]:
    """What the findings call for now: one first-revision row per finding that calls for a correction,
    linked to it by (category, record_key); ``reconcile/lifecycle.py`` turns these into what to write."""
    return list(_planned(property_id, night, findings, run_id, now))


def _planned(
    property_id: str, night: str, findings: pd.DataFrame, run_id: str | None, now: datetime
) -> Iterator[dict[str, Any]]:
    for finding in records(findings):
        policy = ADJUSTMENT_POLICY.get(finding["category"])
        if policy is None:
            continue
        action, id_column, amount_column, sign = policy
        kind = f"{action}_{finding['kind']}"
        key = adjustment_idempotency_key(property_id, night, kind, str(finding[id_column]))
        yield {
            "adjustment_id": adjustment_id(key),
            "idempotency_key": key,
            "property_id": property_id,
            "night": night,
            "kind": kind,
            "provider_record_id": _or_none(finding["provider_record_id"]),
            "ledger_entry_id": _or_none(finding["ledger_entry_id"]),
            "amount_minor": sign * int(finding[amount_column]),
            "currency": finding["currency"],
            "reason": f"{finding['category']}: {finding['detail']}",
            "status": PROPOSED,
            "created_at": now,
            "run_id": run_id,
            "category": finding["category"],
            "record_key": finding["record_key"],
            "revision": 1,
        }


def _or_none(value: Any) -> Any:
    return None if value is None or pd.isna(value) else value
