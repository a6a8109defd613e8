"""Reads of the PMS tables (properties, ledger entries, payment orders, bookings) for property-nights.

The night's inputs (ledger entries, captured payment orders) are read for a batch of properties at once,
one statement per table (``read_*_rows``), and made into each property's frame apart (``*_frame``), so a
batch costs a few round trips rather than a few per property, and a row one property cannot take fails it
alone; ``load_*`` is the one-property form of the same two steps."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import datetime, timedelta
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from sqlalchemy import ColumnElement, Connection, Select, and_, or_, select

from recon_pipeline.db.schema import bookings, ledger_entries, payment_orders, properties
from recon_pipeline.frames import SCOPE
from recon_pipeline.ledger.records import LEDGER_MATCH_KEY_COLUMNS, LEDGER_RECORD_COLUMNS
from recon_pipeline.money import upper_currency
from recon_pipeline.nights import NightWindow
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.cards import brand_of
from recon_pipeline.providers.events import CAPTURED_ORDER_STATUSES
from recon_pipeline.tenders import tender_of

ADJACENT_NIGHT_MARGIN = timedelta(days=1)
IN_CLAUSE_CHUNK = 500
T = TypeVar("T")
_CAPTURED_ORDER_COLUMNS = ("payment_id", "booking_id", "amount_minor", "currency", "captured_at")


class UnknownPropertyError(LookupError):
    """A partition names a property that the ``properties`` table does not hold."""


def load_property(connection: Connection, property_id: str) -> PropertyRow:
    """The property's validated row; UnknownPropertyError or InvalidPropertyError naming it."""
    query = select(*_property_columns()).where(properties.c.property_id == property_id)
    row = connection.execute(query).first()
    if row is None:
        raise UnknownPropertyError(f"property {property_id!r} is not in the properties table")
    return PropertyRow(**row._asdict()).validated()


def list_properties(connection: Connection) -> list[PropertyRow]:
    """Every property's row as stored (not validated: see ``split_valid_properties``), sorted by id."""
    rows = connection.execute(select(*_property_columns()).order_by(properties.c.property_id))
    return [PropertyRow(**row._asdict()) for row in rows]


def _property_columns() -> list[ColumnElement[Any]]:
    """The ``properties`` columns :class:`PropertyRow` declares: the table may carry columns the row does
    not know (yet), and the row is built from its own fields only."""
    return [properties.c[field.name] for field in fields(PropertyRow) if field.name in properties.c]


def load_ledger_records(
    connection: Connection,
    property_id: str,
    window: NightWindow,
    margin: timedelta = ADJACENT_NIGHT_MARGIN,
) -> pd.DataFrame:
    """Ledger entries posted in the night, and in ``margin`` either side (``in_night=False``), as read
    (see :func:`ledger_frame`)."""
    return ledger_frame(read_ledger_rows(connection, {property_id: window}, margin)[property_id], window)


def read_ledger_rows(
    connection: Connection,
    windows: Mapping[str, NightWindow],
    margin: timedelta = ADJACENT_NIGHT_MARGIN,
) -> dict[str, list[dict[str, Any]]]:
    """Each property's ledger rows posted in its night widened by ``margin``, in posting order: one
    statement per :data:`IN_CLAUSE_CHUNK` properties (a batch's input read at once, see
    ``batches/read.py``). Rows only: each property's frame is built apart (:func:`ledger_frame`), so a
    row that breaks it fails that property alone."""
    wide = {property_id: window.widened(margin) for property_id, window in windows.items()}
    columns = [
        bookings.c.group_id if name == "group_id" else ledger_entries.c[name]
        for name in LEDGER_RECORD_COLUMNS
        if name != "in_night"
    ]
    booked = ledger_entries.outerjoin(bookings, bookings.c.booking_id == ledger_entries.c.booking_id)
    query = (
        select(*columns).select_from(booked).order_by(ledger_entries.c.posted_at, ledger_entries.c.entry_id)
    )
    return _rows_by_property(
        connection, query, ledger_entries.c.property_id, ledger_entries.c.posted_at, wide
    )


def ledger_frame(rows: Sequence[Mapping[str, Any]], window: NightWindow) -> pd.DataFrame:
    """The ledger-record frame of one property's rows (:func:`read_ledger_rows`), ``in_night`` per
    ``window``: :func:`ledger_frames` of one night."""
    return ledger_frames([(rows, window)]).drop(columns=SCOPE)


