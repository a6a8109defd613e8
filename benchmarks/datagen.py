"""Synthetic property-nights for benchmarks: numpy-vectorised, seeded, with known injected findings.

The mix resembles a busy property's night: charges (most with a provider fee row, several currencies
including zero-decimal JPY), partial refunds (a charge may have several), unsettled records nobody
booked, adjustment entries, ledger entries of the adjacent nights that belong to other records, and
timing differences in both directions. About ``discrepancy_rate`` of ``n`` rows are corrupted, spread
evenly over the six categories the diff reports, and the counts are returned so a benchmark or test
can check every injected finding is found. Ids are Stripe-like (``ch_`` + 24 base-62 characters).

Text columns hold Python strings in object columns, as the loaders produce them. Id strings are created
in the frame's final row order, as a loader creates them while reading rows in query order: strings
created in one order and then shuffled would cost the diff a cache miss per row that no real night
has. Low-cardinality text (kind, currency, status, property) shares one string object per value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import pandas as pd
import pyarrow as pa

from recon_pipeline.categories import (
    AMOUNT_MISMATCH,
    CURRENCY_MISMATCH,
    DUPLICATE_IN_LEDGER,
    MISSING_AT_PROVIDER,
    MISSING_IN_LEDGER,
    STATUS_MISMATCH,
)
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS

DIFF_CATEGORIES: Final = (
    MISSING_IN_LEDGER,
    MISSING_AT_PROVIDER,
    AMOUNT_MISMATCH,
    CURRENCY_MISMATCH,
    DUPLICATE_IN_LEDGER,
    STATUS_MISMATCH,
)
PROPERTY_ID: Final = "prop_bench"
NIGHT_START: Final = pd.Timestamp("2025-03-14T23:00:00Z")  # 2025-03-15 in Europe/Paris
_DAY_NS: Final = 86_400 * 10**9
_MINUTE_NS: Final = 60 * 10**9

# currency, share of charges, charge amount range in minor units, fixed fee part in minor units
_CURRENCIES: Final = (
    ("EUR", 0.45, (2_000, 120_000), 25),
    ("USD", 0.25, (2_000, 150_000), 30),
    ("GBP", 0.10, (2_000, 100_000), 20),
    ("JPY", 0.15, (3_000, 180_000), 0),
    ("CHF", 0.05, (2_000, 120_000), 30),
)
_KIND_NAMES: Final = ("payment", "fee", "refund", "adjustment")
_PAYMENT, _FEE, _REFUND, _ADJUSTMENT = range(4)
_FAILED: Final = 1
_EUR, _USD = 0, 1
# Low-cardinality text is generated as codes into these names and becomes shared str objects at the end.
_VOCABULARY: Final = {
    "kind": _KIND_NAMES,
    "currency": tuple(code for code, _, _, _ in _CURRENCIES),
    "status": ("succeeded", "failed"),
    "property_id": (PROPERTY_ID,),
}
_BASE62: Final = np.frombuffer(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", dtype=np.uint8
)
_UNIQUE_DIGITS: Final = 6  # leading base-62 digits that encode the row number: ids are unique


@dataclass(frozen=True)
class SyntheticNight:
    """One generated night and what the diff of it must find."""

    provider_records: pd.DataFrame
    ledger_records: pd.DataFrame
    provider_elsewhere: pd.DataFrame  # the records the in-night ledger books from other nights
    injected: dict[str, int]  # findings per diff category
    timing_differences: int
    matched: int


def generate_frames(
    n: int, discrepancy_rate: float = 0.01, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The provider-record and ledger-record frames of :func:`generate_night`.

    Without ``provider_elsewhere`` the entries booking other nights' records read as missing at the
    provider; use :func:`generate_night` when the expected findings matter.
    """
    night = generate_night(n, discrepancy_rate, seed)
    return night.provider_records, night.ledger_records


