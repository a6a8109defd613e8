"""Refunds as PMSs post them: a negative ``payment`` entry is a refund to the matcher and to the diff.

Many PMSs reverse money on a payment line (Apaleo's refund, OPERA's negative payment) rather than in a
refund posting, so the provider's refund (or a dispute's withdrawal) and the ledger's negative payment
would never share a kind, and one movement would read as two findings. Before anything is compared, each
negative payment takes the kind of the provider record it names (by its id or a whole token of its
reference: a refund's or a dispute's), else the kind of the pull's withdrawals of its booking, currency
and amount when they are of one kind (a dispute's withdrawal posted on the booking), else ``refund``. One
keyed by the id of a payment the refund belongs to (the PMS names the charge it refunds) names no refund:
its id is moved into its reference, so that the matcher pairs it with that charge's refund as any
reference naming a charge is paired.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pandas as pd

from recon_pipeline.reconcile.matching.sides import optional_column, scopes
from recon_pipeline.reconcile.matching.tiers import reference_tokens

PAYMENT: Final = "payment"
REFUND: Final = "refund"
_WITHDRAWALS: Final = ("refund", "dispute")  # the provider's movements a negative payment may post


def negative_payments_as_refunds(provider_records: pd.DataFrame, ledger: pd.DataFrame) -> pd.DataFrame:
    """The ledger with every negative ``payment`` entry read as the withdrawal it posts (the module
    docstring); the very frame when it holds none."""
    kinds = ledger["kind"].to_numpy(dtype=object)
    amounts = ledger["amount_minor"].to_numpy(dtype=np.int64)  # validated entries: integers
    negative = np.flatnonzero((kinds == PAYMENT) & (amounts < 0))
    if not len(negative):
        return ledger
    record_kinds = provider_records["kind"].to_numpy(dtype=object)
    record_scopes = scopes(provider_records).tolist()
    withdrawal_of = {
        (scope, str(record_id)): str(kind)
        for scope, record_id, kind in zip(
            record_scopes, provider_records["provider_record_id"], record_kinds, strict=True
        )
        if kind in _WITHDRAWALS
    }
    paid = _payment_ids(provider_records)
    withdrawn = _withdrawals_by_booking(provider_records)
    ids = ledger["provider_record_id"].to_numpy(dtype=object, copy=True)
    references = optional_column(ledger, "reference")
    bookings = optional_column(ledger, "booking_id")
    currencies = ledger["currency"].to_numpy(dtype=object)
    entry_scopes = scopes(ledger)
    kinds = kinds.copy()
    for at in negative.tolist():
        scope = int(entry_scopes[at])
        record_id = ids[at] if isinstance(ids[at], str) else None
        named = [record_id] if record_id else []
        if isinstance(references[at], str):
            named += reference_tokens(references[at])
        by_booking = withdrawn.get((scope, bookings[at], currencies[at], int(amounts[at])), ())
        fits = by_booking[0] if len(by_booking) == 1 else REFUND
        kind = next((withdrawal_of[scope, name] for name in named if (scope, name) in withdrawal_of), fits)
        kinds[at] = kind
        if record_id and (scope, record_id) not in withdrawal_of and (scope, record_id) in paid:
            ids[at] = None  # it names the charge it refunds: a reference, not the refund's id
            references[at] = f"{record_id} {references[at]}" if references[at] else record_id
    return ledger.assign(
        kind=pd.Series(kinds, index=ledger.index, dtype=ledger["kind"].dtype),
        provider_record_id=pd.Series(ids, index=ledger.index, dtype=ledger["provider_record_id"].dtype),
        reference=pd.Series(references, index=ledger.index, dtype="object"),
    )


def _withdrawals_by_booking(
    provider_records: pd.DataFrame,
) -> dict[tuple[int, Any, Any, int], tuple[str, ...]]:
    """(scope, booking, currency, amount) → the kinds of the pull's withdrawals of it (refund, dispute)."""
    found: dict[tuple[int, Any, Any, int], set[str]] = {}
    kinds = provider_records["kind"].to_numpy(dtype=object)
    rows = np.flatnonzero(np.isin(kinds, _WITHDRAWALS))
    bookings = provider_records["booking_id"].to_numpy(dtype=object)[rows].tolist()
    currencies = provider_records["currency"].to_numpy(dtype=object)[rows].tolist()
    amounts = provider_records["amount_minor"].to_numpy(dtype=np.int64)[rows].tolist()
    withdrawn = kinds[rows].tolist()
    in_scope = scopes(provider_records)[rows].tolist()
    for scope, booking, currency, amount, kind in zip(
        in_scope, bookings, currencies, amounts, withdrawn, strict=True
    ):
        if isinstance(booking, str):
            found.setdefault((scope, booking.strip(), currency, amount), set()).add(str(kind))
    return {key: tuple(sorted(kinds)) for key, kinds in found.items()}


def _payment_ids(provider_records: pd.DataFrame) -> set[tuple[int, str]]:
    """Every (scope, id) a refund of the pull names as the payment it refunds: its charge and payment
    intent."""
    withdrawals = np.isin(provider_records["kind"].to_numpy(dtype=object), _WITHDRAWALS)
    in_scope = scopes(provider_records)[withdrawals].tolist()
    return {
        (scope, value)
        for name in ("charge_id", "payment_intent_id")
        if name in provider_records.columns
        for scope, value in zip(
            in_scope, provider_records[name].to_numpy(dtype=object)[withdrawals].tolist(), strict=True
        )
        if isinstance(value, str)
    }
