"""The property-nights a review desk user may see, each summed up: findings per category, review states,
adjustment and posting states, and how fresh its reconciliation is; and a night's takings.

A handful of GROUP BY queries over the chosen property-nights, never one query per row; every query is
narrowed to the user's properties in SQL, so no filter or URL shows another property's night.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, RowMapping, Select, and_, case, column, func, select, union

from recon_pipeline.db.schema import (
    adjustments,
    discrepancies,
    night_reconciliations,
    posting_outbox,
    stale_nights,
)
from recon_pipeline.keys import parse_night
from recon_pipeline.money import format_minor
from recon_pipeline.reconcile.takings import NightTakings
from recon_pipeline.reports.queries import partition_takings
from recon_pipeline.review_desk.findings import search_condition
from recon_pipeline.review_desk.listing import Sort, SortColumn, amount_search, check_range, sorted_statement
from recon_pipeline.storage.conditions import one_of

PAGE_SIZE = 100  # property-nights a page of the overview: each is a row of several summed-up cells
DEFAULT_NIGHTS = 14  # the overview without a range: the latest nights that have anything
MAX_NIGHTS = 400  # a range's nights at most (more than a year)
SUCCEEDED = "succeeded"

PropertyNight = tuple[str, str]
# The overview sorts its property-nights by their key; named as the chosen keys' columns are.
SORT_COLUMNS: Final = (
    SortColumn("property", column("property_id"), "Property"),
    SortColumn("night", column("night"), "Night"),
)
DEFAULT_SORT: Final = Sort("night", descending=True)
TIEBREAK: Final[tuple[ColumnElement[Any], ...]] = (column("night").desc(), column("property_id"))


@dataclass(frozen=True)
class NightQuery:
    """The overview's filters: a property, a night range and a search, each optional (nights validated);
    and the order."""

    property_id: str | None = None
    night_from: str | None = None
    night_to: str | None = None
    search: str | None = None  # nights with a finding the search names (``findings.search_condition``)
    sort: Sort = field(default=DEFAULT_SORT)

    def __post_init__(self) -> None:
        for night in (self.night_from, self.night_to):
            if night is not None:
                parse_night(night)
        check_range(self.night_from, self.night_to, "night")
        if self.search is not None:
            amount_search(self.search)  # a reversed amount range: refused here, not an empty list

    @property
    def has_range(self) -> bool:
        return self.night_from is not None or self.night_to is not None


@dataclass(frozen=True)
class CategoryLine:
    """A category of a night: outstanding (not cleared) findings, amounts per currency, cleared ones."""

    category: str
    outstanding: int
    amounts: tuple[str, ...]  # sum |difference| per currency, formatted
    cleared: int
    # per currency: (currency, outstanding, sum |difference| in minor units, cleared), for an export's cells
    currencies: tuple[tuple[str, int, int, int], ...] = ()


@dataclass
class NightSummary:
    """What the overview shows of one property-night."""

    property_id: str
    night: str
    categories: list[CategoryLine] = field(default_factory=list)
    review_states: dict[str, int] = field(default_factory=dict)  # of outstanding findings
    adjustment_states: dict[str, int] = field(default_factory=dict)
    posting_states: dict[str, int] = field(default_factory=dict)  # outbox rows of its adjustments
    run: RowMapping | None = None
    stale: RowMapping | None = None

    @property
    def is_empty(self) -> bool:
        return not (self.categories or self.adjustment_states or self.run or self.stale)


def _narrowed(table: Any, query: NightQuery, allowed: tuple[str, ...]) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [one_of(table.c.property_id, allowed)]
    if query.property_id is not None:
        conditions.append(table.c.property_id == query.property_id)
    if query.night_from is not None:
        conditions.append(table.c.night >= query.night_from)
    if query.night_to is not None:
        conditions.append(table.c.night <= query.night_to)
    return conditions


def chosen_statement(
    connection: Connection, query: NightQuery, allowed: tuple[str, ...]
) -> Select[Any] | None:
    """The property-nights that have a finding, an adjustment, a run or a stale mark (with a search: a
    finding it names), in the query's order ending with the key (a total order: pages never overlap):
    those of the range, or without one those of the latest ``DEFAULT_NIGHTS`` nights that have anything.
    None when no night has anything. The overview's page, its count, its totals and its export run this
    one statement."""
    if query.search is None:
        tables = (discrepancies, adjustments, night_reconciliations, stale_nights)
        keyed: list[Select[Any]] = [
            select(table.c.property_id, table.c.night).where(*_narrowed(table, query, allowed))
            for table in tables
        ]
    else:
        searched = search_condition(query.search, None)
        narrowed = _narrowed(discrepancies, query, allowed)
        keyed = [select(discrepancies.c.property_id, discrepancies.c.night).where(*narrowed, searched)]
    keys = union(*keyed).subquery()
    nights = select(keys.c.night).distinct().order_by(keys.c.night.desc())
    nights = nights.limit(MAX_NIGHTS if query.has_range else DEFAULT_NIGHTS)
    wanted = list(connection.execute(nights).scalars())
    if not wanted:
        return None
    chosen = select(keys.c.property_id, keys.c.night).where(keys.c.night.in_(wanted))
    return sorted_statement(chosen, query.sort, SORT_COLUMNS, TIEBREAK)


def outstanding_statement(chosen: Select[Any], allowed: tuple[str, ...]) -> Select[Any]:
    """The outstanding (not cleared) findings of the chosen property-nights, each's currency and absolute
    difference: the overview's totals sum them per currency (``listing.totals``) over every page."""
    d = discrepancies.c
    keys = chosen.order_by(None).limit(None).offset(None).subquery()
    return (
        select(d.currency, func.abs(d.difference_minor).label("amount_minor"))
        .join_from(discrepancies, keys, and_(keys.c.property_id == d.property_id, keys.c.night == d.night))
        .where(one_of(d.property_id, allowed), d.cleared_at.is_(None))
    )


