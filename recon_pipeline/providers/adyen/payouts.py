"""Adyen payouts: a settlement batch's ``MerchantPayout`` lines, each broken down by the batch's other lines.

A batch pays its merchant account's bank once per currency (``report.BatchPayout``): the payout's id is
``<merchant account>:<batch number>:<currency>`` (Adyen gives the payout no id of its own), its reference
for the bank the ``MerchantPayout`` line's ``Modification Reference``, the payout description Adyen sends
the bank (by default ``TX…XT <merchant account>, batch <N>``): what a statement credit is matched by.
Its arrival day is the day the batch closed (UTC). A payout the bank returns is booked back into a later
batch as a ``BankInstructionReturned`` line carrying the payout's reference: the payout is then
``failed`` (failure code ``bank_instruction_returned``), until then ``paid``.

Its transactions are the batch's lines in the payout's currency: every money movement (``Settled``,
``Refunded``, ``Chargeback``…: its amount, its withheld costs as the fee, under the movement's id, so it
traces to the property-night its row belongs to) and every other line (``Fee``, ``DepositCorrection``,
a returned payout…) under its record type with no source. Their net sums to the payout's amount.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from recon_pipeline.providers.adyen.report import BatchPayout, SettlementBatch
from recon_pipeline.providers.payouts import Payout, PayoutTransaction

BANK_INSTRUCTION_RETURNED: Final = "BankInstructionReturned"
RETURNED_FAILURE_CODE: Final = "bank_instruction_returned"


def payout_id_of(merchant_account: str, batch_number: int, currency: str) -> str:
    """The id this pipeline gives a batch's payout in ``currency``."""
    return f"{merchant_account}:{batch_number}:{currency}"


def batch_of_payout(payout_id: str) -> tuple[str, int, str]:
    """(merchant account, batch number, currency) of a payout id made by ``payout_id_of``; a ValueError
    naming the id for anything else."""
    parts = payout_id.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[1].isdigit():
        raise ValueError(f"{payout_id!r} is not an Adyen batch payout id (merchant:batch:currency)")
    return parts[0], int(parts[1]), parts[2]


def returned_references(batches: Iterable[SettlementBatch]) -> set[str]:
    """The references of the payouts the bank returned, as the batches' ``BankInstructionReturned``
    lines name them."""
    return {
        line.reference
        for batch in batches
        for line in batch.batch_lines
        if line.record_type == BANK_INSTRUCTION_RETURNED and line.reference
    }


def payout_of(line: BatchPayout, returned: set[str]) -> Payout:
    """A batch's payout line as a ``Payout`` of its merchant account (failed when returned)."""
    failed = line.reference is not None and line.reference in returned
    return Payout(
        payout_id=payout_id_of(line.merchant_account, line.batch_number, line.currency),
        provider_account=line.merchant_account,
        amount_minor=line.amount_minor,
        currency=line.currency,
        status="failed" if failed else "paid",
        failure_code=RETURNED_FAILURE_CODE if failed else None,
        arrival_date=line.paid_at.date(),
        automatic=True,
        statement_descriptor=line.reference,
        created_at=line.paid_at,
    )


def transactions_of(batch: SettlementBatch, payout: Payout) -> list[PayoutTransaction]:
    """The batch's lines in the payout's currency as its transactions (see the module's rule)."""
    records = batch.records[batch.records["currency"].eq(payout.currency).to_numpy(dtype=bool)]
    fees = {
        str(row.provider_record_id): -int(row.amount_minor)
        for row in records.itertuples()
        if row.kind == "fee"
    }
    transactions = [
        PayoutTransaction(
            transaction_id=f"{row.provider_record_id}:{row.kind}",
            payout_id=payout.payout_id,
            source_id=str(row.provider_record_id),
            kind=str(row.kind),
            amount_minor=int(row.amount_minor),
            fee_minor=fees.get(str(row.provider_record_id), 0),
            net_minor=int(row.amount_minor) - fees.get(str(row.provider_record_id), 0),
            currency=payout.currency,
            created_at=row.created_at.to_pydatetime(),
        )
        for row in records.itertuples()
        if row.kind != "fee"
    ]
    transactions += [
        PayoutTransaction(
            transaction_id=f"{line.record_type}:{index}",
            payout_id=payout.payout_id,
            source_id=None,
            kind=line.record_type,
            amount_minor=line.net_minor,
            fee_minor=0,
            net_minor=line.net_minor,
            currency=payout.currency,
            created_at=line.created_at,
        )
        for index, line in enumerate(batch.batch_lines)
        if line.currency == payout.currency and line.net_minor
    ]
    return transactions
