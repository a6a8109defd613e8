"""The two sides the matcher pairs, with their keys normalised so that equal keys compare equal.

Candidates are the provider records no ledger entry names by (provider_record_id, kind), and the ledger
entries (not adjustments) that name no provider record at all: everything else the diff matches by id.
A PMS writes a card as "VISA", "Visa ", "VA" or "visa" and its last four as "**** 4242"; a provider writes
"visa" and "4242": both become ``visa`` and ``4242`` here once, so every tier compares plain values.
Optional columns (cards, approval codes, references) may be absent from either frame: absent is null.

The sides are plain numpy columns (:class:`Table`), read out of the frames once: a night of a few dozen
rows then costs microseconds per step where a pandas call costs a millisecond.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

from recon_pipeline.categories import kind_codes
from recon_pipeline.frames import SCOPE, present
from recon_pipeline.providers.cards import brand_of
from recon_pipeline.reconcile.grouping import IdBytes, group_keys

ADJUSTMENT: Final = "adjustment"
NO_TIME: Final = np.iinfo(np.int64).min  # NaT as int64 nanoseconds: never within a window


class Table:
    """Named numpy columns of one length (text as object arrays)."""

    __slots__ = ("columns", "size")

    def __init__(self, columns: Mapping[str, np.ndarray], size: int | None = None) -> None:
        self.columns = dict(columns)
        self.size = len(next(iter(self.columns.values()))) if size is None else size

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def __len__(self) -> int:
        return self.size

    def take(self, rows: np.ndarray) -> Table:
        """The rows at ``rows`` (positions or a mask)."""
        taken = {name: values[rows] for name, values in self.columns.items()}
        return Table(taken, len(np.flatnonzero(rows)) if rows.dtype == bool else len(rows))

    def with_columns(self, **columns: np.ndarray) -> Table:
        return Table(self.columns | columns, self.size)


@dataclass(frozen=True)
class Sides:
    """Candidate records and entries (``at``: each row's position in its input frame) and each record's
    figures: its presentment figure, and a conversion's settlement figure as a second row."""

    records: Table
    entries: Table
    figures: Table  # r (row of ``records``), kind, currency, amount
    named: np.ndarray  # per provider record: some keyed ledger entry names it (the diff matches it by id)

    @property
    def exact_id(self) -> int:
        return int(np.count_nonzero(self.named))


def scopes(frame: pd.DataFrame) -> np.ndarray:
    """Each row's scope: the stacked frame's ``SCOPE`` column, else 0 (one night)."""
    if SCOPE in frame.columns:
        return frame[SCOPE].to_numpy(dtype=np.int64)
    return np.zeros(len(frame), dtype=np.int64)


def unkeyed_entries(ledger: pd.DataFrame) -> np.ndarray:
    """Positions of the entries that are matching candidates: no provider id, and not an adjustment."""
    unkeyed = ledger["provider_record_id"].isna().to_numpy()
    return np.flatnonzero(unkeyed & (ledger["kind"].to_numpy() != ADJUSTMENT))


def named_by_ledger(provider_records: pd.DataFrame, ledger: pd.DataFrame) -> np.ndarray:
    """Per provider record, whether some keyed ledger entry (not an adjustment) of its scope carries its
    key (provider_record_id, kind)."""
    if provider_records.empty:
        return np.zeros(0, dtype=bool)
    ids = IdBytes.of(ledger["provider_record_id"])
    keyed = ~ids.null & (ledger["kind"].to_numpy() != ADJUSTMENT)
    groups = group_keys(
        (IdBytes.of(provider_records["provider_record_id"]), kind_codes(provider_records["kind"].to_numpy())),
        (ids.select(keyed), kind_codes(ledger["kind"].to_numpy()[keyed])),
    )
    # one flag per (key, scope): a single night is scope 0 of 1, and the key's number alone
    record_scope, entry_scope = scopes(provider_records), scopes(ledger)[keyed]
    count = int(max(record_scope.max(initial=0), entry_scope.max(initial=0))) + 1
    booked = np.zeros(groups.count * count, dtype=bool)
    booked[groups.groups[1] * count + entry_scope] = True
    return booked[groups.groups[0] * count + record_scope]


def candidate_sides(
    provider_records: pd.DataFrame, ledger: pd.DataFrame, entries_at: np.ndarray, taken: np.ndarray
) -> Sides:
    """The candidates of one night: records no ledger row names (in-night or adjacent), but for the
    positions ``taken`` (a decided match's), and the entries at ``entries_at``."""
    named = named_by_ledger(provider_records, ledger)
    free = ~named
    free[taken] = False
    records = record_keys(provider_records, np.flatnonzero(free))
    records = records.with_columns(group=_groups_of(records, ledger))
    return Sides(records, entry_keys(ledger, entries_at), _figures(records), named)


def with_groups(provider_records: pd.DataFrame, group_of: Mapping[str, str]) -> pd.DataFrame:
    """The records with the ``group_id`` of their booking (``bookings.group_id``: a group's charge is often
    taken on its master booking, which holds no posting to say its group); the frame itself when no
    booking is in a group."""
    if not group_of or provider_records.empty:
        return provider_records
    groups = provider_records["booking_id"].map(dict(group_of))
    return provider_records.assign(group_id=groups.astype(object).where(groups.notna(), None))


def _groups_of(records: Table, ledger: pd.DataFrame) -> np.ndarray:
    """Each record's group: its own ``group_id`` (:func:`with_groups`), else the one the ledger's entries
    of its booking carry (null if none)."""
    groups = records["group_id"].copy()
    missing = pd.isna(groups)
    if missing.any():
        groups[missing] = _ledger_groups(records["booking"][missing], records["scope"][missing], ledger)
    return groups


def _ledger_groups(bookings: np.ndarray, scope: np.ndarray, ledger: pd.DataFrame) -> np.ndarray:
    """The ``group_id`` the ledger's entries of each booking (of its scope) carry (null if none)."""
    groups = np.full(len(bookings), None, dtype=object)
    if "group_id" not in ledger.columns or not len(bookings):
        return groups
    grouped = ledger["group_id"].to_numpy(dtype=object)
    known = pd.notna(grouped)
    if not known.any():
        return groups
    booked = texts(ledger["booking_id"].to_numpy(dtype=object)[known])
    in_scope = scopes(ledger)[known]
    keys = zip(in_scope.tolist(), booked.tolist(), strict=True)
    group_of = dict(zip(keys, grouped[known].tolist(), strict=True))
    groups[:] = [group_of.get(key) for key in zip(scope.tolist(), bookings.tolist(), strict=True)]
    return groups



def record_keys(frame: pd.DataFrame, at: np.ndarray) -> Table:
    """The provider records at ``at``, one row each, with their keys normalised."""
    column = _reader(frame, at)
    settlement = column("settlement_amount_minor")
    converted = np.array([present(value) for value in settlement], dtype=bool)
    settles = column("settlement_currency")
    currency = column("currency")
    return Table(
        {
            "at": at.astype(np.int64),
            "scope": scopes(frame)[at],
            "record_id": column("provider_record_id"),
            "charge_id": column("charge_id"),
            "intent_id": column("payment_intent_id"),
            "kind": column("kind"),
            "booking": texts(column("booking_id")),
            "group_id": texts(column("group_id")),
            "brand": brands(column("card_brand")),
            "last4": last_fours(column("card_last4")),
            "approval": codes(column("approval_code")),
            "created": times(frame["created_at"])[at],
            "settled": frame["settled"].to_numpy(dtype=bool)[at],
            "currency": currency,
            "amount": frame["amount_minor"].to_numpy(dtype=np.int64)[at],
            # a conversion to another currency; one settling in its own currency has one figure
            "converted": converted & (settles != currency),
            "settlement_currency": settles,
            "settlement_amount": np.array(
                [int(v) if ok else 0 for v, ok in zip(settlement, converted, strict=True)], dtype=np.int64
            ),
        },
        len(at),
    )


def entry_keys(frame: pd.DataFrame, at: np.ndarray) -> Table:
    """The ledger entries at ``at``, one row each, with their keys normalised."""
    column = _reader(frame, at)
    return Table(
        {
            "at": at.astype(np.int64),
            "scope": scopes(frame)[at],
            "entry_id": column("entry_id"),
            "kind": column("kind"),
            "booking": texts(column("booking_id")),
            "group": texts(column("group_id")),
            "brand": brands(column("card_brand")),
            "last4": last_fours(column("card_last4")),
            "approval": codes(column("approval_code")),
            "reference": column("reference"),
            "posted": times(frame["posted_at"])[at],
            "in_night": frame["in_night"].to_numpy(dtype=bool)[at],
            "currency": column("currency"),
            "amount": frame["amount_minor"].to_numpy(dtype=np.int64)[at],
        },
        len(at),
    )


def optional_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A column as an object array of its own (nulls as None); a column the frame lacks is null."""
    if name not in frame.columns:
        return np.full(len(frame), None, dtype=object)
    values = frame[name].to_numpy(dtype=object, copy=True)
    values[pd.isna(values)] = None
    return values


def _reader(frame: pd.DataFrame, at: np.ndarray) -> Callable[[str], np.ndarray]:
    """Reads a column at ``at`` as an object array (nulls as None); a column the frame lacks is null."""

    def column(name: str) -> np.ndarray:
        if name not in frame.columns:
            return np.full(len(at), None, dtype=object)
        values = frame[name].to_numpy(dtype=object)[at]
        if len(values):
            values[pd.isna(values)] = None
        return values

    return column


def _figures(records: Table) -> Table:
    """Each record's figure in its presentment currency and, for a conversion, in its settlement one."""
    rows = np.arange(len(records), dtype=np.int64)
    converted = records["converted"]
    return Table(
        {
            "r": np.concatenate([rows, rows[converted]]),
            "scope": np.concatenate([records["scope"], records["scope"][converted]]),
            "kind": np.concatenate([records["kind"], records["kind"][converted]]),
            "currency": np.concatenate([records["currency"], records["settlement_currency"][converted]]),
            "amount": np.concatenate([records["amount"], records["settlement_amount"][converted]]),
        }
    )


def times(column: pd.Series) -> np.ndarray:
    """Timestamps as int64 nanoseconds since the epoch (NaT as NO_TIME)."""
    return column.to_numpy(dtype="datetime64[ns]").view(np.int64)


def _each(values: np.ndarray, clean: Callable[[str], Any]) -> np.ndarray:
    """``clean`` of each distinct value's stripped text (a night repeats its brands and codes); null and
    empty text are None."""
    found, distinct = pd.factorize(values)
    cleaned = np.full(len(distinct) + 1, None, dtype=object)  # the last one stands for null (code -1)
    for position, value in enumerate(distinct):
        text = str(value).strip()
        cleaned[position] = clean(text) if text else None
    return cleaned[found]


def texts(values: np.ndarray) -> np.ndarray:
    """Free identifiers (booking ids) stripped; empty is null."""
    return _each(values, lambda text: text)


def codes(values: np.ndarray) -> np.ndarray:
    """Approval codes stripped and upper case; empty is null."""
    return _each(values, str.upper)


def brands(values: np.ndarray) -> np.ndarray:
    """Card brands in the one vocabulary (``providers/cards.py``: ``VA`` and ``Visa`` are visa); a spelling
    nobody knows is null, "brand unknown", never a different card."""
    return _each(values, brand_of)


def last_fours(values: np.ndarray) -> np.ndarray:
    """The last four digits of what was written (``**** 4242`` is ``4242``); fewer than four is null."""

    def last4(text: str) -> str | None:
        digits = "".join(ch for ch in text if ch.isdigit())
        return digits[-4:] if len(digits) >= 4 else None

    return _each(values, last4)
