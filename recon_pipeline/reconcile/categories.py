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
)

# Columns of a discrepancy frame (one row per finding), before property/night/run are stamped on it.
DISCREPANCY_COLUMNS: Final = (
    "category",
    "record_key",  # stable per finding: "<provider_record_id>:<kind>", or "entry:<entry_id>"
    "kind",  # payment | refund | fee (null: an invalid ledger entry's unknown kind)
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
