"""Payouts as the rest of the code sees them, whatever the provider: what left the provider's balance for
the bank, and the balance transactions (money movements) it carried.

A payout is traced to property-nights through its transactions (``recon_pipeline/payouts/trace.py``);
one a provider cannot break down (a Stripe manual payout) is untraceable, never an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Final

PAYOUT_STATUSES: Final = ("paid", "failed", "pending", "in_transit", "canceled")


@dataclass(frozen=True)
class Payout:
    """One payout of an account (``provider_account`` None: the platform's own balance)."""

    payout_id: str
    provider_account: str | None
    amount_minor: int  # what the bank should receive, in minor units
    currency: str  # ISO 4217 upper case
    status: str  # one of PAYOUT_STATUSES
    failure_code: str | None  # e.g. account_closed, no_account (failed payouts only)
    arrival_date: date  # the day the provider expects the money at the bank
    automatic: bool  # manual payouts cannot be broken down into transactions
    statement_descriptor: str | None  # what the bank statement shows: the reference to match a credit by
    created_at: datetime


@dataclass(frozen=True)
class PayoutTransaction:
    """One balance transaction a payout carried: ``source_id`` is the money movement (``ch_``, ``re_``,
    ``du_``...), ``kind`` its kind in the ledger's words (payment, refund, dispute...; another reporting
    category is kept as the provider names it). Amounts signed, in the payout's currency."""

    transaction_id: str
    payout_id: str
    source_id: str | None
    kind: str
    amount_minor: int
    fee_minor: int
    net_minor: int
    currency: str
    created_at: datetime
