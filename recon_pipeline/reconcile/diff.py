"""The diff of one property-night: provider records against ledger entries, matched on (id, kind).

Every finding belongs to exactly one night, so that a re-run or the neighbouring night never proposes
the same correction twice (adjustment keys carry the night):

- a finding about a ledger entry (duplicate, amount or currency mismatch, status mismatch, missing at
  the provider) is reported in the night the entry was *posted* in;
- a provider record nobody booked (missing in the ledger) is reported in the night it was *created* in.

Hence a provider record of this night that only an adjacent-night entry books is counted as a timing
difference here and compared in the entry's own night, where the record arrives via
``provider_elsewhere``; and an extra entry of a duplicate group is reported only when it is in-night.

A movement presented in one currency and settled in another (currency conversion, docs/design.md,
"Money movements") has two figures, and the PMS may book either: the entry's currency chooses the figure it
is compared with. In the presentment currency it must equal the presentment amount (else
``amount_mismatch``); in the settlement currency it may be off the settlement amount by the property's
tolerance (else ``fx_difference``, corrected in the settlement currency); any other currency is a
``currency_mismatch``. The night's totals count a conversion at its settlement figure, what the account
holds, in provider and matched totals alike.

Matching 10^6 against 10^6 rows within a second rules out pandas' string merges and hash tables (about
0.4 µs a string on the reference machine). Instead each id is read once through Arrow, and each key
becomes one fixed-width row of bytes (id, length, kind); the rows' 64-bit words are mixed into one
integer, and the row number is packed into that integer's low bits so that one plain ``np.sort``
groups equal keys. Neighbours of equal hash are then compared word by word, so the grouping is exact;
the rare colliding runs are sorted exactly on their own.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd
import pyarrow as pa

from recon_pipeline.frames import present, typed_frame
from recon_pipeline.money import BASIS_POINTS, format_minor, minor_unit_exponent
from recon_pipeline.providers.records import empty_provider_records
from recon_pipeline.reconcile.categories import (
    AMOUNT_MISMATCH,
    CURRENCY_MISMATCH,
    DISCREPANCY_COLUMNS,
    DUPLICATE_IN_LEDGER,
    FX_DIFFERENCE,
    MISSING_AT_PROVIDER,
    MISSING_IN_LEDGER,
    STATUS_MISMATCH,
)

KINDS: Final = ("payment", "refund", "fee", "dispute", "dispute_reversal", "adjustment")
_ADJUSTMENT: Final = KINDS.index("adjustment")

# Nullable amounts are Int64; text stays object, as in the provider and ledger frame contracts.
DISCREPANCY_DTYPES: Final[Mapping[str, str]] = {
    name: "Int64" if name in ("provider_amount_minor", "ledger_amount_minor") else "object"
    for name in DISCREPANCY_COLUMNS
} | {"difference_minor": "int64"}

_GOLDEN: Final = np.uint64(0x9E3779B97F4A7C15)
_LONGEST_ID: Final = 0xFFFF
_INDEX: Final = np.intp  # dtype of row and group numbers (numpy indexes with intp without a cast)
_NO_CURRENCY: Final = -1  # currency code of a record's settlement side when it was not converted


@dataclass(frozen=True)
class DiffResult:
    """What the diff of one night found, and the figures an analyst checks the findings against."""

    discrepancies: pd.DataFrame  # DISCREPANCY_COLUMNS, ordered by (category, record_key)
    # settled provider records booked in-night at one of their figures (the settlement one within tolerance)
    matched_count: int
    matched_amount_by_currency: dict[str, int]  # as provider totals: a conversion at its settlement figure
    timing_difference_count: int  # pairs whose two sides lie on either side of a night boundary
    # settled provider records of the night; a conversion counts in its settlement currency and amount (what
    # the account holds, whichever figure the ledger booked)
    provider_total_by_currency: dict[str, int]
    ledger_total_by_currency: dict[str, int]  # in-night ledger entries, adjustments excluded


def with_findings(result: DiffResult, *found: pd.DataFrame) -> DiffResult:
    """The diff's result with findings made outside the diff added (invalid ledger entries, payments nobody
    owns), ordered by (category, record_key) as the diff orders its own; totals and counts stay the diff's.
    """
    extra = [frame for frame in found if not frame.empty]
    if not extra:
        return result
    findings = pd.concat([result.discrepancies, *extra], ignore_index=True)
    findings = findings.sort_values(["category", "record_key"], kind="stable", ignore_index=True)
    return dataclasses.replace(result, discrepancies=findings)


def discrepancy_frame(columns: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """A discrepancy frame from column values (None is null), in the contract's column order and dtypes;
    a column not given is null in every row."""
    rows = max((len(values) for values in columns.values()), default=0)
    if rows == 0:  # most of a night's parts are empty: a copy costs ~1% of building twelve typed columns
        return _empty_discrepancy_frame().copy()
    return typed_frame(columns, DISCREPANCY_DTYPES, rows)


@functools.cache
def _empty_discrepancy_frame() -> pd.DataFrame:
    """The zero-row frame every empty part copies (never handed out itself: callers may modify theirs)."""
    return typed_frame({}, DISCREPANCY_DTYPES, 0)


def empty_discrepancies() -> pd.DataFrame:
    """A zero-row discrepancy frame (a night with nothing to report)."""
    return discrepancy_frame({})


def unmatched_ledger_record_ids(provider_records: pd.DataFrame, ledger_records: pd.DataFrame) -> list[str]:
    """Sorted distinct provider ids of in-night ledger entries that no record of the night's pull matches.

    The caller fetches these from the provider by id: a record found there was created in another night
    (a timing difference), a record not found does not exist (missing at the provider).
    """
    ledger = _LedgerArrays.of(ledger_records)
    provider = _ProviderArrays.of(provider_records)
    keys = _match_keys((provider.ids, provider.kinds), (ledger.ids, ledger.kinds[ledger.keyed]))
    provider_by_group = _position_by_group(keys.groups[0], keys.count)
    unmatched = ledger.in_night[ledger.keyed] & (provider_by_group[keys.groups[1]] < 0)
    ids = ledger_records["provider_record_id"].to_numpy()[np.flatnonzero(ledger.keyed)[unmatched]]
    return sorted({str(record_id) for record_id in ids})


def diff_night(
    provider_records: pd.DataFrame,
    ledger_records: pd.DataFrame,
    provider_elsewhere: pd.DataFrame | None = None,
    fx_tolerance_bps: int = 0,
    property_currency: str | None = None,
) -> DiffResult:
    """Compare one night's provider records with the ledger entries posted in and around it.

    ``provider_elsewhere`` holds records the provider has but created outside the night (fetched by the
    ids of :func:`unmatched_ledger_record_ids`); an in-night entry matching one is a timing difference.
    ``fx_tolerance_bps`` is the property's tolerance on an entry booked at a conversion's settlement
    figure, in basis points of the settlement amount (``properties.fx_tolerance_bps``).
    ``property_currency`` is the currency the property's PMS books in (``properties.currency``): a
    converted record missing in the ledger that settled in it is stated at its settlement figure.
    """
    if not 0 <= fx_tolerance_bps <= BASIS_POINTS:
        raise ValueError(f"fx_tolerance_bps must be from 0 to {BASIS_POINTS}, not {fx_tolerance_bps}")
    elsewhere = empty_provider_records() if provider_elsewhere is None else provider_elsewhere
    provider = _ProviderArrays.of(provider_records)
    other = _ProviderArrays.of(elsewhere)
    ledger = _LedgerArrays.of(ledger_records)
    currencies, (provider_currency, other_currency, ledger_currency, provider_settles, other_settles) = (
        _currency_codes(
            provider_records["currency"].to_numpy(),
            elsewhere["currency"].to_numpy(),
            ledger_records["currency"].to_numpy(),
            provider.settlement_currencies,
            other.settlement_currencies,
        )
    )
    tonight = provider.figures(provider_currency, provider_settles)
    earlier = other.figures(other_currency, other_settles)
    keys = _match_keys(
        (provider.ids, provider.kinds), (ledger.ids, ledger.kinds[ledger.keyed]), (other.ids, other.kinds)
    )
    provider_group, keyed_group, other_group = keys.groups
    provider_by_group = _unique_position_by_group("provider_records", provider_group, keys.count)
    other_by_group = _unique_position_by_group("provider_elsewhere", other_group, keys.count)

    keyed = np.flatnonzero(ledger.keyed)  # ledger positions of the entries that carry a match key
    keyed_in_night = ledger.in_night[keyed]
    primary_by_group, extras = _primaries(ledger_records, keyed, keyed_group, keys.count)
    pairs = _ProviderPairs.classify(
        provider, tonight, primary_by_group[provider_group], keyed, ledger, ledger_currency, fx_tolerance_bps
    )

    is_primary = primary_by_group[keyed_group] == np.arange(len(keyed), dtype=_INDEX)
    unpaired = is_primary & keyed_in_night & (provider_by_group[keyed_group] < 0)
    late = _LateEntries.classify(
        keyed[unpaired],
        other_by_group[keyed_group[unpaired]],
        other,
        earlier,
        ledger,
        ledger_currency,
        fx_tolerance_bps,
    )

    in_night_counted = ledger.in_night & (ledger.kinds != _ADJUSTMENT)
    unkeyed = np.flatnonzero(in_night_counted & ~ledger.keyed)
    findings = _Findings(provider_records, elsewhere, ledger_records, fx_tolerance_bps, property_currency)
    discrepancies = _frame_of(
        [
            findings.missing_in_ledger(np.flatnonzero(pairs.missing_in_ledger)),
            *(
                findings.pairs(category, np.flatnonzero(mask), pairs.entry[mask])
                for category, mask in (
                    (AMOUNT_MISMATCH, pairs.amount_mismatch),
                    (FX_DIFFERENCE, pairs.fx_difference),
                    (CURRENCY_MISMATCH, pairs.currency_mismatch),
                    (STATUS_MISMATCH, pairs.status_mismatch),
                )
            ),
            *(
                findings.pairs(category, records, entries, elsewhere=True)
                for category, (entries, records) in (
                    (AMOUNT_MISMATCH, late.amount_mismatch),
                    (FX_DIFFERENCE, late.fx_difference),
                    (CURRENCY_MISMATCH, late.currency_mismatch),
                    (STATUS_MISMATCH, late.status_mismatch),
                )
            ),
            findings.missing_at_provider(late.missing),
            findings.missing_at_provider_unkeyed(unkeyed),
            findings.duplicates(keyed[extras], keyed[primary_by_group[keyed_group[extras]]]),
        ]
    )

    return DiffResult(
        discrepancies=discrepancies,
        matched_count=int(pairs.matched.sum()),
        matched_amount_by_currency=_totals(
            tonight.held_amounts, tonight.held_currency, pairs.matched, currencies
        ),
        timing_difference_count=int(pairs.timing.sum()) + late.timing_count,
        provider_total_by_currency=_totals(
            tonight.held_amounts, tonight.held_currency, provider.settled, currencies
        ),
        ledger_total_by_currency=_totals(ledger.amounts, ledger_currency, in_night_counted, currencies),
    )


# --- frame columns as arrays -------------------------------------------------------------------------


@dataclass(frozen=True)
class _ProviderArrays:
    """The columns of a provider-record frame the diff computes on, as numpy arrays."""

    ids: _IdBytes
    kinds: np.ndarray
    amounts: np.ndarray
    settled: np.ndarray
    converted: np.ndarray  # presented in one currency and settled in another
    settlement_amounts: np.ndarray  # the converted rows' settlement amounts, 0 elsewhere
    settlement_currencies: np.ndarray  # the converted rows' settlement currencies only (for one numbering)

    @classmethod
    def of(cls, frame: pd.DataFrame) -> _ProviderArrays:
        ids = _IdBytes.of(frame["provider_record_id"])
        if ids.null.any():
            raise ValueError("provider records must all carry a provider_record_id")
        settlement = frame["settlement_amount_minor"].astype("Int64")
        converted = settlement.notna().to_numpy()
        currencies = frame["settlement_currency"].to_numpy()[converted]
        lacking = converted != frame["settlement_currency"].notna().to_numpy()
        if lacking.any():
            record_id = frame["provider_record_id"].to_numpy()[lacking][0]
            raise ValueError(
                f"provider record {record_id!r} carries only one of settlement_amount_minor and "
                "settlement_currency; a conversion needs both"
            )
        return cls(
            ids=ids,
            kinds=_kind_codes(frame["kind"].to_numpy()),
            amounts=frame["amount_minor"].to_numpy(dtype=np.int64),
            settled=frame["settled"].to_numpy(dtype=bool),
            converted=converted,
            settlement_amounts=settlement.to_numpy(dtype=np.int64, na_value=0),
            settlement_currencies=currencies,
        )

    def figures(self, currency: np.ndarray, settlement_currency: np.ndarray) -> _Figures:
        """The records' figures, given the shared currency codes of the rows and of the converted rows."""
        settles = np.full(len(currency), _NO_CURRENCY, dtype=currency.dtype)
        settles[self.converted] = settlement_currency
        return _Figures(self.amounts, currency, self.settlement_amounts, settles)


