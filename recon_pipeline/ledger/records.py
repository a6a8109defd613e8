"""The ledger-record frame: the PMS's own ledger entries around one property-night.

Entries posted inside the night window carry ``in_night=True``; entries from the adjacent nights are
loaded too (``in_night=False``) so that a record the provider created at 23:59 and the ledger posted at
00:01 is recognised as a timing difference, not as a missing record.
"""

from __future__ import annotations

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
}