def chosen_nights(connection: Connection, query: NightQuery, allowed: tuple[str, ...]) -> list[PropertyNight]:
    """All of ``chosen_statement``'s property-nights (the export; the overview pages over them)."""
    statement = chosen_statement(connection, query, allowed)
    return [] if statement is None else keys_of(connection, statement)


def keys_of(connection: Connection, statement: Select[Any]) -> list[PropertyNight]:
    """The property-nights ``statement`` (``chosen_statement``, perhaps one page of it) selects."""
    return [(row.property_id, row.night) for row in connection.execute(statement)]


def summarise(
    connection: Connection, keys: Iterable[PropertyNight], allowed: tuple[str, ...]
) -> list[NightSummary]:
    """Each of ``keys`` (of ``allowed`` properties only) summed up, in the order given."""
    summaries = {key: NightSummary(*key) for key in keys if key[0] in allowed}
    if not summaries:
        return []
    property_ids = sorted({p for p, _ in summaries})
    nights = sorted({n for _, n in summaries})

    def among(table: Any) -> list[ColumnElement[bool]]:
        return [table.c.property_id.in_(property_ids), table.c.night.in_(nights)]

    def pick(row: Any) -> NightSummary | None:
        return summaries.get((row.property_id, row.night))

    _add_findings(connection, among(discrepancies), summaries)
    d = discrepancies.c
    states = (
        select(d.property_id, d.night, d.review_status, func.count().label("n"))
        .where(*among(discrepancies), d.cleared_at.is_(None))
        .group_by(d.property_id, d.night, d.review_status)
        .order_by(d.review_status)
    )
    for row in connection.execute(states):
        if (summary := pick(row)) is not None:
            summary.review_states[row.review_status] = row.n
    a = adjustments.c
    by_status = (
        select(a.property_id, a.night, a.status, func.count().label("n"))
        .where(*among(adjustments))
        .group_by(a.property_id, a.night, a.status)
        .order_by(a.status)
    )
    for row in connection.execute(by_status):
        if (summary := pick(row)) is not None:
            summary.adjustment_states[row.status] = row.n
    by_posting = (
        select(a.property_id, a.night, posting_outbox.c.state, func.count().label("n"))
        .join(posting_outbox, posting_outbox.c.adjustment_id == a.adjustment_id)
        .where(*among(adjustments))
        .group_by(a.property_id, a.night, posting_outbox.c.state)
        .order_by(posting_outbox.c.state)
    )
    for row in connection.execute(by_posting):
        if (summary := pick(row)) is not None:
            summary.posting_states[row.state] = row.n
    for table, attribute in ((night_reconciliations, "run"), (stale_nights, "stale")):
        for found in connection.execute(select(table).where(*among(table))).mappings():
            if (summary := summaries.get((found["property_id"], found["night"]))) is not None:
                setattr(summary, attribute, found)
    return list(summaries.values())