def generate_night(n: int, discrepancy_rate: float = 0.01, seed: int = 0) -> SyntheticNight:
    """About ``n`` provider records and as many ledger entries, with injected findings."""
    rng = np.random.default_rng(seed)
    records = _provider_rows(n, rng)
    size = len(records["kind"])
    per_category = _split(round(n * discrepancy_rate), len(DIFF_CATEGORIES))
    injected = dict(zip(DIFF_CATEGORIES, per_category, strict=True))
    timing_each_way = round(n * discrepancy_rate / 4)

    # Disjoint sets of settled records to corrupt, one per injected effect.
    sizes = [
        injected[MISSING_IN_LEDGER],
        injected[AMOUNT_MISMATCH],
        injected[CURRENCY_MISMATCH],
        injected[DUPLICATE_IN_LEDGER],
        injected[STATUS_MISMATCH],
        timing_each_way,
        round(n * 0.003),  # unsettled and unbooked: not a finding
    ]
    if sum(sizes) > size:
        raise ValueError(f"n={n} is too small to inject {sum(sizes)} findings")
    picks = np.split(rng.permutation(size), np.cumsum(sizes))
    missing, amount, currency, duplicate, status, late, unbooked = picks[:7]
    records["settled"][status] = False
    records["settled"][unbooked] = False
    records["status"][np.concatenate([status, unbooked])] = _FAILED

    booked = np.ones(size, dtype=bool)
    booked[missing] = booked[unbooked] = False
    mirrored = np.flatnonzero(booked)
    entries = _mirror_entries(records, mirrored, rng)
    at = np.full(size, -1)  # position of each record's mirror entry
    at[mirrored] = np.arange(len(mirrored))
    entries["amount_minor"][at[amount]] += rng.integers(1, 500, len(amount)) * rng.choice(
        [-1, 1], len(amount)
    )
    swapped = at[currency]
    entries["currency"][swapped] = np.where(entries["currency"][swapped] == _USD, _EUR, _USD)
    late_positions = at[late]
    entries["posted_at"][late_positions] = _NIGHT_END + rng.integers(1, 120, len(late)) * _MINUTE_NS
    entries["in_night"][late_positions] = False

    elsewhere = _provider_rows(timing_each_way, rng, first_index=size, night_offset=-1)
    ledger = _concat(
        [
            entries,
            _duplicate_entries(entries, at[duplicate], rng),
            _mirror_entries(elsewhere, np.arange(len(elsewhere["kind"])), rng, in_night=True),
            _unknown_entries(injected[MISSING_AT_PROVIDER], rng, first_index=size + timing_each_way),
            _adjacent_entries(round(n * 0.02), rng, first_index=2 * size + timing_each_way),
            _adjustment_entries(round(n * 0.005), rng),
        ]
    )
    ledger = _number_entries(ledger)
    settled = int(records["settled"].sum())
    return SyntheticNight(
        provider_records=_frame(records, PROVIDER_RECORD_COLUMNS, sort_by="created_at", ascending=False),
        ledger_records=_frame(ledger, LEDGER_RECORD_COLUMNS, sort_by="posted_at", ascending=True),
        provider_elsewhere=_frame(elsewhere, PROVIDER_RECORD_COLUMNS, sort_by="created_at", ascending=False),
        injected=injected,
        timing_differences=2 * timing_each_way,
        matched=settled - len(missing) - len(amount) - len(currency) - len(late),
    )


_NIGHT_END: Final = NIGHT_START.value + _DAY_NS
Columns = dict[str, np.ndarray]  # ids as fixed-width bytes, other text as codes into _VOCABULARY