def ledger_frames(nights: Sequence[tuple[Sequence[Mapping[str, Any]], NightWindow]]) -> pd.DataFrame:
    """The ledger-record frame of many property-nights' rows at once, each row ``in_night`` per its own
    night's window and carrying its night's position (``frames.SCOPE``): a batch pays pandas' fixed
    costs once, and ``frames.pieces`` hands each night its rows.

    Currencies are upper-cased (the PMS may store ``usd``), card brands read in one vocabulary (``VA`` is
    ``visa``), tenders in theirs (``Cash`` is ``cash``, ``tenders.py``); the other card keys are as read;
    amounts, kinds, currencies and tenders are otherwise
    unchecked (``amount_minor`` is object): :func:`~recon_pipeline.ledger.validation.split_ledger_records`
    turns the rows the contract forbids into findings.
    """
    rows = [row for night_rows, _ in nights for row in night_rows]
    sizes = [len(night_rows) for night_rows, _ in nights]
    frame = pd.DataFrame(
        {
            name: pd.Series([row.get(name) for row in rows], dtype="object")
            if name in LEDGER_MATCH_KEY_COLUMNS  # a row read before the PMS had them: null
            else pd.Series([row[name] for row in rows], dtype="object")
            for name in LEDGER_RECORD_COLUMNS
            if name != "in_night"
        }
    )
    # Column by column, each to its dtype (a whole-frame astype costs as much again as building it).
    frame["currency"] = frame["currency"].map(upper_currency).astype("object")
    # the PMS may store "VISA" or "VA"; a list, not Series.map, which would turn None into NaN
    frame["card_brand"] = pd.Series([_brand(brand) for brand in frame["card_brand"]], dtype="object")
    frame["tender"] = pd.Series([_tender(tender) for tender in frame["tender"]], dtype="object")
    frame["posted_at"] = pd.to_datetime(frame["posted_at"], utc=True).astype(
        LEDGER_RECORD_COLUMNS["posted_at"]
    )
    posted = frame["posted_at"].to_numpy(dtype="datetime64[ns]")
    starts = np.repeat(np.array([_utc(window.start) for _, window in nights], dtype="datetime64[ns]"), sizes)
    ends = np.repeat(np.array([_utc(window.end) for _, window in nights], dtype="datetime64[ns]"), sizes)
    frame["in_night"] = (posted >= starts) & (posted < ends)
    frame[SCOPE] = np.repeat(np.arange(len(nights), dtype=np.int64), sizes)
    return frame


def _utc(moment: datetime) -> np.datetime64:
    """An aware datetime as a naive UTC numpy instant, comparable with a UTC column's values."""
    return np.datetime64(pd.Timestamp(moment).tz_convert("UTC").tz_localize(None), "ns")


def _tender(tender: object) -> object:
    """A tender in its vocabulary (``tenders.py``) where it is one; anything else is kept as written, for
    :func:`~recon_pipeline.ledger.validation.split_ledger_records` to name in its finding."""
    try:
        return tender_of(tender)
    except ValueError:
        return tender


def _brand(brand: object) -> object:
    """A card brand in the one vocabulary (``providers/cards.py``); NULL, blank, a spelling nobody knows
    or a non-text value (the PMS wrote it) is null."""
    return brand_of(brand) if isinstance(brand, str) else None


def read_captured_order_rows(
    connection: Connection, windows: Mapping[str, NightWindow]
) -> dict[str, list[dict[str, Any]]]:
    """Each property's payment orders captured in its night, as :func:`read_ledger_rows` reads entries
    (rows only; :func:`captured_orders_frame` makes one property's frame)."""
    columns = (
        payment_orders.c.property_id,
        payment_orders.c.provider_payment_id.label("payment_id"),
        payment_orders.c.booking_id,
        payment_orders.c.amount_minor,
        payment_orders.c.currency,
        payment_orders.c.captured_at,
    )
    query = select(*columns).where(payment_orders.c.status.in_(CAPTURED_ORDER_STATUSES))
    return _rows_by_property(
        connection, query, payment_orders.c.property_id, payment_orders.c.captured_at, windows
    )


