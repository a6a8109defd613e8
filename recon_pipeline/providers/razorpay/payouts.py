"""Razorpay payouts: its settlements (``GET /v1/settlements``), each broken down by the settlement recon.

A settlement (``setl_...``) is what Razorpay paid to the merchant's bank account: ``amount`` (paise, what
the bank receives), ``fees`` and ``tax`` (the fees, GST included, and the GST part, already taken from
it), ``status`` (``created``: instructed, ``processed``: paid, ``failed``: the bank refused it and the
money stays in the Razorpay balance), ``utr`` (the Unique Transaction Reference the bank statement shows:
the reference a credit is matched by) and ``created_at``. The entity has no currency: Razorpay settles
domestic payments in INR. Its arrival day is its ``created_at`` day on the Indian calendar (Razorpay makes
the day's settlement in the morning, IST).

Its transactions are the items of the settlement recon (``GET /v1/settlements/recon/combined``) of its day
that name it (``settlement_id``): a payment (its ``credit``, the amount less the fee), a refund (its
``debit``), a dispute's adjustment (``dispute`` when it debits, ``dispute_reversal`` when it credits,
under the dispute's id) and any other adjustment or transfer under its own type. Each item's net is
``credit - debit`` and its fee the item's ``fee``, so the items' net sums to the settlement's amount.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import Final

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.objects import (
    ProviderObject,
    amount_field,
    created_at_field,
    currency_field,
    field_value,
    id_field,
    optional_id_field,
    record_id,
)
from recon_pipeline.providers.payouts import Payout, PayoutTransaction
from recon_pipeline.providers.razorpay.settlement import SETTLEMENT_TZ

SETTLEMENT_CURRENCY: Final = "INR"
# Razorpay's settlement states in the payouts' words.
PAYOUT_STATUS = {"created": "pending", "processed": "paid", "failed": "failed"}
_WHAT = "settlement"


def settlement_day(settlement: Payout) -> date:
    """The Indian calendar day whose settlement recon lists the settlement's items."""
    return settlement.created_at.astimezone(SETTLEMENT_TZ).date()


def payout_of(obj: ProviderObject) -> Payout:
    """A Razorpay settlement as a ``Payout`` of the merchant's own account; a state Razorpay does not
    document, or fees below their GST, is a data error naming it."""
    status: str = field_value(obj, "status", str, _WHAT)
    if status not in PAYOUT_STATUS:
        raise ProviderDataError(f"{_WHAT} {obj.get('id')!r}: field 'status' is {status!r}")
    if amount_field(obj, "tax", _WHAT) > amount_field(obj, "fees", _WHAT):
        raise ProviderDataError(f"{_WHAT} {obj.get('id')!r}: tax exceeds fees")
    created = created_at_field(obj, _WHAT, "created_at")
    return Payout(
        payout_id=record_id(obj, _WHAT),
        provider_account=None,
        amount_minor=amount_field(obj, "amount", _WHAT),
        currency=SETTLEMENT_CURRENCY,
        status=PAYOUT_STATUS[status],
        failure_code=None,
        arrival_date=created.astimezone(SETTLEMENT_TZ).date(),
        automatic=True,
        statement_descriptor=optional_id_field(obj, "utr", _WHAT),
        created_at=created,
    )


def transactions_of(settlement: Payout, items: Iterable[ProviderObject]) -> list[PayoutTransaction]:
    """The recon items naming the settlement as its transactions (see the module's rule)."""
    what = f"settlement recon item of {settlement.payout_id!r}"
    transactions = []
    for item in items:
        if item.get("settlement_id") != settlement.payout_id:
            continue
        entity_id = id_field(item, "entity_id", what)
        item_type: str = field_value(item, "type", str, what)
        net = amount_field(item, "credit", what) - amount_field(item, "debit", what)
        fee = amount_field(item, "fee", what)
        dispute_id = optional_id_field(item, "dispute_id", what)
        kind = item_type
        if dispute_id is not None:
            kind = "dispute" if net < 0 else "dispute_reversal"
        transactions.append(
            PayoutTransaction(
                transaction_id=entity_id,
                payout_id=settlement.payout_id,
                source_id=dispute_id or entity_id,
                kind=kind,
                amount_minor=net + fee,
                fee_minor=fee,
                net_minor=net,
                currency=currency_field(item, what),
                created_at=created_at_field(item, what, "created_at"),
            )
        )
    return transactions


def settlement_params(arrival_gte: datetime, arrival_lt: datetime) -> dict[str, int]:
    """``from``/``to`` (both inclusive, unix seconds) of the settlements that may arrive in
    ``[arrival_gte, arrival_lt)``: a day wider each side, as the arrival day is the Indian one."""
    day = 86_400
    return {"from": int(arrival_gte.timestamp()) - day, "to": int(arrival_lt.timestamp()) + day - 1}
