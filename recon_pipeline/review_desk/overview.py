"""The overview's figures: what is at stake over the latest nights of the user's properties, how old the
open findings are, how well the matcher did, and a night's close; the charts draw them (``charts.py``).

*Open* here is what still wants a person: a finding no later run cleared and nobody resolved. Money is
summed as |difference| in one currency at a time (a sum of euros and yen means nothing). Every query is
a GROUP BY narrowed to ``allowed`` properties in SQL, never one query per night or property.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, case, func, select, union

from recon_pipeline.db.schema import discrepancies, matches, night_reconciliations, night_takings
from recon_pipeline.reconcile.matching import CONFIRMED, MATCHED, SUGGESTED
from recon_pipeline.reconcile.takings import NightTakings
from recon_pipeline.review_desk.nights import night_takings as kept_takings
from recon_pipeline.storage.conditions import one_of
from recon_pipeline.storage.matches import REJECTED

DEFAULT_NIGHTS: Final = 14
MAX_NIGHTS: Final = 62
RESOLVED: Final = "resolved"
# Age buckets of open findings: (younger than so many days, words); the last has no bound.
AGE_BUCKETS: Final[tuple[tuple[int | None, str], ...]] = (
    (1, "under 1 day"),
    (3, "1 to 3 days"),
    (7, "3 to 7 days"),
    (30, "7 to 30 days"),
    (None, "30 days or more"),
)
MATCH_STATUSES: Final = (MATCHED, CONFIRMED, SUGGESTED, REJECTED)  # the order of the matches chart's parts


@dataclass(frozen=True)
class OverviewQuery:
    """How many of the latest nights, in which currency (None: the one with the most open money), of
    which property (None: all the user's)."""

    nights: int = DEFAULT_NIGHTS
    currency: str | None = None
    property_id: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.nights <= MAX_NIGHTS:
            raise ValueError(f"nights must be a whole number from 1 to {MAX_NIGHTS}")
        if self.currency is not None and not (
            len(self.currency) == 3 and self.currency.isascii() and self.currency.isalpha()
        ):
            raise ValueError(f"currency {self.currency!r} is not a three-letter code")


@dataclass(frozen=True)
class OpenMoney:
    """Open money of one property-night and category, in the chosen currency (minor units)."""

    property_id: str
    night: str
    category: str
    amount_minor: int


@dataclass(frozen=True)
class AgeBucket:
    """Open findings detected within one age bucket, by review state."""

    label: str
    open: int
    acknowledged: int


@dataclass(frozen=True)
class NightMatches:
    """A night's current matcher rows by status, and the share settled (matched or confirmed) of them all."""

    night: str
    counts: dict[str, int]

    @property
    def settled(self) -> int:
        return self.counts.get(MATCHED, 0) + self.counts.get(CONFIRMED, 0)

    @property
    def rate(self) -> float:
        """The settled share; NaN for a night without matcher rows (nothing to rate)."""
        total = sum(self.counts.values())
        return self.settled / total if total else math.nan


def _open(table: Any = discrepancies) -> list[ColumnElement[bool]]:
    return [table.c.cleared_at.is_(None), table.c.review_status != RESOLVED]


def latest_nights(connection: Connection, allowed: Sequence[str], count: int) -> list[str]:
    """The latest ``count`` nights (oldest first) on which an ``allowed`` property has a finding, a match,
    a run or kept takings."""
    keyed = union(
        *(
            select(table.c.night).where(one_of(table.c.property_id, allowed))
            for table in (discrepancies, matches, night_reconciliations, night_takings)
        )
    ).subquery()
    latest = select(keyed.c.night).distinct().order_by(keyed.c.night.desc()).limit(count)
    return sorted(connection.execute(latest).scalars())


def open_currencies(connection: Connection, allowed: Sequence[str], nights: Sequence[str]) -> list[str]:
    """The currencies of the open findings of ``nights``, the most findings first (amounts in different
    currencies do not compare: a yen is not a euro)."""
    d = discrepancies.c
    statement = (
        select(d.currency)
        .where(one_of(d.property_id, allowed), d.night.in_(nights), *_open())
        .group_by(d.currency)
        .order_by(func.count().desc(), d.currency)
    )
    return list(connection.execute(statement).scalars())


def open_money(
    connection: Connection, allowed: Sequence[str], nights: Sequence[str], currency: str
) -> list[OpenMoney]:
    """Open money per property, night and category in ``currency``."""
    d = discrepancies.c
    statement = (
        select(d.property_id, d.night, d.category, func.sum(func.abs(d.difference_minor)).label("amount"))
        .where(one_of(d.property_id, allowed), d.night.in_(nights), d.currency == currency, *_open())
        .group_by(d.property_id, d.night, d.category)
        .order_by(d.property_id, d.night, d.category)
    )
    return [
        OpenMoney(row.property_id, row.night, row.category, int(row.amount))
        for row in connection.execute(statement)
    ]


def by_category(rows: Sequence[OpenMoney]) -> dict[str, dict[str, int]]:
    """Open money per category, then night (pure); categories the most money first."""
    sums: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        sums[row.category][row.night] += row.amount_minor
    ordered = sorted(sums.items(), key=lambda item: (-sum(item[1].values()), item[0]))
    return {category: dict(nights) for category, nights in ordered}


def by_property_night(rows: Sequence[OpenMoney]) -> dict[tuple[str, str], int]:
    """Open money per (property, night) (pure)."""
    sums: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        sums[(row.property_id, row.night)] += row.amount_minor
    return dict(sums)


def worst_first(sums: dict[tuple[str, str], int], properties: Sequence[str]) -> list[str]:
    """``properties`` ordered by their open money, the most first (pure)."""
    totals: dict[str, int] = defaultdict(int)
    for (property_id, _night), amount in sums.items():
        totals[property_id] += amount
    return sorted(properties, key=lambda property_id: (-totals[property_id], property_id))


def open_by_age(connection: Connection, allowed: Sequence[str], now: datetime) -> list[AgeBucket]:
    """Every open finding of ``allowed`` properties (any night), counted by how long ago it was detected
    and by review state (open, acknowledged)."""
    d = discrepancies.c
    bounds = [days for days, _label in AGE_BUCKETS if days is not None]
    bucket = case(
        *((d.detected_at > now - timedelta(days=days), at) for at, days in enumerate(bounds)),
        else_=len(bounds),
    ).label("bucket")
    statement = (
        select(bucket, d.review_status, func.count().label("n"))
        .where(one_of(d.property_id, allowed), *_open())
        .group_by(bucket, d.review_status)
    )
    counts: dict[tuple[int, str], int] = {
        (int(row.bucket), row.review_status): int(row.n) for row in connection.execute(statement)
    }
    return [
        AgeBucket(label, counts.get((at, "open"), 0), counts.get((at, "acknowledged"), 0))
        for at, (_days, label) in enumerate(AGE_BUCKETS)
    ]


def night_matches(
    connection: Connection, allowed: Sequence[str], nights: Sequence[str]
) -> list[NightMatches]:
    """Each of ``nights``' current (not cleared) matcher rows by status, over ``allowed`` properties."""
    m = matches.c
    statement = (
        select(m.night, m.status, func.count().label("n"))
        .where(one_of(m.property_id, allowed), m.night.in_(nights), m.cleared_at.is_(None))
        .group_by(m.night, m.status)
    )
    counts: dict[str, dict[str, int]] = {night: {} for night in nights}
    for row in connection.execute(statement):
        counts[row.night][row.status] = int(row.n)
    return [NightMatches(night, counts[night]) for night in nights]


def latest_close(connection: Connection, allowed: Sequence[str]) -> tuple[str, str] | None:
    """The property-night whose close the overview shows: the latest night with kept takings, of the first
    ``allowed`` property (by id) that has it; None when no night kept any."""
    t = night_takings.c
    statement = (
        select(t.property_id, t.night)
        .where(one_of(t.property_id, allowed))
        .order_by(t.night.desc(), t.property_id)
        .limit(1)
    )
    row = connection.execute(statement).first()
    return None if row is None else (row.property_id, row.night)


def night_close(
    connection: Connection, key: tuple[str, str] | None, allowed: tuple[str, ...]
) -> NightTakings:
    """The close of ``key`` (takings per tender, cards per brand on both sides), as the night page shows."""
    return NightTakings() if key is None else kept_takings(connection, *key, allowed)
