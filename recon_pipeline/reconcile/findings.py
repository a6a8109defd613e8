"""The diff's findings as rows: each finding's columns of the finding frame and its one sentence.

The diff (``reconcile/diff.py``) decides which records and entries are findings, as positions into its
input frames; this module reads only those rows out of the frames, states each finding in the contract's
columns (amounts, difference, the ``record_key`` that names it across runs) and says in one human
sentence why it is one. It runs per finding only, never per input row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeAlias

import numpy as np
import pandas as pd

from recon_pipeline.categories import (
    AMOUNT_MISMATCH,
    CURRENCY_MISMATCH,
    DUPLICATE_IN_LEDGER,
    FINDING_COLUMNS,
    FX_DIFFERENCE,
    MISSING_AT_PROVIDER,
    MISSING_IN_LEDGER,
    finding_frame,
)
from recon_pipeline.frames import SCOPE, present
from recon_pipeline.money import format_minor, minor_unit_exponent

Rows: TypeAlias = dict[str, list[Any]]  # finding columns (or input columns) as aligned lists
_FIGURE_FIELDS: Final = ("amount_minor", "currency", "settlement_amount_minor", "settlement_currency")
_PROVIDER_FIELDS: Final = ("provider_record_id", "kind", "booking_id", "status", *_FIGURE_FIELDS, SCOPE)
_LEDGER_FIELDS: Final = (
    "entry_id", "provider_record_id", "kind", "booking_id", "amount_minor", "currency", SCOPE
)  # fmt: skip


class Findings:
    """Builds the finding rows as plain columns; runs per finding only, never per input row.

    The frames are stacked nights (``frames.SCOPE``): each row keeps its night, whose property's
    tolerance and currency (``tolerance_bps`` and ``property_currency``, one per night) state it."""

    def __init__(
        self,
        provider_records: pd.DataFrame,
        elsewhere: pd.DataFrame,
        ledger_records: pd.DataFrame,
        tolerance_bps: Sequence[int],
        property_currency: Sequence[str | None],
    ) -> None:
        self._provider = _Columns(provider_records)
        self._elsewhere = _Columns(elsewhere)
        self._ledger = _Columns(ledger_records)
        self._tolerance_bps = tolerance_bps
        self._property_currency = property_currency

    def missing_in_ledger(self, records: np.ndarray) -> Rows:
        """A settled record nobody booked, stated in the figure its ``post_missing_<kind>`` posts.

        That is the presentment figure, except for a conversion that settled in the property's currency:
        the PMS books in the property's currency and the account received the settlement figure, so
        posting the presentment amount would book a foreign currency the PMS does not keep (a
        ``currency_mismatch`` against the same record on the next run). The detail names both figures."""
        record = self._provider.take(records, _PROVIDER_FIELDS)
        detail = [
            f"provider {kind} {rid} of {_figure(*figures)} settled but the ledger has no entry for it"
            for kind, rid, *figures in _columns(record, "kind", "provider_record_id", *_FIGURE_FIELDS)
        ]
        at_settlement = [
            present(settled) and settled_currency == self._property_currency[scope] != currency
            for currency, settled, settled_currency, scope in _columns(
                record, "currency", "settlement_amount_minor", "settlement_currency", SCOPE
            )
        ]
        if any(at_settlement):
            record = record | {
                "amount_minor": [
                    int(settled) if settles else amount
                    for amount, settled, settles in zip(
                        record["amount_minor"], record["settlement_amount_minor"], at_settlement, strict=True
                    )
                ],
                "currency": [
                    settled_currency if settles else currency
                    for currency, settled_currency, settles in zip(
                        record["currency"], record["settlement_currency"], at_settlement, strict=True
                    )
                ],
            }
        return _rows(MISSING_IN_LEDGER, record, None, difference=record["amount_minor"], detail=detail)

    def pairs(self, category: str, records: np.ndarray, entries: np.ndarray, elsewhere: bool = False) -> Rows:
        """An amount, FX, currency or status mismatch between a provider record and the entry booking it.

        An FX difference is stated in the settlement currency: its provider amount is the settlement
        amount, and its difference what the entry must change by to equal it."""
        record = (self._elsewhere if elsewhere else self._provider).take(records, _PROVIDER_FIELDS)
        entry = self._ledger.take(entries, _LEDGER_FIELDS)
        across = " (created in another night)" if elsewhere else ""
        sentences = [
            self._sentence(category, kind, f"{rid}{across}", status, figures, booked, scope)
            for (kind, rid, status, scope, *figures), booked in zip(
                _columns(record, "kind", "provider_record_id", "status", SCOPE, *_FIGURE_FIELDS),
                _columns(entry, "entry_id", "amount_minor", "currency"),
                strict=True,
            )
        ]
        if category == FX_DIFFERENCE:
            record = record | {
                "amount_minor": [int(amount) for amount in record["settlement_amount_minor"]],
                "currency": record["settlement_currency"],
            }
        provider_amounts, ledger_amounts = record["amount_minor"], entry["amount_minor"]
        if category in (AMOUNT_MISMATCH, FX_DIFFERENCE):
            difference = [
                paid - posted for paid, posted in zip(provider_amounts, ledger_amounts, strict=True)
            ]
        elif category == CURRENCY_MISMATCH:
            difference = [0] * len(provider_amounts)
        else:  # status mismatch: no money moved at the provider, so the whole entry is the difference
            difference = [-posted for posted in ledger_amounts]
        return _rows(category, record, entry, difference=difference, detail=sentences)

    def _sentence(
        self,
        category: str,
        kind: str,
        record: str,
        status: str,
        figures: list[Any],
        booked: tuple[Any, ...],
        scope: int,
    ) -> str:
        """Why a pair is a finding; a conversion's sentence names both its figures and the rate."""
        eid, posted, posted_cur = booked
        amount, cur, settled, settled_cur = figures
        movement, posts = f"provider {kind} {record}", f"ledger entry {eid} posts"
        if category == AMOUNT_MISMATCH:
            return f"{movement} is {_figure(*figures)} but {posts} {format_minor(posted, posted_cur)}"
        if category == FX_DIFFERENCE:
            off = format_minor(int(settled) - posted, settled_cur)
            return (
                f"{movement} of {_figure(*figures)} but {posts} {format_minor(posted, posted_cur)}, "
                f"{off} off, beyond the property's tolerance of {self._tolerance_bps[scope]} bp"
            )
        if category == CURRENCY_MISMATCH:
            return (
                f"{movement} is in {cur} ({format_minor(amount, cur)}){_settled_as(*figures)} "
                f"but {posts} it in {posted_cur} ({format_minor(posted, posted_cur)})"
            )
        return f"provider status {status} but ledger posted {kind}"

    def missing_at_provider(self, entries: np.ndarray) -> Rows:
        entry = self._ledger.take(entries, _LEDGER_FIELDS)
        return _rows(
            MISSING_AT_PROVIDER,
            None,
            entry,
            difference=[-posted for posted in entry["amount_minor"]],
            detail=[
                f"ledger entry {eid} posts {kind} {rid} of {format_minor(amount, cur)} "
                "but the provider has no such record"
                for eid, kind, rid, amount, cur in _columns(
                    entry, "entry_id", "kind", "provider_record_id", "amount_minor", "currency"
                )
            ],
        )

    def missing_at_provider_unkeyed(self, entries: np.ndarray) -> Rows:
        entry = self._ledger.take(entries, _LEDGER_FIELDS)
        return _rows(
            MISSING_AT_PROVIDER,
            None,
            entry,
            difference=[-posted for posted in entry["amount_minor"]],
            detail=[
                f"ledger entry {eid} posts a {kind} of {format_minor(amount, cur)} "
                "without a provider record id"
                for eid, kind, amount, cur in _columns(entry, "entry_id", "kind", "amount_minor", "currency")
            ],
            record_key=[f"entry:{eid}" for eid in entry["entry_id"]],
        )

    def duplicates(self, extras: np.ndarray, primaries: np.ndarray) -> Rows:
        entry = self._ledger.take(extras, _LEDGER_FIELDS)
        first = self._ledger.take(primaries, ("entry_id",))["entry_id"]
        return _rows(
            DUPLICATE_IN_LEDGER,
            None,
            entry,
            difference=[-posted for posted in entry["amount_minor"]],
            detail=[
                f"ledger entry {eid} posts {kind} {rid} again; entry {primary} already posts it"
                for (eid, kind, rid), primary in zip(
                    _columns(entry, "entry_id", "kind", "provider_record_id"), first, strict=True
                )
            ],
            record_key=[
                f"{rid}:{kind}:dup:{eid}"
                for rid, kind, eid in _columns(entry, "provider_record_id", "kind", "entry_id")
            ],
        )


