"""The two sides the matcher pairs, with their keys normalised so that equal keys compare equal.

Candidates are the provider records no ledger entry names by (provider_record_id, kind), and the ledger
entries (not adjustments) that name no provider record at all: everything else the diff matches by id.
A PMS writes a card as "VISA", "Visa " or "visa" and its last four as "**** 4242"; a provider writes
"visa" and "4242": both become ``visa`` and ``4242`` here once, so every tier compares plain values.
Optional columns (cards, approval codes, references) may be absent from either frame: absent is null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import pandas as pd

from recon_pipeline.categories import KINDS
from recon_pipeline.reconcile.grouping import IdBytes, group_keys

ADJUSTMENT: Final = "adjustment"
NO_TIME: Final = np.iinfo(np.int64).min  # NaT as int64 nanoseconds: never within a window

_BRAND_ALIASES: Final = {
    "mc": "mastercard",
    "master": "mastercard",
    "master card": "mastercard",
    "master_card": "mastercard",
    "american express": "amex",
    "american_express": "amex",
    "americanexpress": "amex",
    "diners club": "diners",
    "diners_club": "diners",
    "dinersclub": "diners",
    "union pay": "unionpay",
    "china unionpay": "unionpay",
    "cup": "unionpay",
    "unknown": None,
}


@dataclass(frozen=True)
class Sides:
    """Candidate records and entries (one row each; ``at`` is the row's position in its input frame) and
    each record's figures: its presentment figure, and a conversion's settlement figure as a second row.
    """

    records: pd.DataFrame
    entries: pd.DataFrame
    figures: pd.DataFrame  # r (row of ``records``), kind, currency, amount
    exact_id: int  # provider records some keyed ledger entry names: the diff matches them by id


def unkeyed_entries(ledger: pd.DataFrame) -> np.ndarray:
    """Positions of the entries that are matching candidates: no provider id, and not an adjustment."""
    return np.flatnonzero(
        ledger["provider_record_id"].isna().to_numpy() & (ledger["kind"] != ADJUSTMENT).to_numpy()
    )


def exact_id_count(provider_records: pd.DataFrame, ledger: pd.DataFrame) -> int:
    """How many provider records a keyed ledger entry names by (provider_record_id, kind)."""
    return int(np.count_nonzero(_named_by_ledger(provider_records, ledger)))


def candidate_sides(
    provider_records: pd.DataFrame, ledger: pd.DataFrame, entries_at: np.ndarray, taken: np.ndarray
) -> Sides:
    """The candidates of one night: records no ledger row names (in-night or adjacent), but for the
    positions ``taken`` (a decided match's), and the entries at ``entries_at``."""
    named = _named_by_ledger(provider_records, ledger)
    free = ~named
    free[taken] = False
    records_at = np.flatnonzero(free)
    return Sides(
        records=record_keys(provider_records, records_at),
        entries=entry_keys(ledger, entries_at),
        figures=_figures(provider_records, records_at),
        exact_id=int(np.count_nonzero(named)),
    )


def _named_by_ledger(provider_records: pd.DataFrame, ledger: pd.DataFrame) -> np.ndarray:
    """Per provider record, whether some keyed ledger entry (not an adjustment) carries its key."""
    if provider_records.empty:
        return np.zeros(0, dtype=bool)
    ids = IdBytes.of(ledger["provider_record_id"])
    keyed = ~ids.null & (ledger["kind"] != ADJUSTMENT).to_numpy()
    groups = group_keys(
        (IdBytes.of(provider_records["provider_record_id"]), kind_codes(provider_records["kind"])),
        (ids.select(keyed), kind_codes(ledger["kind"][keyed])),
    )
    booked = np.zeros(groups.count, dtype=bool)
    booked[groups.groups[1]] = True
    return booked[groups.groups[0]]


def kind_codes(kinds: pd.Series) -> np.ndarray:
    """Index into KINDS of every row (uint8, as the key grouping takes it); an unknown kind is refused."""
    codes, uniques = pd.factorize(kinds.to_numpy())
    unknown = sorted({str(kind) for kind in uniques if kind not in KINDS})
    if unknown or (codes < 0).any():
        raise ValueError(f"unknown record kinds {unknown or ['<null>']}; expected one of {KINDS}")
    return np.array([KINDS.index(kind) for kind in uniques], dtype=np.uint8)[codes]


def record_keys(frame: pd.DataFrame, at: np.ndarray) -> pd.DataFrame:
    """The provider records at ``at``, one row each, with their keys normalised."""
    rows = frame.iloc[at]
    settlement = rows["settlement_amount_minor"].astype("Int64")
    return pd.DataFrame(
        {
            "at": at,
            "record_id": rows["provider_record_id"].to_numpy(dtype=object),
            "charge_id": _column(rows, "charge_id"),
            "intent_id": _column(rows, "payment_intent_id"),
            "kind": rows["kind"].to_numpy(dtype=object),
            "booking": texts(_column(rows, "booking_id")),
            "brand": brands(_column(rows, "card_brand")),
            "last4": last_fours(_column(rows, "card_last4")),
            "approval": codes(_column(rows, "approval_code")),
            "created": times(rows["created_at"]),
            "settled": rows["settled"].to_numpy(dtype=bool),
            "currency": rows["currency"].to_numpy(dtype=object),
            "amount": rows["amount_minor"].to_numpy(dtype=np.int64),
            "settlement_currency": _column(rows, "settlement_currency"),
            "settlement_amount": settlement.to_numpy(dtype=np.int64, na_value=0),
            "converted": settlement.notna().to_numpy(),
        }
    )


def entry_keys(frame: pd.DataFrame, at: np.ndarray) -> pd.DataFrame:
    """The ledger entries at ``at``, one row each, with their keys normalised."""
    rows = frame.iloc[at]
    return pd.DataFrame(
        {
            "at": at,
            "entry_id": rows["entry_id"].to_numpy(dtype=object),
            "kind": rows["kind"].to_numpy(dtype=object),
            "booking": texts(_column(rows, "booking_id")),
            "brand": brands(_column(rows, "card_brand")),
            "last4": last_fours(_column(rows, "card_last4")),
            "approval": codes(_column(rows, "approval_code")),
            "reference": _column(rows, "reference"),
            "posted": times(rows["posted_at"]),
            "in_night": rows["in_night"].to_numpy(dtype=bool),
            "currency": rows["currency"].to_numpy(dtype=object),
            "amount": rows["amount_minor"].to_numpy(dtype=np.int64),
        }
    )


def _figures(frame: pd.DataFrame, at: np.ndarray) -> pd.DataFrame:
    """Each record's figure in its presentment currency and, for a conversion, in its settlement one."""
    rows = frame.iloc[at]
    positions = np.arange(len(at))
    settlement = rows["settlement_amount_minor"].astype("Int64")
    currency = rows["currency"].to_numpy(dtype=object)
    settles = _column(rows, "settlement_currency")
    converted = settlement.notna().to_numpy() & pd.notna(settles) & (settles != currency)
    kinds = rows["kind"].to_numpy(dtype=object)
    return pd.DataFrame(
        {
            "r": np.concatenate([positions, positions[converted]]),
            "kind": np.concatenate([kinds, kinds[converted]]),
            "currency": np.concatenate([currency, settles[converted]]),
            "amount": np.concatenate(
                [
                    rows["amount_minor"].to_numpy(dtype=np.int64),
                    settlement.to_numpy(dtype=np.int64, na_value=0)[converted],
                ]
            ),
        }
    )


def _column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A column as an object array; a column the frame lacks is null in every row."""
    if name not in frame.columns:
        return np.full(len(frame), None, dtype=object)
    return frame[name].to_numpy(dtype=object)


def times(column: pd.Series) -> np.ndarray:
    """Timestamps as int64 nanoseconds since the epoch (NaT as NO_TIME)."""
    return column.to_numpy(dtype="datetime64[ns]").view(np.int64)


def _cleaned(values: np.ndarray) -> pd.Series:
    """Text stripped, empty as null (pandas' string methods keep nulls null)."""
    text = pd.Series(values, dtype=object).where(pd.notna(values), None)
    text = text.map(lambda value: value if value is None else str(value).strip(), na_action="ignore")
    return text.where(text != "", None)


def texts(values: np.ndarray) -> np.ndarray:
    """Free identifiers (booking ids) stripped; empty is null."""
    return _cleaned(values).to_numpy(dtype=object)


def codes(values: np.ndarray) -> np.ndarray:
    """Approval codes stripped and upper case; empty is null."""
    return _cleaned(values).map(str.upper, na_action="ignore").to_numpy(dtype=object)


def brands(values: np.ndarray) -> np.ndarray:
    """Card brands lower case, the usual spellings of one brand as one word (``MC`` is mastercard)."""
    lowered = _cleaned(values).map(str.lower, na_action="ignore")
    return lowered.map(lambda brand: _BRAND_ALIASES.get(brand, brand), na_action="ignore").to_numpy(
        dtype=object
    )


def last_fours(values: np.ndarray) -> np.ndarray:
    """The last four digits of what was written (``**** 4242`` is ``4242``); fewer than four is null."""
    digits = _cleaned(values).map(lambda text: "".join(ch for ch in text if ch.isdigit()), na_action="ignore")
    return digits.map(lambda text: text[-4:] if len(text) >= 4 else None, na_action="ignore").to_numpy(
        dtype=object
    )
