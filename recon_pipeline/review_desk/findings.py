"""The findings a review desk user may see: ``storage.findings``' filter, narrowed to their properties,
searched and sorted as the list's URL says.

Every query here takes the user's properties and applies them in SQL, so no page can show a finding of
another property whatever its URL or filter says. The list, its totals, its export and a finding page's
previous/next links all run ``findings_statement`` (or its conditions and order), so they can never
disagree about which findings the list holds or in which order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import (
    ColumnElement,
    Connection,
    RowMapping,
    Select,
    and_,
    case,
    exists,
    func,
    or_,
    select,
    union,
)

from recon_pipeline.db.schema import discrepancies, ledger_entries, properties, provider_records
from recon_pipeline.keys import parse_night
from recon_pipeline.money import is_iso_currency
from recon_pipeline.providers.cards import CARD_BRANDS, IGNORED_CHARACTERS, spellings_of
from recon_pipeline.reconcile.takings import UNKNOWN_BRAND
from recon_pipeline.review.render import difference_text
from recon_pipeline.review_desk.listing import (
    MajorAmount,
    Sort,
    SortColumn,
    amount_between,
    amount_search,
    beyond,
    check_range,
    order_terms,
    sorted_statement,
)
from recon_pipeline.storage.conditions import among, one_of
from recon_pipeline.storage.findings import FindingFilter, matching_conditions
from recon_pipeline.words import REVIEW_STATE_WORDS, category_label, category_meaning

PAGE_SIZE = 200
MAX_SEARCH_LENGTH: Final = 200  # longer than any id, reference or record key a person pastes

_d = discrepancies.c
SORT_COLUMNS: Final = (
    SortColumn("property", _d.property_id, "Property"),
    SortColumn("night", _d.night, "Night"),
    SortColumn("category", _d.category, "Category"),
    SortColumn("record", _d.record_key, "Record"),
    SortColumn("booking", _d.booking_id, "Booking"),
    SortColumn("difference", _d.difference_minor, "Difference"),
    SortColumn("state", _d.review_status, "State"),
    SortColumn("assigned", _d.assigned_to, "Assigned"),
    SortColumn("age", _d.detected_at, "Age", inverse=True),
    SortColumn("cleared", _d.cleared_at, "Cleared"),
)
DEFAULT_SORT: Final = Sort("night", descending=True)
# The list's own order after the chosen column: a total key, so pages never overlap.
TIEBREAK: Final = (_d.night.desc(), _d.property_id, _d.category, _d.record_key, _d.discrepancy_id)


@dataclass(frozen=True)
class FindingQuery:
    """A findings page's filters: ``review.rules.FindingFilter`` plus a night range, a currency, an
    amount the difference reaches (major units), a booking, a card brand (``brand_condition``), a search
    (``search_condition``) and an order."""

    where: FindingFilter
    night_from: str | None = None
    night_to: str | None = None
    amount_at_least: MajorAmount | None = None  # compared with the absolute difference, in its currency
    currency: str | None = None
    booking: str | None = None
    search: str | None = None
    sort: Sort = field(default=DEFAULT_SORT)
    brand: str | None = None  # a brand of ``cards.CARD_BRANDS``, or ``unknown``

    def __post_init__(self) -> None:
        for night in (self.night_from, self.night_to):
            if night is not None:
                parse_night(night)
        check_range(self.night_from, self.night_to, "night")
        if self.currency is not None and not is_iso_currency(self.currency):
            raise ValueError(f"currency {self.currency!r} is not an ISO 4217 code like EUR")
        if self.brand is not None and self.brand not in CARD_BRANDS and self.brand != UNKNOWN_BRAND:
            raise ValueError(f"unknown card brand {self.brand!r}")
        if self.search is not None:
            if len(self.search) > MAX_SEARCH_LENGTH:
                raise ValueError(f"search is longer than {MAX_SEARCH_LENGTH} characters")
            amount_search(self.search)  # a reversed amount range: refused here, not an empty list


def list_findings(
    connection: Connection,
    query: FindingQuery,
    allowed: tuple[str, ...],
    limit: int = PAGE_SIZE,
    offset: int = 0,
) -> list[RowMapping]:
    """The matching findings of ``allowed`` properties in the query's order, at most ``limit`` after
    skipping ``offset``."""
    return list(connection.execute(findings_statement(query, allowed, limit, offset)).mappings())


def findings_statement(
    query: FindingQuery, allowed: tuple[str, ...], limit: int | None, offset: int = 0
) -> Select[Any]:
    """Every column of the findings ``list_findings`` returns, in its order: the page, its count, its totals
    and its exports run this same statement, so an export holds exactly the rows the list shows (up to its
    own limit). The list's total key ends the order, so pages never overlap."""
    statement = select(discrepancies).where(*finding_conditions(query, allowed))
    return sorted_statement(statement, query.sort, SORT_COLUMNS, TIEBREAK).limit(limit).offset(offset)


