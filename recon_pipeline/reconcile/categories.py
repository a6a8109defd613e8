"""Discrepancy categories of the data contract, and the frame a diff produces."""

from __future__ import annotations

from typing import Final

MISSING_IN_LEDGER: Final = "missing_in_ledger"
MISSING_AT_PROVIDER: Final = "missing_at_provider"
AMOUNT_MISMATCH: Final = "amount_mismatch"
CURRENCY_MISMATCH: Final = "currency_mismatch"
DUPLICATE_IN_LEDGER: Final = "duplicate_in_ledger"
STATUS_MISMATCH: Final = "status_mismatch"
ORPHANED_CAPTURED_PAYMENT: Final = "orphaned_captured_payment"
INVALID_LEDGER_ENTRY: Final = "invalid_ledger_entry"  # input the contract forbids; proposes nothing
# a payment on an account several properties share that neither its metadata nor payment_orders attribute
UNATTRIBUTED_PAYMENT: Final = "unattributed_payment"
# Money movements (docs/design.md, "Money movements"): a settlement-currency amount off the balance
# transaction beyond the property's tolerance; an uncaptured hold of a confirmed booking lapsing before the
# next night ends (provider_record_id = the PaymentIntent); a payout that failed, or was paid and never
# reached the bank.
FX_DIFFERENCE: Final = "fx_difference"
AUTHORIZATION_EXPIRING: Final = "authorization_expiring"
PAYOUT_FAILED: Final = "payout_failed"
PAYOUT_NOT_DEPOSITED: Final = "payout_not_deposited"

ALL_CATEGORIES: Final = (
    MISSING_IN_LEDGER,
    MISSING_AT_PROVIDER,
    AMOUNT_MISMATCH,
    CURRENCY_MISMATCH,
    DUPLICATE_IN_LEDGER,
    STATUS_MISMATCH,
    ORPHANED_CAPTURED_PAYMENT,
    INVALID_LEDGER_ENTRY,
    UNATTRIBUTED_PAYMENT,
    FX_DIFFERENCE,
    AUTHORIZATION_EXPIRING,
    PAYOUT_FAILED,
    PAYOUT_NOT_DEPOSITED,
)

# Findings of the payouts asset (recon_pipeline/payouts), written by their own writer: the night's
# reconciliation neither makes nor clears them, and the payouts asset touches no other category.
PAYOUT_CATEGORIES: Final = (PAYOUT_FAILED, PAYOUT_NOT_DEPOSITED)
RECONCILIATION_CATEGORIES: Final = tuple(c for c in ALL_CATEGORIES if c not in PAYOUT_CATEGORIES)

# Columns of a discrepancy frame (one row per finding), before property/night/run are stamped on it.
DISCREPANCY_COLUMNS: Final = (
    "category",
    "record_key",  # stable per finding: "<provider_record_id>:<kind>", or "entry:<entry_id>"
    "kind",  # payment | refund | fee | dispute | dispute_reversal (null: an invalid entry's unknown kind)
    "provider_record_id",  # nullable
    "ledger_entry_id",  # nullable
    "booking_id",  # nullable
    "provider_amount_minor",  # nullable Int64
    "ledger_amount_minor",  # nullable Int64
    "difference_minor",  # provider - ledger (missing side counts as 0)
    "currency",  # the provider's, else the ledger's
    "ledger_currency",  # nullable: the ledger entry's, shown beside its amount (differs on currency_mismatch)
    "detail",  # one human sentence: why this is a finding
)
