"""The provider-record frame: what a provider pull yields for one property-night, whatever the provider.

One row per money movement. A charge yields a ``payment`` row and, when the provider took a fee, a
``fee`` row with the same ``provider_record_id``; every refund is a ``refund`` row of its own; a dispute
(chargeback) yields a ``dispute`` row (funds withdrawn) and its own ``fee`` row, both under the dispute's
id (Stripe ``du_...``), and a won dispute a ``dispute_reversal`` row (funds reinstated) under the same id.
Amounts are signed as the ledger signs them: payments and reversals positive, refunds, disputes and fees
negative. The match key against the ledger is (``provider_record_id``, ``kind``).

A movement presented in one currency and settled in another (currency conversion) keeps its presentment
amount and currency in ``amount_minor``/``currency`` and carries the balance transaction's figure in
``settlement_amount_minor``/``settlement_currency``: the ledger may book either (docs/design.md, "Money
movements").
Both are null when the movement settled in its own currency or has not settled.

A card payment also carries what a hotel's folio records of the card when it has no provider id: the card's
brand (lower case, one vocabulary for every provider: ``cards.py``), its last four digits, and the issuer's
authorization (approval) code. A refund, fee or dispute row carries those of the payment it belongs to.
They are null where the provider does not say (not a card, a field the provider leaves out): the matcher
pairs on them only when both sides have them (docs/providers.md, "Card keys").
"""

from __future__ import annotations

import pandas as pd

PROVIDER_RECORD_COLUMNS: dict[str, str] = {
    "provider_record_id": "object",  # ch_..., re_... (a fee row carries its charge's id)
    "kind": "object",  # payment | refund | fee | dispute | dispute_reversal
    "charge_id": "object",  # the charge the record belongs to (its own id for a payment)
    "property_id": "object",
    "booking_id": "object",  # nullable
    "payment_intent_id": "object",  # nullable: the pi_... the charge belongs to
    "amount_minor": "int64",  # signed minor units
    "currency": "object",  # ISO 4217 upper case
    # the provider's own status word (succeeded, pending, failed, canceled...); a Razorpay fee row says where
    # its amount is from: "settled" (the settlement recon's) or "provisional" (the payment's, not settled yet)
    "status": "object",
    "settled": "bool",  # money actually moved: succeeded+captured charge, succeeded refund
    "created_at": "datetime64[ns, UTC]",
    # currency conversion: the signed amount in the account's settlement currency (nullable, see above)
    "settlement_amount_minor": "Int64",
    "settlement_currency": "object",  # ISO 4217 upper case, nullable
    # the card's keys, all nullable (see above)
    "card_brand": "object",  # lower case: visa, mastercard, amex, ... (cards.CARD_BRANDS)
    "card_last4": "object",  # four digits
    "approval_code": "object",  # the issuer's authorization code, as the provider gives it
}

# Columns a provider's row builder may leave out (they default to null): only conversions carry the
# settlement figures, only card payments (and the rows that follow them) the card's keys.
OPTIONAL_PROVIDER_RECORD_COLUMNS: frozenset[str] = frozenset(
    {"settlement_amount_minor", "settlement_currency", "card_brand", "card_last4", "approval_code"}
)
CARD_KEY_COLUMNS: tuple[str, ...] = ("card_brand", "card_last4", "approval_code")


def empty_provider_records() -> pd.DataFrame:
    """A zero-row frame with the contract's columns and dtypes (a night with no activity)."""
    return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in PROVIDER_RECORD_COLUMNS.items()})
