"""Stripe disputes (chargebacks) as money movements: each of a dispute's balance transactions is one.

A dispute moves money through at most two balance transactions (BTs), both ``type`` ``adjustment`` and
``source`` the dispute (``du_…``; older ones ``dp_…``): the withdrawal (``reporting_category`` ``dispute``:
the disputed amount out, plus Stripe's dispute fee, e.g. 15.00, in the BT's ``fee``/``fee_details``) when
the dispute opens, and the reversal (``dispute_reversal``: the amount back) when it is won. A movement
belongs to the night its BT was created in: a dispute opened Monday and won Thursday withdraws in Monday's
night and reinstates in Thursday's, whatever the dispute's own ``created`` or ``status`` says now.

Rows (docs/design.md, "Money movements"): the movement under the dispute's id, kind ``dispute`` (negative) or
``dispute_reversal`` (positive), with the presentment amount and currency of the dispute and, when the BT
settled in another currency, the BT's amount as the settlement figure; and the BT's fee as a ``fee`` row in
the BT's currency. The withdrawal's fee is under the dispute's id (the fee the dispute incurred). A fee on
the reversal (Stripe returning the dispute fee: a negative BT fee, so a positive row) is under the
reversal BT's own id (``txn_…``): under the dispute's id it would collide with the withdrawal's fee on the
key (``provider_record_id``, ``kind``) when both land in one night, and the BT id is what the PMS sees for
that credit. Both ids resolve by id (``GET /v1/disputes/{id}``, ``GET /v1/balance_transactions/{id}``).

A dispute carries no property: it follows its charge's claim, as a refund does.
"""

from __future__ import annotations

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.objects import (
    ProviderObject,
    Row,
    amount_field,
    created_at_field,
    currency_field,
    field_value,
    id_field,
    optional_id_field,
    record_id,
    signed_amount_field,
)
from recon_pipeline.providers.stripe.balance import settlement_columns

DISPUTE_ID_PREFIXES = ("du_", "dp_")
BALANCE_TRANSACTION_ID_PREFIX = "txn_"
# The BT reporting categories of a dispute's movements, and the ledger kind of each.
MOVEMENT_KINDS = {"dispute": "dispute", "dispute_reversal": "dispute_reversal"}


def is_dispute_movement(transaction: ProviderObject) -> bool:
    """Whether a balance transaction is a dispute's withdrawal or reversal (other adjustments are not
    reconciled here)."""
    return transaction.get("reporting_category") in MOVEMENT_KINDS


def source_dispute(transaction: ProviderObject) -> ProviderObject:
    """The dispute a dispute balance transaction moved money for (``source`` expanded)."""
    source = transaction.get("source")
    if not isinstance(source, dict) or source.get("object") != "dispute":
        raise ProviderDataError(
            f"balance transaction {transaction.get('id')!r}: field 'source' is not an expanded dispute "
            f"({str(source)[:80]!r})"
        )
    return source


def dispute_charge_id(dispute: ProviderObject) -> str:
    """The id of the disputed charge (required: it is how the dispute is attributed)."""
    charge = dispute.get("charge")
    if isinstance(charge, dict):  # expanded by the caller
        return record_id(charge, "charge of dispute")
    return id_field(dispute, "charge", "dispute")


def movements_of(dispute: ProviderObject) -> list[ProviderObject]:
    """The dispute's own withdrawal and reversal BTs (``balance_transactions``, always included in full)."""
    transactions = field_value(dispute, "balance_transactions", list, "dispute")
    for transaction in transactions:
        if not isinstance(transaction, dict):
            raise ProviderDataError(
                f"dispute {dispute.get('id')!r}: a balance transaction is {transaction!r}"
            )
    return [transaction for transaction in transactions if is_dispute_movement(transaction)]


def dispute_movement_rows(
    transaction: ProviderObject,
    dispute: ProviderObject,
    charge: ProviderObject,
    property_id: str | None,
    booking_id: str | None,
) -> list[Row]:
    """The rows of one dispute movement: the withdrawal or reversal, and its fee when there is one.

    ``charge`` is the disputed charge (its claim is ``property_id``, its ``metadata.booking_id``
    ``booking_id``)."""
    dispute_id = record_id(dispute, "dispute")
    transaction_id = record_id(transaction, "balance transaction")
    what = f"balance transaction {transaction_id!r} of dispute {dispute_id!r}"
    source = transaction.get("source")
    source_id = source.get("id") if isinstance(source, dict) else source
    if source_id != dispute_id:
        raise ProviderDataError(f"{what}: its source is {str(source_id)[:80]!r}")
    charge_id = dispute_charge_id(dispute)
    if charge.get("id") != charge_id:
        raise ProviderDataError(f"dispute {dispute_id!r}: charge {charge_id!r} given {charge.get('id')!r}")
    kind = MOVEMENT_KINDS[field_value(transaction, "reporting_category", str, what)]
    moved = signed_amount_field(transaction, "amount", what)
    settled_in = currency_field(transaction, what)
    presented_in = currency_field(dispute, "dispute")
    # Same currency: the BT's amount is what moved. Converted: the dispute's amount in its own currency,
    # in the BT's direction, and the BT's figure as the settlement amount.
    amount = (
        moved
        if settled_in == presented_in
        else _direction(moved) * amount_field(dispute, "amount", "dispute")
    )
    intent = optional_id_field(dispute, "payment_intent", "dispute") or optional_id_field(
        charge, "payment_intent", "charge"
    )
    base: Row = {
        "provider_record_id": dispute_id,
        "charge_id": charge_id,
        "property_id": property_id,
        "booking_id": booking_id,
        "payment_intent_id": intent,
        "status": field_value(dispute, "status", str, "dispute"),
        "settled": True,  # a balance transaction exists: the money moved, whatever the dispute's outcome
        "created_at": created_at_field(transaction, what),
    }
    rows = [
        {
            **base,
            "kind": kind,
            "amount_minor": amount,
            "currency": presented_in,
            **settlement_columns(transaction, presented_in, what),
        }
    ]
    fee = signed_amount_field(transaction, "fee", what)
    if fee:
        fee_id = dispute_id if kind == "dispute" else transaction_id
        rows.append(
            {
                **base,
                "provider_record_id": fee_id,
                "kind": "fee",
                "amount_minor": -fee,
                "currency": settled_in,
            }
        )
    return rows


def _direction(amount: int) -> int:
    return -1 if amount < 0 else 1
