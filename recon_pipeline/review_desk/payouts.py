"""The payouts a review desk user may see: those held by one of their properties (``holder_property_id``),
each with whether a bank credit paid it and its payout findings.

Every query takes the user's properties and applies them in SQL: another property's payout is never
listed, and asking for it by id finds nothing (the caller's 404).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, RowMapping, Select, exists, or_, select

from recon_pipeline.categories import PAYOUT_CATEGORIES
from recon_pipeline.db.schema import bank_credits, discrepancies, payout_transactions, payouts
from recon_pipeline.keys import parse_night
from recon_pipeline.providers.payouts import PAYOUT_STATUSES
from recon_pipeline.review_desk.listing import (
    Sort,
    SortColumn,
    amount_between,
    amount_search,
    check_range,
    sorted_statement,
)
from recon_pipeline.storage.conditions import one_of

PAGE_SIZE = 200
MAX_UNTRACED_SHOWN = 5  # the untraced movements a reason names; the transactions table lists them all
_p = payouts.c
_b = bank_credits.c
SORT_COLUMNS: Final = (
    SortColumn("payout", _p.payout_id, "Payout"),
    SortColumn("provider", _p.provider, "Provider"),
    SortColumn("property", _p.holder_property_id, "Property"),
    SortColumn("amount", _p.amount_minor, "Amount"),
    SortColumn("status", _p.status, "Status"),
    SortColumn("failure", _p.failure_code, "Failure code"),
    SortColumn("arrival", _p.arrival_night, "Arrival night"),
    SortColumn("traced", _p.traced, "Traced"),
    SortColumn("transactions", _p.transactions, "Transactions"),
    SortColumn("sum_difference", _p.sum_difference_minor, "Sum difference"),
    SortColumn("deposited", _b.booking_date, "Deposited"),
)
DEFAULT_SORT: Final = Sort("arrival", descending=True)
# The list's own order after the chosen column: the payout's and its bank credit's keys.
TIEBREAK: Final = (
    _p.arrival_night.desc(),
    _p.payout_id,
    _b.statement_id,
    _b.entry_reference,
    _b.detail_index,
)


@dataclass(frozen=True)
class PayoutQuery:
    """The payouts page's filters: holder property, arrival night range, status, a search
    (``search_condition``), each optional; and the order."""

    property_id: str | None = None
    arrival_from: str | None = None
    arrival_to: str | None = None
    status: str | None = None
    search: str | None = None
    sort: Sort = field(default=DEFAULT_SORT)

    def __post_init__(self) -> None:
        for night in (self.arrival_from, self.arrival_to):
            if night is not None:
                parse_night(night)
        check_range(self.arrival_from, self.arrival_to, "arrival")
        if self.search is not None:
            amount_search(self.search)  # a reversed amount range: refused here, not an empty list
        if self.status is not None and self.status not in PAYOUT_STATUSES:
            raise ValueError(
                f"unknown payout status {self.status!r}: use one of {', '.join(PAYOUT_STATUSES)}"
            )


def _with_deposit() -> Select[Any]:
    """Payouts with ``deposited``: whether a bank credit is matched to it (``payouts/deposit.py``)."""
    deposited = bank_credits.c.matched_payout_id.is_not(None).label("deposited")
    return select(payouts, deposited, bank_credits.c.booking_date.label("deposited_on")).outerjoin(
        bank_credits, bank_credits.c.matched_payout_id == payouts.c.payout_id
    )


def payouts_statement(
    query: PayoutQuery, allowed: tuple[str, ...], limit: int | None, offset: int = 0
) -> Select[Any]:
    """The matching payouts of ``allowed`` holders with their deposit, in the query's order: the page, its
    count, its totals and its exports run this one statement. The order ends with the payout's and its
    bank credit's keys, so pages never overlap."""
    conditions: list[ColumnElement[bool]] = [one_of(_p.holder_property_id, allowed)]
    if query.property_id is not None:
        conditions.append(_p.holder_property_id == query.property_id)
    if query.arrival_from is not None:
        conditions.append(_p.arrival_night >= query.arrival_from)
    if query.arrival_to is not None:
        conditions.append(_p.arrival_night <= query.arrival_to)
    if query.status is not None:
        conditions.append(_p.status == query.status)
    if query.search is not None:
        conditions.append(search_condition(query.search))
    statement = _with_deposit().where(*conditions)
    return sorted_statement(statement, query.sort, SORT_COLUMNS, TIEBREAK).limit(limit).offset(offset)