def finding_conditions(query: FindingQuery, allowed: tuple[str, ...]) -> list[ColumnElement[bool]]:
    """What a finding must be to be on the list: of an ``allowed`` property, and every filter the query
    names."""
    conditions = [*matching_conditions(query.where), one_of(_d.property_id, allowed)]
    if query.night_from is not None:
        conditions.append(_d.night >= query.night_from)
    if query.night_to is not None:
        conditions.append(_d.night <= query.night_to)
    if query.currency is not None:
        conditions.append(_d.currency == query.currency)
    if query.booking is not None:
        conditions.append(_d.booking_id == query.booking)
    if query.brand is not None:
        conditions.append(brand_condition(query.brand))
    if query.amount_at_least is not None:
        amounts = [_d.difference_minor]
        conditions.append(amount_between(amounts, _d.currency, query.amount_at_least, None, query.currency))
    if query.search is not None:
        conditions.append(search_condition(query.search, query.currency))
    return conditions


def search_condition(text: str, currency: str | None) -> ColumnElement[bool]:
    """A finding the search names: its booking, provider record, ledger entry or its ledger entry's
    reference (each exactly), a part of its record key, or (text like ``120.50`` or ``100..200``) an amount
    of its provider side, ledger side or difference, either sign, in major units. ValueError for a
    reversed amount range.

    The names are one union of lookups, each served by its column's index (revision 0015), not one OR
    that only a scan of every finding answers; the findings they found are then read by their key
    (``among``), so the list, its count and its totals read the search's matches, never every finding."""
    found = discrepancies.alias("found")
    f, entry = found.c, ledger_entries.c
    its_entry = and_(entry.entry_id == f.ledger_entry_id, entry.property_id == f.property_id)
    ids = union(
        select(f.discrepancy_id).where(f.booking_id == text),
        select(f.discrepancy_id).where(f.provider_record_id == text),
        select(f.discrepancy_id).where(f.ledger_entry_id == text),
        select(f.discrepancy_id).where(f.record_key.contains(text, autoescape=True)),
        select(f.discrepancy_id).join(ledger_entries, its_entry).where(entry.reference == text),
    )
    named: list[ColumnElement[bool]] = [among(_d.discrepancy_id, ids)]
    amounts = amount_search(text)
    if amounts is not None:
        sides = [_d.provider_amount_minor, _d.ledger_amount_minor, _d.difference_minor]
        named.append(amount_between(sides, _d.currency, *amounts, currency))
    return or_(*named)


def brand_condition(brand: str) -> ColumnElement[bool]:
    """A finding of a card of ``brand``: its provider record (as the night's run kept it in
    ``provider_records``, in the one vocabulary) or its ledger entry (``card_brand`` as the PMS wrote it:
    ``VA``, ``Visa``, ``visa credit``..., folded in SQL as ``cards.brand_of`` reads it) has that brand.
    ``unknown``: neither side names a brand anyone can read."""
    record, entry = provider_records.c, ledger_entries.c
    its_record = (record.property_id == _d.property_id, record.provider_record_id == _d.provider_record_id)
    its_entry = (entry.property_id == _d.property_id, entry.entry_id == _d.ledger_entry_id)
    written = _folded(entry.card_brand)
    if brand == UNKNOWN_BRAND:
        return and_(
            ~exists().where(*its_record, record.card_brand.is_not(None)),
            ~exists().where(*its_entry, written.in_(sorted(spellings_of()))),
        )
    return or_(
        exists().where(*its_record, record.card_brand == brand),
        exists().where(*its_entry, written.in_(sorted(spellings_of(brand)))),
    )


