"""Finding categories and record kinds of the data contract, and the frame a diff produces.

Vocabulary on the ground floor: the ledger's validation, the reconciliation and every reader of findings
name the same categories and kinds and build the same frame, importing nothing above the package root.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import pandas as pd

from recon_pipeline.frames import pieces, typed_frame

KINDS: Final = ("payment", "refund", "fee", "dispute", "dispute_reversal", "adjustment")


def kind_codes(kinds: np.ndarray) -> np.ndarray:
    """Index into KINDS of every row (uint8, as the key grouping takes it); an unknown or null kind is a
    contract violation, refused in one line naming it."""
    codes, uniques = pd.factorize(kinds)
    unknown = sorted({str(kind) for kind in uniques if kind not in KINDS})
    if unknown or (codes < 0).any():
        raise ValueError(f"unknown record kinds {unknown or ['<null>']}; expected one of {KINDS}")
    return np.array([KINDS.index(kind) for kind in uniques], dtype=np.uint8)[codes]


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
# Matching without the provider's id (docs/matching.md): several equally good candidates, of which the
# matcher paired what is certain and held the rest back; one candidate below the confidence threshold,
# held back until a person confirms it. Neither proposes money.
AMBIGUOUS_MATCH: Final = "ambiguous_match"
SUGGESTED_MATCH: Final = "suggested_match"
# A payout's fees against the ledger's ``fee`` entries under the payout id, for a property whose PMS books
# fees per payout (``properties.fee_booking``; payouts/fees.py): the amounts differ, or it booked none.
PAYOUT_FEE_MISMATCH: Final = "payout_fee_mismatch"
PAYOUT_FEE_MISSING: Final = "payout_fee_missing"

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
    AMBIGUOUS_MATCH,
    SUGGESTED_MATCH,
    PAYOUT_FAILED,
    PAYOUT_NOT_DEPOSITED,
    PAYOUT_FEE_MISMATCH,
    PAYOUT_FEE_MISSING,
)

# Findings of the payouts asset (recon_pipeline/payouts), written by their own writer: the night's
# reconciliation neither makes nor clears them, and the payouts asset touches no other category.
PAYOUT_CATEGORIES: Final = (PAYOUT_FAILED, PAYOUT_NOT_DEPOSITED, PAYOUT_FEE_MISMATCH, PAYOUT_FEE_MISSING)
RECONCILIATION_CATEGORIES: Final = tuple(c for c in ALL_CATEGORIES if c not in PAYOUT_CATEGORIES)

# Columns of a finding frame (one row per finding), before property/night/run are stamped on it.
FINDING_COLUMNS: Final = (
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

# Nullable amounts are Int64; text stays object, as in the provider and ledger frame contracts.
FINDING_DTYPES: Final[Mapping[str, str]] = {
    name: "Int64" if name in ("provider_amount_minor", "ledger_amount_minor") else "object"
    for name in FINDING_COLUMNS
} | {"difference_minor": "int64"}


def finding_frame(columns: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """A finding frame from column values (None is null), in the contract's column order and dtypes;
    a column not given is null in every row."""
    rows = max((len(values) for values in columns.values()), default=0)
    if rows == 0:  # most of a night's parts are empty: a new frame of the empty one's (copy-on-write) blocks
        return _empty_finding_frame().iloc[0:0]
    return typed_frame(columns, FINDING_DTYPES, rows)


def finding_frames(parts: Sequence[Mapping[str, Sequence[Any]]]) -> list[pd.DataFrame]:
    """Each part's ``finding_frame`` (a batch's nights, each its columns), built as one frame and cut into
    the parts: a batch pays a typed frame's fixed cost, most of what a night's few findings cost, once."""
    sizes = [max((len(values) for values in part.values()), default=0) for part in parts]
    if len(parts) < 2 or not any(sizes):
        return [finding_frame(part) for part in parts]
    sized = list(zip(parts, sizes, strict=True))
    columns = {
        name: [value for part, size in sized for value in part.get(name, [None] * size)]
        for name in FINDING_COLUMNS
    }
    frame = typed_frame(columns, FINDING_DTYPES, sum(sizes))
    return pieces(frame, np.repeat(np.arange(len(parts), dtype=np.int64), sizes), len(parts))


@functools.cache
def _empty_finding_frame() -> pd.DataFrame:
    """The zero-row frame every empty part is a slice of (never handed out itself: callers may modify theirs,
    and copy-on-write keeps what they write to their own frame)."""
    return typed_frame({}, FINDING_DTYPES, 0)


def empty_findings() -> pd.DataFrame:
    """A zero-row finding frame (a night with nothing to report)."""
    return finding_frame({})
