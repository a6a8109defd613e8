"""Reads of the ``discrepancies`` table for reports, as frames typed from the selected columns themselves;
and of a property-night's matches and takings.

The columns come from the query (``select(discrepancies)`` is every column of the table), not from a
list kept here, so a column added to the table appears in every export without touching this module.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pandas as pd
from sqlalchemy import Connection, Select, select
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import Integer, String

from recon_pipeline.categories import ORPHANED_CAPTURED_PAYMENT
from recon_pipeline.db.schema import bookings, discrepancies, matches, night_takings, payment_orders
from recon_pipeline.db.types import UtcDateTime
from recon_pipeline.reconcile.takings import NightTakings, Takings

# Findings someone still has to act on: acknowledged ones are seen, not settled.
UNRESOLVED_STATUSES = ("open", "acknowledged")
TIMESTAMP_DTYPE = "datetime64[us, UTC]"  # the databases keep microseconds


def read_frame(connection: Connection, query: Select[tuple[object, ...]]) -> pd.DataFrame:
    """The query's rows with one column per selected column: integers Int64, text string, timestamps UTC."""
    columns = list(query.selected_columns)
    rows = connection.execute(query).all()
    return pd.DataFrame(
        {column.key: _typed([row[index] for row in rows], column) for index, column in enumerate(columns)},
        columns=[column.key for column in columns],
    )


def partition_findings(connection: Connection, property_id: str, night: str) -> pd.DataFrame:
    """Every column of the partition's rows in ``discrepancies``, ordered by (category, record_key)."""
    return read_frame(
        connection,
        select(discrepancies)
        .where(discrepancies.c.property_id == property_id, discrepancies.c.night == night)
        .order_by(discrepancies.c.category, discrepancies.c.record_key),
    )


def partition_matches(connection: Connection, property_id: str, night: str) -> pd.DataFrame:
    """Every column of the partition's current rows of ``matches`` (the latest run's, and every person's
    decision), suggestions first, then by rule and match key."""
    c = matches.c
    return read_frame(
        connection,
        select(matches)
        .where(c.property_id == property_id, c.night == night, c.cleared_at.is_(None))
        .order_by(c.status != "suggested", c.rule, c.match_key),
    )


def partition_takings(connection: Connection, property_id: str, night: str) -> NightTakings:
    """The property-night's takings as its latest run kept them (``night_takings``); none for a night not
    reconciled since takings were kept."""
    t = night_takings.c
    rows = connection.execute(
        select(t.side, t.grouped_by, t.name, t.currency, t.movements, t.amount_minor)
        .where(t.property_id == property_id, t.night == night)
        .order_by(t.side, t.grouped_by, t.name, t.currency)
    ).all()
    return NightTakings(tuple(Takings(*row) for row in rows))


def findings_between(connection: Connection, property_id: str, first: date, last: date) -> pd.DataFrame:
    """Night, category, currency and difference of the property's outstanding (not cleared) findings from
    ``first`` to ``last``."""
    c = discrepancies.c
    return read_frame(
        connection,
        select(c.night, c.category, c.currency, c.difference_minor)
        .where(c.property_id == property_id, c.night >= first.isoformat(), c.night <= last.isoformat())
        .where(c.cleared_at.is_(None))
        .order_by(c.night, c.category, c.record_key),
    )


def unresolved_findings(connection: Connection) -> pd.DataFrame:
    """Every open or acknowledged finding of every property and night that a later run has not cleared
    (the columns the overview needs)."""
    c = discrepancies.c
    return read_frame(
        connection,
        select(c.property_id, c.night, c.category, c.currency, c.difference_minor, c.review_status)
        .where(c.review_status.in_(UNRESOLVED_STATUSES), c.cleared_at.is_(None))
        .order_by(c.property_id, c.night, c.category, c.record_key),
    )


def unresolved_orphaned_payments(connection: Connection) -> pd.DataFrame:
    """Open or acknowledged orphaned captured payments, not cleared, with their capture time and the
    booking's state now.

    ``captured_at`` comes from ``payment_orders`` (null when the PMS never recorded the payment);
    ``booking_status`` is the booking's current status (null when the booking does not exist).
    """
    c = discrepancies.c
    query = (
        select(
            c.property_id,
            c.night,
            c.provider_record_id.label("payment_id"),
            c.booking_id,
            bookings.c.status.label("booking_status"),
            c.provider_amount_minor.label("amount_minor"),
            c.currency,
            payment_orders.c.captured_at,
            c.detected_at,
            c.review_status,
        )
        .outerjoin(payment_orders, payment_orders.c.provider_payment_id == c.provider_record_id)
        .outerjoin(bookings, bookings.c.booking_id == c.booking_id)
        .where(c.category == ORPHANED_CAPTURED_PAYMENT, c.review_status.in_(UNRESOLVED_STATUSES))
        .where(c.cleared_at.is_(None))
        .order_by(c.property_id, c.night, c.record_key)
    )
    return read_frame(connection, query)


def _typed(values: list[object], column: ColumnElement[Any]) -> pd.Series:
    if isinstance(column.type, UtcDateTime):
        return pd.to_datetime(pd.Series(values, dtype="object"), utc=True).astype(TIMESTAMP_DTYPE)
    if isinstance(column.type, Integer):
        return pd.Series(values, dtype="Int64")
    if isinstance(column.type, String):
        return pd.Series(values, dtype="string")
    return pd.Series(values, dtype="object")