@dataclass(frozen=True)
class _Figures:
    """Each provider record's presentment figure (amount, currency code) and, for a conversion, its
    settlement figure (code ``_NO_CURRENCY`` and amount 0 when it settled in its own currency)."""

    amounts: np.ndarray
    currency: np.ndarray
    settlement_amounts: np.ndarray
    settlement_currency: np.ndarray

    @property
    def held_amounts(self) -> np.ndarray:
        """What the account holds of each record: the settlement amount of a conversion."""
        return np.where(self.settlement_currency != _NO_CURRENCY, self.settlement_amounts, self.amounts)

    @property
    def held_currency(self) -> np.ndarray:
        """The currency :attr:`held_amounts` is in."""
        return np.where(self.settlement_currency != _NO_CURRENCY, self.settlement_currency, self.currency)


@dataclass(frozen=True)
class _LedgerArrays:
    """Ledger columns as arrays; ``keyed`` marks the payment/refund/fee entries that carry an id."""

    ids: _IdBytes  # of the keyed entries only
    kinds: np.ndarray
    amounts: np.ndarray
    in_night: np.ndarray
    keyed: np.ndarray

    @classmethod
    def of(cls, frame: pd.DataFrame) -> _LedgerArrays:
        kinds = _kind_codes(frame["kind"].to_numpy())
        all_ids = _IdBytes.of(frame["provider_record_id"])
        keyed = (kinds != _ADJUSTMENT) & ~all_ids.null
        return cls(
            ids=all_ids.select(keyed),
            kinds=kinds,
            amounts=frame["amount_minor"].to_numpy(dtype=np.int64),
            in_night=frame["in_night"].to_numpy(dtype=bool),
            keyed=keyed,
        )