def _figure(amount: int, currency: str, settled: Any, settled_currency: Any) -> str:
    """A provider amount as people read it; a conversion's also names its settlement figure and rate."""
    return format_minor(amount, currency) + _settled_as(amount, currency, settled, settled_currency)


def _settled_as(amount: int, currency: str, settled: Any, settled_currency: Any) -> str:
    """`` (settled as 92.00 EUR at 1 USD = 0.92 EUR)`` for a conversion, nothing otherwise."""
    if not present(settled):
        return ""
    rate = _rate(amount, currency, settled, settled_currency)
    return f" (settled as {format_minor(int(settled), settled_currency)} at {rate})"


def _rate(amount: int, currency: str, settled: Any, settled_currency: str) -> str:
    """The conversion's effective rate in major units, ``1 USD = 0.92 EUR`` (from the two rounded figures,
    so it may differ from the provider's quoted rate in the last digits)."""
    if amount == 0:
        return f"no rate (0 {currency})"
    exponents = 10 ** minor_unit_exponent(currency), 10 ** minor_unit_exponent(settled_currency)
    rate = (int(settled) * exponents[0]) / (amount * exponents[1])
    return f"1 {currency} = {rate:.6g} {settled_currency}"


class _Columns:
    """A frame's columns as numpy arrays, each read out of the frame once however many findings use it."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self._arrays: dict[str, np.ndarray] = {}

    def take(self, rows: np.ndarray, names: Sequence[str]) -> Rows:
        """The named columns at ``rows`` as Python lists (most kinds of finding have no row at all)."""
        if len(rows) == 0:
            return {name: [] for name in names}
        return {name: self._array(name)[rows].tolist() for name in names}

    def _array(self, name: str) -> np.ndarray:
        array = self._arrays.get(name)
        if array is None:
            array = self._arrays[name] = self._frame[name].to_numpy()
        return array


def _columns(picked: Rows, *names: str) -> zip[tuple[Any, ...]]:
    return zip(*(picked[name] for name in names), strict=True)


def _rows(
    category: str,
    record: Rows | None,
    entry: Rows | None,
    *,
    difference: list[int],
    detail: list[str],
    record_key: list[str] | None = None,
) -> Rows:
    """Finding columns from the provider and/or ledger rows of each finding (aligned, same length)."""
    main = record if record is not None else entry
    assert main is not None
    nothing = [None] * len(difference)
    booking = main["booking_id"]
    if record is not None and entry is not None:
        booking = [
            ours if present(ours) else theirs
            for ours, theirs in zip(booking, entry["booking_id"], strict=True)
        ]
    if record_key is None:
        record_key = [f"{rid}:{kind}" for rid, kind in _columns(main, "provider_record_id", "kind")]
    return {
        "category": [category] * len(difference),
        "record_key": record_key,
        "kind": main["kind"],
        "provider_record_id": main["provider_record_id"],
        "ledger_entry_id": entry["entry_id"] if entry is not None else nothing,
        "booking_id": booking,
        "provider_amount_minor": record["amount_minor"] if record is not None else nothing,
        "ledger_amount_minor": entry["amount_minor"] if entry is not None else nothing,
        "difference_minor": difference,
        "currency": main["currency"],
        "ledger_currency": entry["currency"] if entry is not None else nothing,
        "detail": detail,
        SCOPE: main[SCOPE],
    }


def frame_of(parts: list[Rows]) -> pd.DataFrame:
    """All findings in one frame with their night (``frames.SCOPE``), ordered by night, then by
    (category, record_key)."""
    names = (*FINDING_COLUMNS, SCOPE)
    columns = {name: [value for part in parts for value in part[name]] for name in names}
    keys = list(zip(columns[SCOPE], columns["category"], columns["record_key"], strict=True))
    order = sorted(range(len(keys)), key=keys.__getitem__)  # stable, as the frame's sort was
    frame = finding_frame({name: [columns[name][i] for i in order] for name in FINDING_COLUMNS})
    frame[SCOPE] = np.array([columns[SCOPE][i] for i in order], dtype=np.int64)
    return frame
