"""The ledger-record frame: the PMS's own ledger entries around one property-night.

Entries posted inside the night window carry ``in_night=True``; entries from the adjacent nights are
loaded too (``in_night=False``) so that a record the provider created at 23:59 and the ledger posted at
00:01 is recognised as a timing difference, not as a missing record.
"""

from __future__ import annotations

import pandas as pd

LEDGER_RECORD_COLUMNS: dict[str, str] = {
    "entry_id": "object",
    "property_id": "object",
    "booking_id": "object",  # nullable
    "provider_record_id": "object",  # nullable: a manual entry has none
    "kind": "object",  # payment | refund | fee | adjustment
    "amount_minor": "int64",  # signed: refunds and fees negative
    "currency": "object",  # ISO 4217 upper case
    "posted_at": "datetime64[ns, UTC]",
    "in_night": "bool",
    # What a PMS records of a card payment when it never learns the provider's id (the matcher's keys):
    "card_brand": "object",  # nullable, lower case: visa, mastercard, amex…
    "card_last4": "object",  # nullable, as read
    "approval_code": "object",  # nullable, the issuer's authorization code as read
    "reference": "object",  # nullable, free text as the PMS recorded it
    # How the guest paid and the booking's group (docs/design.md, "Ledgers as PMSs keep them"):
    "tender": "object",  # nullable, tenders.TENDERS once validated: card, cash, bank_transfer, ...
    "group_id": "object",  # nullable: bookings.group_id of the entry's booking
}

# The columns a ledger frame may lack when it is built by hand (tests, benchmarks, the adjustments posted):
# read as all null (:func:`with_match_keys`).
LEDGER_MATCH_KEY_COLUMNS: tuple[str, ...] = (
    "card_brand",
    "card_last4",
    "approval_code",
    "reference",
    "tender",
    "group_id",
)


def with_match_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every :data:`LEDGER_MATCH_KEY_COLUMNS` column it lacks added as all null (object):
    a ledger frame built before the PMS recorded card keys is still a ledger frame."""
    missing = [name for name in LEDGER_MATCH_KEY_COLUMNS if name not in frame.columns]
    if not missing:
        return frame
    return frame.assign(
        **{name: pd.Series([None] * len(frame), index=frame.index, dtype="object") for name in missing}
    )