def _add_findings(
    connection: Connection,
    conditions: list[ColumnElement[bool]],
    summaries: dict[PropertyNight, NightSummary],
) -> None:
    """Per property-night and category: outstanding count and sum |difference| per currency, cleared count."""
    d = discrepancies.c
    cleared = case((d.cleared_at.is_(None), 0), else_=1).label("cleared")
    statement = (
        select(
            d.property_id,
            d.night,
            d.category,
            d.currency,
            cleared,
            func.count().label("n"),
            func.sum(func.abs(d.difference_minor)).label("amount"),
        )
        .where(*conditions)
        .group_by(d.property_id, d.night, d.category, d.currency, cleared)
        .order_by(d.category, d.currency)
    )
    lines: dict[PropertyNight, dict[str, list[Any]]] = defaultdict(dict)
    for row in connection.execute(statement):
        key = (row.property_id, row.night)
        if key not in summaries:
            continue
        line = lines[key].setdefault(row.category, [0, [], 0, {}])
        counts = line[3].setdefault(row.currency, [0, 0, 0])
        if row.cleared:
            line[2] += row.n
            counts[2] += row.n
        else:
            line[0] += row.n
            line[1].append(format_minor(int(row.amount), row.currency))
            counts[0] += row.n
            counts[1] += int(row.amount)
    for key, categories in lines.items():
        summaries[key].categories = [
            CategoryLine(
                category,
                outstanding,
                tuple(amounts),
                cleared_count,
                tuple((currency, *counts) for currency, counts in by_currency.items()),
            )
            for category, (outstanding, amounts, cleared_count, by_currency) in categories.items()
        ]


def freshness(summary: NightSummary, now: datetime) -> str:
    """How current the night's figures are: its last run's outcome and age, and a stale mark if any."""
    run = summary.run
    if run is None:
        text = "never reconciled"
    elif run["status"] == SUCCEEDED:
        text = f"reconciled {age(run['finished_at'], now)}"
    else:
        text = f"failed {age(run['finished_at'], now)}: {run['error'] or 'no error recorded'}"
    if summary.stale is not None:
        text += f"; stale since {summary.stale['marked_at']:%Y-%m-%d %H:%M} UTC ({summary.stale['reason']})"
    return text


def age(then: datetime, now: datetime) -> str:
    """``just now``, ``12 min ago``, ``3 h ago``, ``4 d ago``."""
    minutes = int((now - then).total_seconds() // 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes} min ago"
    if minutes < 48 * 60:
        return f"{minutes // 60} h ago"
    return f"{minutes // (24 * 60)} d ago"


def night_adjustments(
    connection: Connection, property_id: str, night: str, allowed: tuple[str, ...]
) -> list[RowMapping]:
    """The adjustments of one property-night (of an ``allowed`` property), with their posting state."""
    a = adjustments.c
    statement = (
        select(adjustments, posting_outbox.c.state.label("posting_state"))
        .outerjoin(posting_outbox, posting_outbox.c.adjustment_id == a.adjustment_id)
        .where(one_of(a.property_id, allowed), a.property_id == property_id, a.night == night)
        .order_by(a.kind, a.provider_record_id, a.revision)
    )
    return list(connection.execute(statement).mappings())


def night_takings(
    connection: Connection, property_id: str, night: str, allowed: tuple[str, ...]
) -> NightTakings:
    """The property-night's takings (of an ``allowed`` property) as its latest run kept them: per tender,
    and the cards per brand on both sides (``reconcile/takings.py``)."""
    if property_id not in allowed:
        return NightTakings()
    return partition_takings(connection, property_id, night)