def _kind_codes(kinds: np.ndarray) -> np.ndarray:
    """Index into KINDS of every row; an unknown or null kind is a contract violation."""
    codes, uniques = pd.factorize(kinds)
    unknown = sorted({str(kind) for kind in uniques if kind not in KINDS})
    if unknown or (codes < 0).any():
        raise ValueError(f"unknown record kinds {unknown or ['<null>']}; expected one of {KINDS}")
    return np.array([KINDS.index(kind) for kind in uniques], dtype=np.int8)[codes]


def _currency_codes(*arrays: np.ndarray) -> tuple[list[str], list[np.ndarray]]:
    """Sorted currency names and, per array, each row's index into them (one shared numbering)."""
    factorized = [pd.factorize(values) for values in arrays]
    if any((codes < 0).any() for codes, _ in factorized):
        raise ValueError("every provider record and ledger entry must carry a currency")
    names = sorted({str(name) for _, uniques in factorized for name in uniques})
    position = {name: index for index, name in enumerate(names)}
    return names, [
        np.array([position[str(name)] for name in uniques], dtype=np.int32)[codes]
        for codes, uniques in factorized
    ]


def _totals(amounts: np.ndarray, currency: np.ndarray, mask: np.ndarray, names: list[str]) -> dict[str, int]:
    """Exact integer sums of ``amounts[mask]`` per currency that occurs there, however large.

    An int64 sum wraps silently past 9.2 * 10^18. So each amount is split into its high and low 32 bits
    (``a == (a >> 32) * 2**32 + (a & 0xFFFFFFFF)``); each half sums exactly in int64 for fewer than 2^31
    rows whatever the amounts, and the halves are joined as Python integers."""
    codes, values = currency[mask], amounts[mask]
    high, low = np.zeros(len(names), dtype=np.int64), np.zeros(len(names), dtype=np.int64)
    np.add.at(high, codes, values >> 32)
    np.add.at(low, codes, values & 0xFFFFFFFF)
    return {
        names[code]: (int(high[code]) << 32) + int(low[code])
        for code in np.flatnonzero(np.bincount(codes, minlength=len(names)))
    }