def captured_orders_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One property's captured payment orders (:func:`read_captured_order_rows`) as the orphan detection
    reads them: typed, currencies upper-cased, ``source`` ``payment_orders``."""
    frame = pd.DataFrame.from_records(
        [{name: row[name] for name in _CAPTURED_ORDER_COLUMNS} for row in rows],
        columns=list(_CAPTURED_ORDER_COLUMNS),
    )
    frame["captured_at"] = pd.to_datetime(frame["captured_at"], utc=True)
    frame["amount_minor"] = frame["amount_minor"].astype("int64")
    frame["currency"] = frame["currency"].map(upper_currency)
    frame["source"] = "payment_orders"
    return frame


def _rows_by_property(
    connection: Connection,
    query: Select[Any],
    property_column: ColumnElement[str],
    time_column: ColumnElement[datetime],
    windows: Mapping[str, NightWindow],
) -> dict[str, list[dict[str, Any]]]:
    """``query``'s rows (it selects ``property_id``) whose ``time_column`` is in their property's window,
    :data:`IN_CLAUSE_CHUNK` properties per statement, split by property (every property of ``windows``
    has a list, maybe empty, in ``query``'s order).

    The properties sharing a window (one time zone and cutoff) are one ``property_id IN (…) AND start <=
    time < end`` term of an OR: the statement stays small, and each term can use the (property, time)
    index."""
    found: dict[str, list[dict[str, Any]]] = {property_id: [] for property_id in windows}
    for chunk in in_chunks(sorted(windows), IN_CLAUSE_CHUNK):
        sharing: dict[tuple[datetime, datetime], list[str]] = {}
        for property_id in chunk:
            window = windows[property_id]
            sharing.setdefault((window.start, window.end), []).append(property_id)
        condition = or_(
            *(
                and_(property_column.in_(ids), time_column >= start, time_column < end)
                for (start, end), ids in sharing.items()
            )
        )
        for row in connection.execute(query.where(condition)).mappings():
            found[row["property_id"]].append(dict(row))
    return found


def load_booking_statuses(connection: Connection, booking_ids: Iterable[str]) -> dict[str, str]:
    """Booking id → status of the given bookings (ids absent from the table are absent from the map): a
    batch's, read at once, which each night's conclusions look up by id."""
    wanted = sorted({booking_id for booking_id in booking_ids if isinstance(booking_id, str)})
    statuses: dict[str, str] = {}
    for chunk in in_chunks(wanted, IN_CLAUSE_CHUNK):
        query = select(bookings.c.booking_id, bookings.c.status).where(bookings.c.booking_id.in_(chunk))
        statuses.update((booking_id, status) for booking_id, status in connection.execute(query))
    return statuses


def in_chunks(items: Sequence[T], size: int = IN_CLAUSE_CHUNK) -> Iterable[Sequence[T]]:
    """``items`` in runs of ``size``: the ids one ``IN`` list carries (its parameters stay bounded)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def read_booking_groups(connection: Connection, property_ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """Per property, booking id → group id of its bookings in a group (``bookings.group_id``): the group of a
    charge's booking, which may hold no posting of its own (a group's master reservation). Every property of
    ``property_ids`` has a mapping, maybe empty; one statement per :data:`IN_CLAUSE_CHUNK` properties."""
    found: dict[str, dict[str, str]] = {property_id: {} for property_id in property_ids}
    for chunk in in_chunks(sorted(found)):
        query = select(bookings.c.property_id, bookings.c.booking_id, bookings.c.group_id).where(
            bookings.c.property_id.in_(chunk), bookings.c.group_id.is_not(None)
        )
        for property_id, booking_id, group_id in connection.execute(query):
            found[property_id][booking_id] = group_id
    return found


def load_payment_order_owners(connection: Connection, payment_ids: Iterable[str]) -> dict[str, str]:
    """provider_payment_id → property_id of the ``payment_orders`` rows among ``payment_ids`` (attribution
    of payments whose provider record names no property)."""
    wanted = sorted(set(payment_ids))
    owners: dict[str, str] = {}
    for chunk in in_chunks(wanted, IN_CLAUSE_CHUNK):
        query = select(payment_orders.c.provider_payment_id, payment_orders.c.property_id).where(
            payment_orders.c.provider_payment_id.in_(chunk)
        )
        owners.update({payment_id: property_id for payment_id, property_id in connection.execute(query)})
    return owners


def load_authorized_payment_orders(
    connection: Connection, property_ids: Sequence[str]
) -> dict[str, dict[str, str | None]]:
    """Per property, provider_payment_id → booking_id of its payment orders in ``authorized``: the holds
    the PMS knows are open, whatever night they were authorized in (a hold lasts days). Every property of
    ``property_ids`` has a mapping, maybe empty; one statement per :data:`IN_CLAUSE_CHUNK` properties."""
    found: dict[str, dict[str, str | None]] = {property_id: {} for property_id in property_ids}
    for chunk in in_chunks(sorted(found)):
        query = select(
            payment_orders.c.property_id, payment_orders.c.provider_payment_id, payment_orders.c.booking_id
        ).where(payment_orders.c.property_id.in_(chunk), payment_orders.c.status == "authorized")
        for property_id, payment_id, booking_id in connection.execute(query):
            found[property_id][payment_id] = booking_id
    return found
