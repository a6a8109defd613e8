"""Stripe payouts: ``GET /v1/payouts`` by arrival date, and a payout's balance transactions.

Stripe serves ``GET /v1/balance_transactions?payout=po_...`` for automatic payouts only (a manual payout
answers 400: the balance it drew from is not itemised), so a manual payout is reported as untraceable
(None) without asking. The list includes the payout's own withdrawal (``type`` ``payout``, its amount the
payout's negated); it is left out, so that the transactions' net sums to the payout's amount.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.objects import (
    ProviderObject,
    amount_field,
    created_at_field,
    currency_field,
    field_value,
    optional_id_field,
    record_id,
)
from recon_pipeline.providers.payouts import PAYOUT_STATUSES, Payout, PayoutTransaction

# (path, params) -> every object of that Stripe list (the adapter's checked, bounded pager)
Lister = Callable[[str, dict[str, Any]], list[ProviderObject]]

# Stripe's reporting categories of money movements, in the ledger's kinds.
KIND_OF_CATEGORY = {
    "charge": "payment",
    "refund": "refund",
    "dispute": "dispute",
    "dispute_reversal": "dispute_reversal",
}
PAYOUT_TRANSACTION_TYPES = frozenset({"payout", "payout_cancel", "payout_failure"})


def payout_of(obj: ProviderObject, provider_account: str | None) -> Payout:
    """A Stripe payout object as a ``Payout`` (``arrival_date`` is midnight UTC of the arrival day)."""
    what = "payout"
    status: str = field_value(obj, "status", str, what)
    if status not in PAYOUT_STATUSES:
        raise ProviderDataError(f"payout {obj.get('id')!r}: field 'status' is {status!r}")
    descriptor = obj.get("statement_descriptor")
    return Payout(
        payout_id=record_id(obj, what),
        provider_account=provider_account,
        amount_minor=amount_field(obj, "amount", what),
        currency=currency_field(obj, what),
        status=status,
        failure_code=optional_id_field(obj, "failure_code", what),
        arrival_date=created_at_field(obj, what, name="arrival_date").date(),
        automatic=field_value(obj, "automatic", bool, what),
        statement_descriptor=descriptor if isinstance(descriptor, str) and descriptor else None,
        created_at=created_at_field(obj, what),
    )


def transaction_of(obj: ProviderObject, payout_id: str) -> PayoutTransaction:
    """A balance transaction (amounts signed as Stripe signs them; the fee is positive, taken from net)."""
    what = f"balance transaction of payout {payout_id!r}"
    amount = _signed_amount(obj, "amount", what)
    fee = amount_field(obj, "fee", what)
    net = _signed_amount(obj, "net", what)
    if net != amount - fee:
        raise ProviderDataError(f"{what} {obj.get('id')!r}: net {net} is not amount {amount} - fee {fee}")
    category = obj.get("reporting_category") or obj.get("type")
    if not isinstance(category, str):
        raise ProviderDataError(f"{what} {obj.get('id')!r}: no reporting_category nor type")
    source = obj.get("source")
    return PayoutTransaction(
        transaction_id=record_id(obj, what),
        payout_id=payout_id,
        source_id=source if isinstance(source, str) else optional_id_field(source or {}, "id", what),
        kind=KIND_OF_CATEGORY.get(category, category),
        amount_minor=amount,
        fee_minor=fee,
        net_minor=net,
        currency=currency_field(obj, what),
        created_at=created_at_field(obj, what),
    )


def _signed_amount(obj: ProviderObject, name: str, what: str) -> int:
    """A signed amount: the bound of ``amount_field`` applies to its magnitude."""
    value: int = field_value(obj, name, int, what)
    amount_field({"id": obj.get("id"), name: abs(value)}, name, what)
    return value


def payouts_arriving(
    list_all: Lister, provider_account: str | None, arrival_gte: datetime, arrival_lt: datetime
) -> list[Payout]:
    """Every payout of the scope whose ``arrival_date`` is in ``[arrival_gte, arrival_lt)``."""
    params = {
        "arrival_date[gte]": int(arrival_gte.timestamp()),
        "arrival_date[lt]": int(arrival_lt.timestamp()),
        "limit": 100,
    }
    return [payout_of(obj, provider_account) for obj in list_all("/v1/payouts", params)]


def payout_transactions(list_all: Lister, payout: Payout) -> list[PayoutTransaction] | None:
    """The transactions an automatic payout carried, its own withdrawal left out; None for a manual one."""
    if not payout.automatic:
        return None
    listed = list_all("/v1/balance_transactions", {"payout": payout.payout_id, "limit": 100})
    return [
        transaction_of(obj, payout.payout_id)
        for obj in listed
        if not (obj.get("type") in PAYOUT_TRANSACTION_TYPES and obj.get("source") == payout.payout_id)
    ]