def _folded(text: ColumnElement[Any]) -> ColumnElement[Any]:
    """``text`` lower-cased without ``cards.IGNORED_CHARACTERS``: a spelling as ``spellings_of`` has it."""
    folded = func.lower(text)
    for character in IGNORED_CHARACTERS:
        folded = func.replace(folded, character, "")
    return folded


@dataclass(frozen=True)
class ListPosition:
    """Where a finding stands in the list its reader came from (``query``: that list's query string):
    its ``number`` among ``total`` (None once it no longer matches, e.g. acknowledged off an open-only
    list) and the findings before and after it."""

    query: str
    number: int | None
    total: int
    previous: int | None
    next: int | None


def list_position(
    connection: Connection, query: FindingQuery, allowed: tuple[str, ...], row: Mapping[Any, Any], text: str
) -> ListPosition:
    """The finding's neighbours in the filtered, sorted list: the nearest matching finding either side of
    its cells in the list's order (a keyset, so no query numbers the whole list), and its number, counted
    with the list's size. It need not match any more (acknowledged off an open-only list): its neighbours
    are still those either side of where it stood."""
    finding_id = int(row["discrepancy_id"])
    matching = finding_conditions(query, allowed)
    terms = order_terms(query.sort, SORT_COLUMNS, TIEBREAK)
    values = [row[term.column.key] for term in terms]

    def neighbour(reverse: bool) -> int | None:
        ordered = [term.ordered(reverse) for term in terms]
        nearest = select(_d.discrepancy_id).where(*matching, beyond(terms, values, reverse))
        return connection.execute(nearest.order_by(*ordered).limit(1)).scalar()

    counted = select(
        func.count(),
        func.coalesce(func.sum(case((beyond(terms, values, reverse=True), 1), else_=0)), 0),
        func.coalesce(func.sum(case((_d.discrepancy_id == finding_id, 1), else_=0)), 0),
    ).where(*matching)
    total, before, listed = connection.execute(counted).one()
    return ListPosition(
        query=text,
        number=int(before) + 1 if listed else None,
        total=int(total),
        previous=neighbour(reverse=True),
        next=neighbour(reverse=False),
    )


def property_currencies(connection: Connection, allowed: tuple[str, ...]) -> list[str]:
    """The currencies of the ``allowed`` properties: the choices of the list's currency filter."""
    statement = select(properties.c.currency).distinct().where(one_of(properties.c.property_id, allowed))
    return sorted(str(code) for code in connection.execute(statement).scalars())


def shown_finding(row: Mapping[Any, Any], now: datetime) -> dict[str, Any]:
    """A finding as the list shows it: its row, its category and state in words, its difference (both
    currencies for a currency mismatch) and its age."""
    return {
        **row,
        "category_label": category_label(row["category"]),
        "category_meaning": category_meaning(row["category"]),
        "difference_text": difference_text(row),
        "state_words": REVIEW_STATE_WORDS.get(row["review_status"], row["review_status"]),
        "age_text": finding_age(row["detected_at"], row["cleared_at"], now),
    }


def finding_age(detected_at: datetime, cleared_at: datetime | None, now: datetime) -> str:
    """``open 6 days`` since the finding was detected (``open under a day`` on its first), ``cleared``
    once a run no longer sees it."""
    if cleared_at is not None:
        return "cleared"
    days = (now - detected_at).days
    if days < 1:
        return "open under a day"
    return f"open {days} day{'' if days == 1 else 's'}"


def get_finding(connection: Connection, finding_id: int, allowed: tuple[str, ...]) -> RowMapping | None:
    """The finding if it exists and is of an ``allowed`` property; None otherwise (the caller's 404)."""
    statement = select(discrepancies).where(
        discrepancies.c.discrepancy_id == finding_id, one_of(discrepancies.c.property_id, allowed)
    )
    return connection.execute(statement).mappings().first()