# --- exact grouping of match keys --------------------------------------------------------------------


@dataclass(frozen=True)
class _Keys:
    """Dense group numbers of the match key, one array per input part, and how many groups exist."""

    groups: list[np.ndarray]
    count: int


def _match_keys(*parts: tuple[_IdBytes, np.ndarray]) -> _Keys:
    """Number the distinct (id, kind) keys across ``parts``; equal keys get equal numbers in every part.

    Each part is (ids, kind codes).
    """
    sizes = [len(ids.lengths) for ids, _ in parts]
    groups, count = _group(_key_words(parts))
    bounds = np.cumsum([0, *sizes])
    return _Keys([groups[start:end] for start, end in zip(bounds[:-1], bounds[1:], strict=True)], count)


@dataclass(frozen=True)
class _IdBytes:
    """Ids as UTF-8 bytes (Arrow's layout: one buffer, per-row start and length) and which are null."""

    data: np.ndarray  # uint8
    starts: np.ndarray  # int64
    lengths: np.ndarray  # int64
    null: np.ndarray  # bool

    @classmethod
    def of(cls, ids: pd.Series) -> _IdBytes:
        """One pass over the string objects (Arrow's converter is the fastest there is to hand)."""
        text = pa.array(ids, type=pa.large_string(), from_pandas=True)
        validity, offsets, data = text.buffers()
        bounds = np.frombuffer(offsets, dtype=np.int64)[text.offset : text.offset + len(text) + 1]
        return cls(
            data=np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, dtype=np.uint8),
            starts=bounds[:-1],
            lengths=np.diff(bounds),
            null=text.is_null().to_numpy(zero_copy_only=False)
            if text.null_count
            else np.zeros(len(text), bool),
        )

    def select(self, rows: np.ndarray) -> _IdBytes:
        return _IdBytes(self.data, self.starts[rows], self.lengths[rows], self.null[rows])


