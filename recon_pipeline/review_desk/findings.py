"""The findings a review desk user may see: ``review.store``'s filter, narrowed to their properties.

Every query here takes the user's properties and applies them in SQL, so no page can show a finding of
another property whatever its URL or filter says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, RowMapping, Select, select

from recon_pipeline.db.schema import discrepancies
from recon_pipeline.keys import parse_night
from recon_pipeline.review.rules import DiscrepancyFilter
from recon_pipeline.review.store import matching_conditions

PAGE_SIZE = 200


@dataclass(frozen=True)
class FindingQuery:
    """A findings page's filters: ``review.rules.DiscrepancyFilter`` plus a night range and an amount."""

    where: DiscrepancyFilter
    night_from: str | None = None
    night_to: str | None = None
    amount_at_least: int | None = None  # minor units, compared with the absolute difference

    def __post_init__(self) -> None:
        for night in (self.night_from, self.night_to):
            if night is not None:
                parse_night(night)
        if self.amount_at_least is not None and self.amount_at_least < 0:
            raise ValueError("amount at least must not be negative")


def list_findings(
    connection: Connection,
    query: FindingQuery,
    allowed: tuple[str, ...],
    limit: int = PAGE_SIZE,
    offset: int = 0,
) -> list[RowMapping]:
    """The matching findings of ``allowed`` properties, newest night first, at most ``limit`` after
    skipping ``offset``."""
    return list(connection.execute(findings_statement(query, allowed, limit, offset)).mappings())


def findings_statement(
    query: FindingQuery, allowed: tuple[str, ...], limit: int, offset: int = 0
) -> Select[Any]:
    """Every column of the findings ``list_findings`` returns, in its order: the page, its count and its
    exports run this same statement, so an export holds exactly the rows the list shows (up to its own
    limit). The id ends the order, so pages never overlap."""
    column = discrepancies.c
    conditions = [*matching_conditions(query.where), column.property_id.in_(allowed)]
    if query.night_from is not None:
        conditions.append(column.night >= query.night_from)
    if query.night_to is not None:
        conditions.append(column.night <= query.night_to)
    if query.amount_at_least is not None:
        amount = query.amount_at_least
        conditions.append((column.difference_minor >= amount) | (column.difference_minor <= -amount))
    return (
        select(discrepancies)
        .where(*conditions)
        .order_by(
            column.night.desc(), column.property_id, column.category, column.record_key, column.discrepancy_id
        )
        .limit(limit)
        .offset(offset)
    )


def get_finding(connection: Connection, discrepancy_id: int, allowed: tuple[str, ...]) -> RowMapping | None:
    """The finding if it exists and is of an ``allowed`` property; None otherwise (the caller's 404)."""
    statement = select(discrepancies).where(
        discrepancies.c.discrepancy_id == discrepancy_id, discrepancies.c.property_id.in_(allowed)
    )
    return connection.execute(statement).mappings().first()