def _provider_rows(n: int, rng: np.random.Generator, first_index: int = 0, night_offset: int = 0) -> Columns:
    """About 55% payments, 70% of them with a fee row, the rest refunds of random charges."""
    charges = max(1, round(n * 0.55)) if n else 0
    fees = min(round(charges * 0.7), n - charges)
    refunds = n - charges - fees
    shares = np.array([share for _, share, _, _ in _CURRENCIES])
    currency_index = rng.choice(len(_CURRENCIES), charges, p=shares / shares.sum())
    low = np.array([bounds[0] for _, _, bounds, _ in _CURRENCIES])[currency_index]
    high = np.array([bounds[1] for _, _, bounds, _ in _CURRENCIES])[currency_index]
    amounts = rng.integers(low, high)
    charge_ids = _stripe_ids("ch_", first_index + np.arange(charges), rng)
    intents = _stripe_ids("pi_", first_index + np.arange(charges), rng)
    bookings = _text_ids("bk_", first_index + np.arange(charges))
    fixed_fee = np.array([fee for _, _, _, fee in _CURRENCIES])[currency_index]

    with_fee = rng.choice(charges, fees, replace=False) if fees else np.empty(0, dtype=np.int64)
    refunded = rng.integers(0, charges, refunds) if refunds else np.empty(0, dtype=np.int64)
    owner = np.concatenate([np.arange(charges), with_fee, refunded])
    fee_amounts = -(amounts[with_fee] * 29 // 1000 + fixed_fee[with_fee])
    refund_amounts = -(amounts[refunded] * rng.integers(5, 30, refunds) // 100)
    start = NIGHT_START.value + night_offset * _DAY_NS
    return {
        "provider_record_id": np.concatenate(
            [charge_ids, charge_ids[with_fee], _stripe_ids("re_", first_index + np.arange(refunds), rng)]
        ),
        "kind": np.repeat(np.array([_PAYMENT, _FEE, _REFUND], dtype=np.int8), [charges, fees, refunds]),
        "charge_id": charge_ids[owner],
        "property_id": np.zeros(n, dtype=np.int8),
        "booking_id": bookings[owner],
        "payment_intent_id": intents[owner],
        "amount_minor": np.concatenate([amounts, fee_amounts, refund_amounts]),
        "currency": currency_index[owner].astype(np.int8),
        "status": np.zeros(n, dtype=np.int8),
        "settled": np.ones(n, dtype=bool),
        "created_at": start + rng.integers(0, _DAY_NS - 40 * _MINUTE_NS, n),
    }


def _mirror_entries(
    records: Columns, rows: np.ndarray, rng: np.random.Generator, in_night: bool = True
) -> Columns:
    """The ledger entries booking ``records[rows]`` correctly, posted up to 30 minutes later in-night."""
    posted = np.maximum(records["created_at"][rows], NIGHT_START.value) + rng.integers(
        0, 30 * _MINUTE_NS, len(rows)
    )
    return {
        "property_id": records["property_id"][rows],
        "booking_id": records["booking_id"][rows],
        "provider_record_id": records["provider_record_id"][rows],
        "kind": records["kind"][rows],
        "amount_minor": records["amount_minor"][rows].copy(),
        "currency": records["currency"][rows].copy(),
        "posted_at": posted,
        "in_night": np.full(len(rows), in_night),
    }


def _duplicate_entries(entries: Columns, positions: np.ndarray, rng: np.random.Generator) -> Columns:
    """Second in-night postings of some entries, a little later than the first."""
    copy = {name: values[positions].copy() for name, values in entries.items()}
    copy["posted_at"] = np.minimum(
        copy["posted_at"] + rng.integers(1, 60, len(positions)) * _MINUTE_NS, _NIGHT_END - 1
    )
    return copy


def _unknown_entries(count: int, rng: np.random.Generator, first_index: int) -> Columns:
    """In-night entries the provider never saw; one in four is a manual entry without provider id."""
    ids = _stripe_ids("ch_", first_index + np.arange(count), rng)
    ids[: count // 4] = b""  # null
    return _ledger_only(ids, np.full(count, _PAYMENT, dtype=np.int8), rng, in_night=True)


def _adjacent_entries(count: int, rng: np.random.Generator, first_index: int) -> Columns:
    """Entries of the previous and next nights booking records of those nights: context, not findings."""
    columns = _ledger_only(_stripe_ids("ch_", first_index + np.arange(count), rng), None, rng, in_night=False)
    before = rng.random(count) < 0.5
    columns["posted_at"] = np.where(
        before,
        NIGHT_START.value - rng.integers(1, _DAY_NS, count),
        _NIGHT_END + rng.integers(0, _DAY_NS, count),
    )
    return columns


def _adjustment_entries(count: int, rng: np.random.Generator) -> Columns:
    """Earlier corrections the pipeline itself proposed; the diff ignores them."""
    return _ledger_only(np.full(count, b""), np.full(count, _ADJUSTMENT, dtype=np.int8), rng, True)


def _ledger_only(
    ids: np.ndarray, kinds: np.ndarray | None, rng: np.random.Generator, in_night: bool
) -> Columns:
    count = len(ids)
    if kinds is None:
        kinds = rng.choice(np.array([_PAYMENT, _FEE, _REFUND], dtype=np.int8), count, p=[0.6, 0.3, 0.1])
    sign = np.where(kinds == _PAYMENT, 1, -1)
    return {
        "property_id": np.zeros(count, dtype=np.int8),
        "booking_id": _text_ids("bk_x", np.arange(count)),
        "provider_record_id": ids,
        "kind": kinds,
        "amount_minor": sign * rng.integers(500, 50_000, count),
        "currency": np.full(count, _EUR, dtype=np.int8),
        "posted_at": NIGHT_START.value + rng.integers(0, _DAY_NS, count),
        "in_night": np.full(count, in_night),
    }


def _number_entries(ledger: Columns) -> Columns:
    return {"entry_id": _text_ids("le_", np.arange(len(ledger["kind"]))), **ledger}


def _concat(parts: list[Columns]) -> Columns:
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _frame(columns: Columns, dtypes: dict[str, str], sort_by: str, ascending: bool) -> pd.DataFrame:
    """A contract frame: object text, int64 amounts, UTC timestamps, ordered as the source lists it."""
    order = np.argsort(columns[sort_by], kind="stable")
    if not ascending:
        order = order[::-1]
    data = {}
    for name, dtype in dtypes.items():
        if name not in columns:  # an optional column the generated night leaves null (no conversions)
            data[name] = pd.Series([None] * len(order), dtype=dtype)
            continue
        values = columns[name][order]
        if name in _VOCABULARY:
            data[name] = pd.Series(np.array(_VOCABULARY[name], dtype=object)[values], dtype=dtype)
        elif dtype.startswith("datetime64"):
            data[name] = pd.Series(values.view("datetime64[ns]")).dt.tz_localize("UTC")
        elif values.dtype.kind == "S":  # ids: one fresh string per row, created in row order; b"" is null
            text = pa.array(values).cast(pa.string()).to_pandas().to_numpy(dtype=object)
            text[values == b""] = None
            data[name] = pd.Series(text, dtype=dtype)
        else:
            data[name] = pd.Series(values, dtype=dtype)
    return pd.DataFrame(data)


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


def _stripe_ids(prefix: str, index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unique Stripe-like ids: the row number in base 62, then random base-62 characters."""
    count = len(index)
    chars = np.empty((count, len(prefix) + 24), dtype=np.uint8)
    chars[:, : len(prefix)] = np.frombuffer(prefix.encode(), dtype=np.uint8)
    remaining = index.astype(np.int64)
    for position in reversed(range(len(prefix), len(prefix) + _UNIQUE_DIGITS)):
        chars[:, position] = _BASE62[remaining % 62]
        remaining //= 62
    chars[:, len(prefix) + _UNIQUE_DIGITS :] = _BASE62[rng.integers(0, 62, (count, 24 - _UNIQUE_DIGITS))]
    return _as_text(chars)


def _text_ids(prefix: str, index: np.ndarray) -> np.ndarray:
    """``prefix`` and the row number in 8 decimal digits, as fixed-width text."""
    chars = np.empty((len(index), len(prefix) + 8), dtype=np.uint8)
    chars[:, : len(prefix)] = np.frombuffer(prefix.encode(), dtype=np.uint8)
    remaining = index.astype(np.int64)
    for position in reversed(range(len(prefix), len(prefix) + 8)):
        chars[:, position] = ord("0") + remaining % 10
        remaining //= 10
    return _as_text(chars)


def _as_text(chars: np.ndarray) -> np.ndarray:
    """Rows of ASCII codes as fixed-width bytes (decoded to str objects only when the frame is built)."""
    return chars.view(f"S{chars.shape[1]}").ravel()
