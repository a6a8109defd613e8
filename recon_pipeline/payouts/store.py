"""The payout tables (``payouts``, ``payout_transactions``, ``bank_credits``): writes keyed on the business
key (a payout id, a balance transaction of a payout, a statement's credit), so a re-run or a re-import
leaves the same rows; and the reads the night and the report need."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from recon_pipeline.categories import UNATTRIBUTED_PAYMENT
from recon_pipeline.db.schema import bank_credits, discrepancies, ledger_entries, payout_transactions, payouts
from recon_pipeline.db.upsert import insert_new, upsert
from recon_pipeline.ledger.queries import in_chunks
from recon_pipeline.payouts.deposit import BankCredit, ExpectedDeposit, match_deposits
from recon_pipeline.payouts.fees import FEE_KIND, BookedFee, booked_fees_of
from recon_pipeline.payouts.trace import TracedTransaction
from recon_pipeline.postings.store import read_posted_adjustments
from recon_pipeline.providers.payouts import Payout

DEPOSITED_STATUSES = ("paid", "in_transit")  # a payout that should reach (or has reached) the bank


def source_owners(connection: Connection, source_ids: Collection[str]) -> dict[str, str]:
    """Movement id → the property the reconciliation gave it: its ledger entry's, else its finding's (a
    movement missing in the ledger is still some property's finding). An ``unattributed_payment`` finding
    says whose it is not: the first property on the account merely reports it."""
    ids = sorted(set(source_ids))
    if not ids:
        return {}
    found = select(discrepancies.c.provider_record_id, discrepancies.c.property_id).where(
        discrepancies.c.provider_record_id.in_(ids), discrepancies.c.category != UNATTRIBUTED_PAYMENT
    )
    booked = select(ledger_entries.c.provider_record_id, ledger_entries.c.property_id).where(
        ledger_entries.c.provider_record_id.in_(ids)
    )
    owners: dict[str, str] = {}
    for query in (found, booked):  # the ledger's word last: it wins
        owners.update({source: owner for source, owner in connection.execute(query).tuples()})
    return owners


# The corrections a payout fee finding proposes (ADJUSTMENT_POLICY): once posted, the PMS's entry of one
# books (part of) the payout's fee, wherever the PMS filed it.
PAYOUT_FEE_CORRECTIONS = (f"post_missing_{FEE_KIND}", f"correct_amount_{FEE_KIND}")


def booked_payout_fees(
    connection: Connection, property_ids: Collection[str], payout_ids: Collection[str], night: str
) -> list[BookedFee]:
    """What the ledger of ``property_ids`` books as the fees of ``payout_ids``, whatever night it was
    posted in: every ``fee`` entry under a payout id, and the PMS's entry of each posted payout fee
    correction of ``night`` (the payouts' arrival night, where their findings live)."""
    properties_, payouts_ = sorted(set(property_ids)), sorted(set(payout_ids))
    if not properties_ or not payouts_:
        return []
    rows: list[Mapping[str, Any]] = []
    for chunk in in_chunks(payouts_):
        query = select(
            ledger_entries.c.entry_id,
            ledger_entries.c.property_id,
            ledger_entries.c.provider_record_id.label("payout_id"),
            ledger_entries.c.amount_minor,
            ledger_entries.c.currency,
        ).where(
            ledger_entries.c.kind == FEE_KIND,
            ledger_entries.c.provider_record_id.in_(chunk),
            ledger_entries.c.property_id.in_(properties_),
        )
        rows.extend(dict(row) for row in connection.execute(query).mappings())
    wanted = set(payouts_)
    for property_id, posted in read_posted_adjustments(connection, properties_, night).items():
        rows.extend(
            {
                "entry_id": adjustment.entry["entry_id"],
                "property_id": property_id,
                "payout_id": adjustment.provider_record_id,
                "amount_minor": adjustment.entry["amount_minor"],
                "currency": adjustment.entry["currency"],
            }
            for adjustment in posted
            if adjustment.kind in PAYOUT_FEE_CORRECTIONS and adjustment.provider_record_id in wanted
        )
    return booked_fees_of(rows)


def save_payout(
    connection: Connection,
    provider: str,
    payout: Payout,
    traced: Sequence[TracedTransaction] | None,
    sum_difference_minor: int | None,
    fully_traced: bool,
    holder_property_id: str,
    now: datetime,
) -> None:
    """Insert or refresh the payout and its transactions."""
    row = {
        "payout_id": payout.payout_id,
        "provider": provider,
        "provider_account": payout.provider_account,
        "amount_minor": payout.amount_minor,
        "currency": payout.currency,
        "status": payout.status,
        "failure_code": payout.failure_code,
        "arrival_night": payout.arrival_date.isoformat(),
        "automatic": payout.automatic,
        "statement_descriptor": payout.statement_descriptor,
        "created_at": payout.created_at,
        "traced": fully_traced,
        "transactions": None if traced is None else len(traced),
        "sum_difference_minor": sum_difference_minor,
        "holder_property_id": holder_property_id,
        "last_seen_at": now,
    }
    upsert(connection, payouts, [row], ["payout_id"], [name for name in row if name != "payout_id"])
    rows = [
        {
            "payout_id": item.transaction.payout_id,
            "transaction_id": item.transaction.transaction_id,
            "source_id": item.transaction.source_id,
            "kind": item.transaction.kind,
            "amount_minor": item.transaction.amount_minor,
            "fee_minor": item.transaction.fee_minor,
            "net_minor": item.transaction.net_minor,
            "currency": item.transaction.currency,
            "created_at": item.transaction.created_at,
            "property_id": item.property_id,
            "night": item.night,
        }
        for item in traced or ()
    ]
    key = ["payout_id", "transaction_id"]
    upsert(
        connection,
        payout_transactions,
        rows,
        key,
        [name for name in rows[0] if name not in key] if rows else [],
    )


def save_credits(connection: Connection, credits: Iterable[BankCredit], now: datetime) -> int:
    """Insert a statement's credits once per (statement, entry, detail); returns how many were new."""
    rows = [
        {
            "statement_id": credit.statement_id,
            "entry_reference": credit.entry_reference,
            "detail_index": credit.detail_index,
            "account_iban": credit.account_iban,
            "booking_date": credit.booking_date.isoformat(),
            "value_date": credit.value_date.isoformat() if credit.value_date else None,
            "amount_minor": credit.amount_minor,
            "currency": credit.currency,
            "remittance_info": credit.remittance_info,
            "imported_at": now,
        }
        for credit in credits
    ]
    return insert_new(connection, bank_credits, rows, ["statement_id", "entry_reference", "detail_index"])


def match_unmatched(connection: Connection) -> int:
    """Match the unmatched credits to the paid payouts no credit pays yet (``deposit.match_deposits``);
    returns how many credits were matched. A match is never undone: it is what the accountant ticked."""
    credit_rows = connection.execute(select(bank_credits).where(bank_credits.c.matched_payout_id.is_(None)))
    credits = [_credit(row) for row in credit_rows.mappings()]
    if not credits:
        return 0
    matched = select(bank_credits.c.matched_payout_id).where(bank_credits.c.matched_payout_id.is_not(None))
    payout_rows = connection.execute(
        select(payouts)
        .where(payouts.c.status.in_(DEPOSITED_STATUSES))
        .where(payouts.c.payout_id.not_in(matched))
    ).mappings()
    expected = [
        ExpectedDeposit(
            row["payout_id"],
            int(row["amount_minor"]),
            row["currency"],
            date.fromisoformat(row["arrival_night"]),
            row["statement_descriptor"],
        )
        for row in payout_rows
    ]
    matches = match_deposits(expected, credits)
    if matches:
        connection.execute(
            update(bank_credits)
            .where(
                bank_credits.c.statement_id == bindparam("s"),
                bank_credits.c.entry_reference == bindparam("e"),
                bank_credits.c.detail_index == bindparam("d"),
            )
            .values(matched_payout_id=bindparam("p")),
            [{"s": s, "e": e, "d": d, "p": payout_id} for (s, e, d), payout_id in matches.items()],
        )
    return len(matches)


def deposited_payouts(connection: Connection, payout_ids: Collection[str]) -> set[str]:
    """Which of ``payout_ids`` a bank credit pays."""
    if not payout_ids:
        return set()
    query = select(bank_credits.c.matched_payout_id).where(
        bank_credits.c.matched_payout_id.in_(sorted(payout_ids))
    )
    return set(connection.execute(query).scalars())


def payouts_between(connection: Connection, first: str, last: str) -> list[Mapping[str, Any]]:
    """The payouts arriving on the nights ``[first, last]``, each with its transactions' property-nights
    and the credit that paid it, for the report."""
    rows = connection.execute(
        select(
            payouts, bank_credits.c.statement_id, bank_credits.c.entry_reference, bank_credits.c.booking_date
        )
        .outerjoin(bank_credits, bank_credits.c.matched_payout_id == payouts.c.payout_id)
        .where(payouts.c.arrival_night >= first, payouts.c.arrival_night <= last)
        .order_by(payouts.c.arrival_night, payouts.c.payout_id)
    ).mappings()
    listed = [dict(row) for row in rows]
    nights: dict[str, list[str]] = {row["payout_id"]: [] for row in listed}
    if nights:
        query = (
            select(
                payout_transactions.c.payout_id,
                payout_transactions.c.property_id,
                payout_transactions.c.night,
            )
            .where(payout_transactions.c.payout_id.in_(sorted(nights)))
            .where(payout_transactions.c.property_id.is_not(None))
            .distinct()
            .order_by(
                payout_transactions.c.payout_id,
                payout_transactions.c.property_id,
                payout_transactions.c.night,
            )
        )
        for payout_id, property_id, night in connection.execute(query).tuples():
            nights[payout_id].append(f"{property_id}/{night}")
    return [{**row, "property_nights": nights[row["payout_id"]]} for row in listed]


def _credit(row: Mapping[Any, Any]) -> BankCredit:
    return BankCredit(
        statement_id=row["statement_id"],
        entry_reference=row["entry_reference"],
        detail_index=int(row["detail_index"]),
        account_iban=row["account_iban"],
        booking_date=date.fromisoformat(row["booking_date"]),
        value_date=date.fromisoformat(row["value_date"]) if row["value_date"] else None,
        amount_minor=int(row["amount_minor"]),
        currency=row["currency"],
        remittance_info=row["remittance_info"],
    )