def _key_words(parts: Sequence[tuple[_IdBytes, np.ndarray]]) -> np.ndarray:
    """Each key as one row of uint64 words: the id's bytes, NUL padding, its length (2 bytes), its kind.

    Two rows are equal exactly when the keys are: the length keeps "ab" and "ab\\0" apart. Rows are
    copied per distinct id length (a provider's ids come in a handful) as whole windows of the buffer.
    A 32-byte row (ids up to 29 bytes, most are 27) also lets numpy gather rows as single items.
    """
    lengths = np.concatenate([ids.lengths for ids, _ in parts])
    longest = int(lengths.max(initial=0))
    if longest > _LONGEST_ID:
        raise ValueError(f"a provider_record_id of {longest} bytes is longer than {_LONGEST_ID}")
    width = -(-(longest + 3) // 8) * 8
    words = np.empty((len(lengths), width // 8), dtype=np.uint64)
    as_bytes = words.view(np.uint8)
    as_bytes[:, width - 3] = lengths & 0xFF
    as_bytes[:, width - 2] = lengths >> 8
    as_bytes[:, width - 1] = np.concatenate([kinds for _, kinds in parts])
    base = 0
    for ids, _ in parts:
        size = len(ids.lengths)
        for length in np.flatnonzero(np.bincount(ids.lengths)):
            if ids.lengths[0] == length and (ids.lengths == length).all():
                rows: slice | np.ndarray = slice(base, base + size)
                starts = ids.starts
            else:
                chosen = np.flatnonzero(ids.lengths == length)
                rows, starts = base + chosen, ids.starts[chosen]
            if length:
                windows = np.lib.stride_tricks.sliding_window_view(ids.data, int(length))
                as_bytes[rows, :length] = windows[starts]
            as_bytes[rows, length : width - 3] = 0
        base += size
    return words


def _key_hash(words: np.ndarray) -> np.ndarray:
    """A well-mixed 64-bit hash of each row; only its high bits are used."""
    hashed = np.zeros(len(words), dtype=np.uint64)
    for column in words.T:
        hashed ^= column
        hashed *= _GOLDEN
    hashed ^= hashed >> np.uint64(29)
    hashed *= _GOLDEN
    return hashed


def _group(words: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense group number per row such that rows share a number exactly when they are equal."""
    size = len(words)
    if size == 0:
        return np.empty(0, dtype=_INDEX), 0
    index_bits = max(1, (size - 1).bit_length())
    low = np.uint64((1 << index_bits) - 1)
    packed = _key_hash(words)
    packed &= ~low
    packed |= np.arange(size, dtype=np.uint64)
    packed.sort()
    order = (packed & low).astype(_INDEX)
    hashes = packed >> np.uint64(index_bits)
    same_hash = hashes[1:] == hashes[:-1]
    sorted_words = np.take(words, order, axis=0)
    same_key = _adjacent_equal(sorted_words)
    if (same_hash & ~same_key).any():
        order, sorted_words = _untangle(order, sorted_words, same_hash, same_key)
        same_key = _adjacent_equal(sorted_words)
    starts = np.empty(size, dtype=bool)
    starts[0] = True
    np.logical_not(same_key, out=starts[1:])
    sorted_groups = np.cumsum(starts, dtype=_INDEX) - 1
    groups = np.empty(size, dtype=_INDEX)
    groups[order] = sorted_groups
    return groups, int(sorted_groups[-1]) + 1


def _adjacent_equal(words: np.ndarray) -> np.ndarray:
    """Whether each row equals the previous row, word by word."""
    equal = words[1:, 0] == words[:-1, 0]
    for column in range(1, words.shape[1]):
        equal &= words[1:, column] == words[:-1, column]
    return equal


def _untangle(
    order: np.ndarray, words: np.ndarray, same_hash: np.ndarray, same_key: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sort the runs of equal hash that hold different keys exactly, so that equal keys are adjacent."""
    run = np.concatenate([[0], np.cumsum(~same_hash)])
    rows = np.flatnonzero(np.isin(run, run[1:][same_hash & ~same_key]))
    sort_keys = [*(words[rows, column] for column in reversed(range(words.shape[1]))), run[rows]]
    rows_sorted = rows[np.lexsort(sort_keys)]
    order, words = order.copy(), words.copy()
    order[rows], words[rows] = order[rows_sorted], words[rows_sorted]
    return order, words


def _position_by_group(groups: np.ndarray, count: int) -> np.ndarray:
    """For each group number, the (last) position holding it, or -1."""
    position = np.full(count, -1, dtype=_INDEX)
    position[groups] = np.arange(len(groups), dtype=_INDEX)
    return position


def _unique_position_by_group(name: str, groups: np.ndarray, count: int) -> np.ndarray:
    """As _position_by_group, for provider records, whose keys the provider guarantees unique."""
    position = _position_by_group(groups, count)
    if np.count_nonzero(position >= 0) != len(groups):
        raise ValueError(f"{name} holds more than one record with the same (provider_record_id, kind)")
    return position


# --- ledger groups and pairs -------------------------------------------------------------------------


def _primaries(
    ledger_records: pd.DataFrame, keyed: np.ndarray, groups: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per key group its matched entry (earliest posted, then smallest entry_id), and in-night extras.

    Both are positions into ``keyed``. Only the few groups with several entries need sorting.
    """
    primary = _position_by_group(groups, count)
    crowded = np.flatnonzero((np.bincount(groups, minlength=count) > 1)[groups])
    if len(crowded) == 0:
        return primary, crowded
    rows = keyed[crowded]
    order = np.lexsort(  # stable, by group, then posted_at (NaT last), then entry_id
        (
            ledger_records["entry_id"].to_numpy()[rows],
            ledger_records["posted_at"].to_numpy(dtype="datetime64[ns]")[rows],
            groups[crowded],
        )
    )
    group, positions = groups[crowded][order], crowded[order]
    first = np.ones(len(group), dtype=bool)
    first[1:] = group[1:] != group[:-1]
    primary[group[first]] = positions[first]
    extras = np.sort(positions[~first])
    in_night = ledger_records["in_night"].to_numpy(dtype=bool)[keyed[extras]]
    return primary, extras[in_night]


@dataclass(frozen=True)
class _Comparison:
    """Which figure of its provider record each entry is booked at, and whether it agrees with it.

    The entry's currency chooses: the presentment currency compares at the presentment amount, exactly;
    a conversion's settlement currency at the settlement amount, within the tolerance; any other currency
    agrees with neither. A record whose two currencies are one is compared at its presentment figure.
    """

    presentment: np.ndarray
    same_amount: np.ndarray
    settlement: np.ndarray
    within_tolerance: np.ndarray

    @classmethod
    def of(
        cls,
        figures: _Figures,
        records: np.ndarray | slice,
        entry_currency: np.ndarray,
        entry_amounts: np.ndarray,
        tolerance_bps: int,
    ) -> _Comparison:
        presentment = figures.currency[records] == entry_currency
        settlement_currency = figures.settlement_currency[records]
        settlement = (settlement_currency == entry_currency) & (settlement_currency != _NO_CURRENCY)
        settlement &= ~presentment
        within = np.zeros(len(settlement), dtype=bool)
        booked = np.flatnonzero(settlement)  # few rows: conversions booked in the settlement currency
        if len(booked):
            within[booked] = _within_tolerance(
                figures.settlement_amounts[records][booked], entry_amounts[booked], tolerance_bps
            )
        return cls(presentment, figures.amounts[records] == entry_amounts, settlement, within)

    @property
    def agrees(self) -> np.ndarray:
        return (self.presentment & self.same_amount) | (self.settlement & self.within_tolerance)

    @property
    def amount_mismatch(self) -> np.ndarray:
        return self.presentment & ~self.same_amount

    @property
    def fx_difference(self) -> np.ndarray:
        return self.settlement & ~self.within_tolerance

    @property
    def currency_mismatch(self) -> np.ndarray:
        return ~self.presentment & ~self.settlement


def _within_tolerance(settled: np.ndarray, booked: np.ndarray, tolerance_bps: int) -> np.ndarray:
    """``|settled - booked| * 10^4 <= bps * |settled|``, exactly in int64 for any settled amount.

    The product may pass 2^63; split ``|settled| = q * 10^4 + r`` and compare the integer difference with
    ``bps * q + floor(bps * r / 10^4)``, which is the same test (bps <= 10^4 keeps every term in range)."""
    magnitude = np.abs(settled)
    allowed = (
        tolerance_bps * (magnitude // BASIS_POINTS)
        + tolerance_bps * (magnitude % BASIS_POINTS) // BASIS_POINTS
    )
    return np.abs(settled - booked) <= allowed


@dataclass(frozen=True)
class _ProviderPairs:
    """Each provider record of the night against the ledger entry its key matches (``entry`` -1: none)."""

    entry: np.ndarray  # ledger position of the matched entry
    matched: np.ndarray
    timing: np.ndarray
    amount_mismatch: np.ndarray
    fx_difference: np.ndarray
    currency_mismatch: np.ndarray
    status_mismatch: np.ndarray
    missing_in_ledger: np.ndarray

    @classmethod
    def classify(
        cls,
        provider: _ProviderArrays,
        figures: _Figures,
        primary: np.ndarray,
        keyed: np.ndarray,
        ledger: _LedgerArrays,
        ledger_currency: np.ndarray,
        tolerance_bps: int,
    ) -> _ProviderPairs:
        booked = primary >= 0
        entry = np.full(len(primary), -1, dtype=_INDEX)
        entry[booked] = keyed[primary[booked]]
        safe_entry = np.maximum(entry, 0)
        in_night = booked & _gather(ledger.in_night, safe_entry, False)
        settled_in_night = provider.settled & in_night
        compared = _Comparison.of(
            figures,
            slice(None),
            _gather(ledger_currency, safe_entry, _NO_CURRENCY),
            _gather(ledger.amounts, safe_entry, 0),
            tolerance_bps,
        )
        return cls(
            entry=entry,
            matched=settled_in_night & compared.agrees,
            timing=provider.settled & booked & ~in_night,
            amount_mismatch=settled_in_night & compared.amount_mismatch,
            fx_difference=settled_in_night & compared.fx_difference,
            currency_mismatch=settled_in_night & compared.currency_mismatch,
            status_mismatch=~provider.settled & in_night,
            missing_in_ledger=provider.settled & ~booked,
        )


@dataclass(frozen=True)
class _LateEntries:
    """In-night primary entries that no record of the night matches, against ``provider_elsewhere``.

    ``pairs`` are (ledger position, elsewhere position) of the entries found there; ``missing`` are the
    ledger positions of entries the provider does not know at all.
    """

    missing: np.ndarray
    amount_mismatch: tuple[np.ndarray, np.ndarray]
    fx_difference: tuple[np.ndarray, np.ndarray]
    currency_mismatch: tuple[np.ndarray, np.ndarray]
    status_mismatch: tuple[np.ndarray, np.ndarray]
    timing_count: int

    @classmethod
    def classify(
        cls,
        entries: np.ndarray,
        other_match: np.ndarray,
        other: _ProviderArrays,
        figures: _Figures,
        ledger: _LedgerArrays,
        ledger_currency: np.ndarray,
        tolerance_bps: int,
    ) -> _LateEntries:
        found = other_match >= 0
        entry, record = entries[found], other_match[found]
        settled = other.settled[record]
        compared = _Comparison.of(
            figures, record, ledger_currency[entry], ledger.amounts[entry], tolerance_bps
        )

        def select(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return entry[mask], record[mask]

        return cls(
            missing=entries[~found],
            amount_mismatch=select(settled & compared.amount_mismatch),
            fx_difference=select(settled & compared.fx_difference),
            currency_mismatch=select(settled & compared.currency_mismatch),
            status_mismatch=select(~settled),
            timing_count=int(settled.sum()),
        )


def _gather(values: np.ndarray, positions: np.ndarray, fill: Any) -> np.ndarray:
    """``values[positions]``, or ``fill`` everywhere when there are no values to take from."""
    if len(values) == 0:
        return np.full(len(positions), fill, dtype=values.dtype)
    return values[positions]


# --- finding rows ------------------------------------------------------------------------------------

_Rows = dict[str, list[Any]]
_FIGURE_FIELDS: Final = ("amount_minor", "currency", "settlement_amount_minor", "settlement_currency")
_PROVIDER_FIELDS: Final = ("provider_record_id", "kind", "booking_id", "status", *_FIGURE_FIELDS)
_LEDGER_FIELDS: Final = ("entry_id", "provider_record_id", "kind", "booking_id", "amount_minor", "currency")


class _Findings:
    """Builds the discrepancy rows as plain columns; runs per finding only, never per input row."""

    def __init__(
        self,
        provider_records: pd.DataFrame,
        elsewhere: pd.DataFrame,
        ledger_records: pd.DataFrame,
        tolerance_bps: int,
        property_currency: str | None,
    ) -> None:
        self._provider = _Columns(provider_records)
        self._elsewhere = _Columns(elsewhere)
        self._ledger = _Columns(ledger_records)
        self._tolerance_bps = tolerance_bps
        self._property_currency = property_currency

    def missing_in_ledger(self, records: np.ndarray) -> _Rows:
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
            present(settled) and settled_currency == self._property_currency != currency
            for currency, settled, settled_currency in _columns(
                record, "currency", "settlement_amount_minor", "settlement_currency"
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

    def pairs(
        self, category: str, records: np.ndarray, entries: np.ndarray, elsewhere: bool = False
    ) -> _Rows:
        """An amount, FX, currency or status mismatch between a provider record and the entry booking it.

        An FX difference is stated in the settlement currency: its provider amount is the settlement
        amount, and its difference what the entry must change by to equal it."""
        record = (self._elsewhere if elsewhere else self._provider).take(records, _PROVIDER_FIELDS)
        entry = self._ledger.take(entries, _LEDGER_FIELDS)
        across = " (created in another night)" if elsewhere else ""
        sentences = [
            self._sentence(category, kind, f"{rid}{across}", status, figures, booked)
            for (kind, rid, status, *figures), booked in zip(
                _columns(record, "kind", "provider_record_id", "status", *_FIGURE_FIELDS),
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
        self, category: str, kind: str, record: str, status: str, figures: list[Any], booked: tuple[Any, ...]
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
                f"{off} off, beyond the property's tolerance of {self._tolerance_bps} bp"
            )
        if category == CURRENCY_MISMATCH:
            return (
                f"{movement} is in {cur} ({format_minor(amount, cur)}){_settled_as(*figures)} "
                f"but {posts} it in {posted_cur} ({format_minor(posted, posted_cur)})"
            )
        return f"provider status {status} but ledger posted {kind}"

    def missing_at_provider(self, entries: np.ndarray) -> _Rows:
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

    def missing_at_provider_unkeyed(self, entries: np.ndarray) -> _Rows:
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

    def duplicates(self, extras: np.ndarray, primaries: np.ndarray) -> _Rows:
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

    def take(self, rows: np.ndarray, names: Sequence[str]) -> _Rows:
        """The named columns at ``rows`` as Python lists (most kinds of finding have no row at all)."""
        if len(rows) == 0:
            return {name: [] for name in names}
        return {name: self._array(name)[rows].tolist() for name in names}

    def _array(self, name: str) -> np.ndarray:
        array = self._arrays.get(name)
        if array is None:
            array = self._arrays[name] = self._frame[name].to_numpy()
        return array


def _columns(picked: _Rows, *names: str) -> zip[tuple[Any, ...]]:
    return zip(*(picked[name] for name in names), strict=True)


def _rows(
    category: str,
    record: _Rows | None,
    entry: _Rows | None,
    *,
    difference: list[int],
    detail: list[str],
    record_key: list[str] | None = None,
) -> _Rows:
    """Discrepancy columns from the provider and/or ledger rows of each finding (aligned, same length)."""
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
    }


def _frame_of(parts: list[_Rows]) -> pd.DataFrame:
    """All findings in one frame, ordered by (category, record_key)."""
    columns = {name: [value for part in parts for value in part[name]] for name in DISCREPANCY_COLUMNS}
    keys = list(zip(columns["category"], columns["record_key"], strict=True))
    order = sorted(range(len(keys)), key=keys.__getitem__)  # stable, as the frame's sort was
    return discrepancy_frame({name: [values[i] for i in order] for name, values in columns.items()})