def search_condition(text: str) -> ColumnElement[bool]:
    """A payout the search names: its id or bank reference (statement descriptor), a charge, refund or
    dispute it carries (a balance transaction's source), or its amount (``120.50``, ``100..200``)."""
    moved = payout_transactions.c
    named = [
        _p.payout_id == text,
        _p.statement_descriptor == text,
        exists().where(moved.payout_id == _p.payout_id, moved.source_id == text),
    ]
    amounts = amount_search(text)
    if amounts is not None:
        named.append(amount_between([_p.amount_minor], _p.currency, *amounts, None))
    return or_(*named)


def list_payouts(
    connection: Connection, query: PayoutQuery, allowed: tuple[str, ...], offset: int = 0
) -> list[dict[str, Any]]:
    """The matching payouts of ``allowed`` holders, latest arrival first, each with its ``findings``:
    ``PAGE_SIZE`` of them after skipping ``offset``."""
    statement = payouts_statement(query, allowed, PAGE_SIZE, offset)
    rows = [dict(row) for row in connection.execute(statement).mappings()]
    found = payout_findings(connection, [row["payout_id"] for row in rows], allowed)
    return [{**row, "findings": found.get(row["payout_id"], [])} for row in rows]


def get_payout(connection: Connection, payout_id: str, allowed: tuple[str, ...]) -> dict[str, Any] | None:
    """The payout if its holder is an ``allowed`` property, with its ``findings``; None otherwise."""
    statement = _with_deposit().where(
        payouts.c.payout_id == payout_id, one_of(payouts.c.holder_property_id, allowed)
    )
    row = connection.execute(statement).mappings().first()
    if row is None:
        return None
    return {**row, "findings": payout_findings(connection, [payout_id], allowed).get(payout_id, [])}


def payout_findings(
    connection: Connection, payout_ids: list[str], allowed: tuple[str, ...]
) -> Mapping[str, list[RowMapping]]:
    """The payout findings (``PAYOUT_CATEGORIES``) of each payout: the finding's provider record is the
    payout (``payouts/findings.py``), held by the payout's holder property on the night that judged it."""
    if not payout_ids:
        return {}
    d = discrepancies.c
    statement = (
        select(discrepancies)
        .where(
            d.category.in_(PAYOUT_CATEGORIES),
            d.provider_record_id.in_(sorted(set(payout_ids))),
            one_of(d.property_id, allowed),
        )
        .order_by(d.night, d.category)
    )
    found: dict[str, list[RowMapping]] = defaultdict(list)
    for row in connection.execute(statement).mappings():
        found[row["provider_record_id"]].append(row)
    return found


def transactions_of(connection: Connection, payout_id: str, allowed: tuple[str, ...]) -> list[RowMapping]:
    """A payout's balance transactions of ``allowed`` properties or untraced (call it only for a payout
    ``get_payout`` returned): a payout of a shared account also carries other properties' money, which
    this user may not see."""
    t = payout_transactions.c
    statement = (
        select(payout_transactions)
        .where(t.payout_id == payout_id, one_of(t.property_id, allowed) | t.property_id.is_(None))
        .order_by(t.created_at, t.transaction_id)
    )
    return list(connection.execute(statement).mappings())


def traced_reason(connection: Connection, payout: Mapping[str, Any]) -> str:
    """Whether every movement the payout carried was given a property-night, and if not, why not: the
    provider cannot break the payout down, or how many of its transactions (and which sources) belong to
    no property-night. Untraced transactions name no property, so any viewer of the payout may read them."""
    if payout["traced"]:
        return "yes: every transaction it carried belongs to a property-night"
    if payout["transactions"] is None:
        return (
            "no: the provider cannot break this payout down into the transactions it carried, so they cannot "
            "be traced to property-nights"
        )
    t = payout_transactions.c
    untraced = connection.execute(
        select(t.source_id, t.transaction_id)
        .where(t.payout_id == payout["payout_id"], t.property_id.is_(None))
        .order_by(t.created_at, t.transaction_id)
    ).all()
    if not untraced:
        return "no: its transactions have not been traced yet"
    named = ", ".join(str(source or transaction) for source, transaction in untraced[:MAX_UNTRACED_SHOWN])
    more = f" and {len(untraced) - MAX_UNTRACED_SHOWN} more" if len(untraced) > MAX_UNTRACED_SHOWN else ""
    return (
        f"no: {len(untraced)} of its {payout['transactions']} transactions belong to no property-night "
        f"({named}{more}): no property's ledger or findings name their source, and the account serves "
        "several properties"
    )
