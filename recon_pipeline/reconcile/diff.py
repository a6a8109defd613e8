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

This module holds the rules; the grouping of equal (id, kind) keys across records and entries is
``reconcile/grouping.py``, and the finding rows with their sentences are ``reconcile/findings.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

from recon_pipeline.categories import (
    AMOUNT_MISMATCH,
    CURRENCY_MISMATCH,
    FX_DIFFERENCE,
    KINDS,
    STATUS_MISMATCH,
    kind_codes,
)
from recon_pipeline.frames import SCOPE, Cut, pieces, sorted_by, stack
from recon_pipeline.money import BASIS_POINTS
from recon_pipeline.providers.records import empty_provider_records
from recon_pipeline.reconcile.findings import Findings, frame_of
from recon_pipeline.reconcile.grouping import INDEX, IdBytes, group_keys, position_by_group, scoped

_ADJUSTMENT: Final = KINDS.index("adjustment")
_NO_CURRENCY: Final = -1  # currency code of a record's settlement side when it was not converted


@dataclass(frozen=True)
class DiffResult:
    """What the diff of one night found, and the figures an analyst checks the findings against."""

    findings: pd.DataFrame  # FINDING_COLUMNS, ordered by (category, record_key)
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
    parts = [frame for frame in (result.findings, *extra) if not frame.empty]
    findings = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return dataclasses.replace(result, findings=sorted_by(findings, "category", "record_key"))


def unmatched_ledger_record_ids(provider_records: pd.DataFrame, ledger_records: pd.DataFrame) -> list[str]:
    """Sorted distinct provider ids of in-night ledger entries that no record of the night's pull matches.

    The caller fetches these from the provider by id: a record found there was created in another night
    (a timing difference), a record not found does not exist (missing at the provider).
    """
    return unmatched_ids_of_nights([NightToDiff(provider_records, ledger_records)])[0]


def unmatched_ids_of_nights(nights: Sequence[NightToDiff]) -> list[list[str]]:
    """:func:`unmatched_ledger_record_ids` of many nights at once, stacked (their provider records and
    ledgers only)."""
    if not nights:
        return []
    provider_records = stack([night.provider_records for night in nights], _cuts(nights, 0))
    ledger_records = stack([night.ledger_records for night in nights], _cuts(nights, 1))
    ledger = _LedgerArrays.of(ledger_records)
    provider = _ProviderArrays.of(provider_records)
    keyed = np.flatnonzero(ledger.keyed)
    keys = scoped(
        group_keys((provider.ids, provider.kinds), (ledger.ids, ledger.kinds[keyed])),
        (provider.scopes, ledger.scopes[keyed]),
    )
    provider_by_group = position_by_group(keys.groups[0], keys.count)
    rows = keyed[ledger.in_night[keyed] & (provider_by_group[keys.groups[1]] < 0)]
    found: list[set[str]] = [set() for _ in nights]
    ids = ledger_records["provider_record_id"].to_numpy()[rows].tolist()
    for scope, record_id in zip(ledger.scopes[rows].tolist(), ids, strict=True):
        found[scope].add(str(record_id))
    return [sorted(night) for night in found]


@dataclass(frozen=True)
class NightToDiff:
    """One property-night's input to the diff (see :func:`diff_night` for each part)."""

    provider_records: pd.DataFrame
    ledger_records: pd.DataFrame
    provider_elsewhere: pd.DataFrame | None = None
    fx_tolerance_bps: int = 0
    property_currency: str | None = None
    # where the two frames were cut from, when the matcher ran the night in a stack (``MatchOutcome.cuts``)
    cuts: tuple[Cut, Cut] | None = None


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
    night = NightToDiff(
        provider_records, ledger_records, provider_elsewhere, fx_tolerance_bps, property_currency
    )
    return diff_nights([night])[0]


def diff_nights(nights: Sequence[NightToDiff]) -> list[DiffResult]:
    """:func:`diff_night` of many nights at once: their frames stacked (``frames.SCOPE``), every key
    scoped by its night, so a night's result is what it is alone, row for row, and a batch pays the
    diff's fixed costs once."""
    if not nights:
        return []
    for night in nights:
        if not 0 <= night.fx_tolerance_bps <= BASIS_POINTS:
            raise ValueError(
                f"fx_tolerance_bps must be from 0 to {BASIS_POINTS}, not {night.fx_tolerance_bps}"
            )
    count = len(nights)
    provider_records = stack([night.provider_records for night in nights], _cuts(nights, 0))
    elsewhere = stack(
        [
            empty_provider_records() if night.provider_elsewhere is None else night.provider_elsewhere
            for night in nights
        ]
    )
    ledger_records = stack([night.ledger_records for night in nights], _cuts(nights, 1))
    tolerances = np.array([night.fx_tolerance_bps for night in nights], dtype=np.int64)
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
    keyed = np.flatnonzero(ledger.keyed)  # ledger positions of the entries that carry a match key
    keys = scoped(
        group_keys(
            (provider.ids, provider.kinds), (ledger.ids, ledger.kinds[keyed]), (other.ids, other.kinds)
        ),
        (provider.scopes, ledger.scopes[keyed], other.scopes),
    )
    provider_group, keyed_group, other_group = keys.groups
    provider_by_group = _unique_position_by_group("provider_records", provider_group, keys.count)
    other_by_group = _unique_position_by_group("provider_elsewhere", other_group, keys.count)

    keyed_in_night = ledger.in_night[keyed]
    primary_by_group, extras = _primaries(ledger_records, keyed, keyed_group, keys.count)
    pairs = _ProviderPairs.classify(
        provider,
        tonight,
        primary_by_group[provider_group],
        keyed,
        ledger,
        ledger_currency,
        tolerances[provider.scopes],
    )

    is_primary = primary_by_group[keyed_group] == np.arange(len(keyed), dtype=INDEX)
    unpaired = is_primary & keyed_in_night & (provider_by_group[keyed_group] < 0)
    late = _LateEntries.classify(
        keyed[unpaired],
        other_by_group[keyed_group[unpaired]],
        other,
        earlier,
        ledger,
        ledger_currency,
        tolerances,
    )

    in_night_counted = ledger.in_night & (ledger.kinds != _ADJUSTMENT)
    unkeyed = np.flatnonzero(in_night_counted & ~ledger.keyed)
    rows = Findings(
        provider_records,
        elsewhere,
        ledger_records,
        [night.fx_tolerance_bps for night in nights],
        [night.property_currency for night in nights],
    )
    found = frame_of(
        [
            rows.missing_in_ledger(np.flatnonzero(pairs.missing_in_ledger)),
            *(
                rows.pairs(category, np.flatnonzero(mask), pairs.entry[mask])
                for category, mask in (
                    (AMOUNT_MISMATCH, pairs.amount_mismatch),
                    (FX_DIFFERENCE, pairs.fx_difference),
                    (CURRENCY_MISMATCH, pairs.currency_mismatch),
                    (STATUS_MISMATCH, pairs.status_mismatch),
                )
            ),
            *(
                rows.pairs(category, records, entries, elsewhere=True)
                for category, (entries, records) in (
                    (AMOUNT_MISMATCH, late.amount_mismatch),
                    (FX_DIFFERENCE, late.fx_difference),
                    (CURRENCY_MISMATCH, late.currency_mismatch),
                    (STATUS_MISMATCH, late.status_mismatch),
                )
            ),
            rows.missing_at_provider(late.missing),
            rows.missing_at_provider_unkeyed(unkeyed),
            rows.duplicates(keyed[extras], keyed[primary_by_group[keyed_group[extras]]]),
        ]
    )
    findings = pieces(found, found[SCOPE].to_numpy(), count)
    held_amounts, held_currency = tonight.held_amounts, tonight.held_currency
    matched = _per_scope(provider.scopes, pairs.matched, count)
    timing = _per_scope(provider.scopes, pairs.timing, count) + _per_scope(
        ledger.scopes[late.timing], np.ones(len(late.timing), dtype=bool), count
    )
    held = (held_amounts, held_currency)
    matched_totals = _totals(*held, pairs.matched, currencies, provider.scopes, count)
    provider_totals = _totals(*held, provider.settled, currencies, provider.scopes, count)
    ledger_totals = _totals(
        ledger.amounts, ledger_currency, in_night_counted, currencies, ledger.scopes, count
    )
    return [
        DiffResult(
            findings=findings[at],
            matched_count=int(matched[at]),
            matched_amount_by_currency=matched_totals[at],
            timing_difference_count=int(timing[at]),
            provider_total_by_currency=provider_totals[at],
            ledger_total_by_currency=ledger_totals[at],
        )
        for at in range(count)
    ]


def _cuts(nights: Sequence[NightToDiff], side: int) -> list[Cut | None]:
    """Where each night's provider records (``side`` 0) or ledger (1) were cut from, where known."""
    return [None if night.cuts is None else night.cuts[side] for night in nights]


def _per_scope(scopes: np.ndarray, mask: np.ndarray, count: int) -> np.ndarray:
    """How many rows of each scope ``mask`` holds."""
    return np.bincount(scopes[mask], minlength=count)


# --- frame columns as arrays -------------------------------------------------------------------------


@dataclass(frozen=True)
class _ProviderArrays:
    """The columns of a provider-record frame the diff computes on, as numpy arrays."""

    ids: IdBytes
    kinds: np.ndarray
    amounts: np.ndarray
    settled: np.ndarray
    converted: np.ndarray  # presented in one currency and settled in another
    settlement_amounts: np.ndarray  # the converted rows' settlement amounts, 0 elsewhere
    settlement_currencies: np.ndarray  # the converted rows' settlement currencies only (for one numbering)
    scopes: np.ndarray  # each row's night in a stack (``frames.SCOPE``), 0 for one night

    @classmethod
    def of(cls, frame: pd.DataFrame) -> _ProviderArrays:
        ids = IdBytes.of(frame["provider_record_id"])
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
            kinds=kind_codes(frame["kind"].to_numpy()),
            amounts=frame["amount_minor"].to_numpy(dtype=np.int64),
            settled=frame["settled"].to_numpy(dtype=bool),
            converted=converted,
            settlement_amounts=settlement.to_numpy(dtype=np.int64, na_value=0),
            settlement_currencies=currencies,
            scopes=_scopes(frame),
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

    ids: IdBytes  # of the keyed entries only
    kinds: np.ndarray
    amounts: np.ndarray
    in_night: np.ndarray
    keyed: np.ndarray
    scopes: np.ndarray

    @classmethod
    def of(cls, frame: pd.DataFrame) -> _LedgerArrays:
        kinds = kind_codes(frame["kind"].to_numpy())
        all_ids = IdBytes.of(frame["provider_record_id"])
        keyed = (kinds != _ADJUSTMENT) & ~all_ids.null
        return cls(
            ids=all_ids.select(keyed),
            kinds=kinds,
            amounts=frame["amount_minor"].to_numpy(dtype=np.int64),
            in_night=frame["in_night"].to_numpy(dtype=bool),
            keyed=keyed,
            scopes=_scopes(frame),
        )


def _scopes(frame: pd.DataFrame) -> np.ndarray:
    """Each row's night in a stack (``frames.SCOPE``), 0 everywhere for a frame of one night."""
    if SCOPE in frame.columns:
        return frame[SCOPE].to_numpy(dtype=np.int64)
    return np.zeros(len(frame), dtype=np.int64)


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


def _totals(
    amounts: np.ndarray,
    currency: np.ndarray,
    mask: np.ndarray,
    names: list[str],
    scopes: np.ndarray,
    count: int,
) -> list[dict[str, int]]:
    """Per scope, exact integer sums of ``amounts[mask]`` per currency that occurs there, however large.

    An int64 sum wraps silently past 9.2 * 10^18. So each amount is split into its high and low 32 bits
    (``a == (a >> 32) * 2**32 + (a & 0xFFFFFFFF)``); each half sums exactly in int64 for fewer than 2^31
    rows whatever the amounts, and the halves are joined as Python integers."""
    width = len(names)
    codes, values = scopes[mask] * width + currency[mask], amounts[mask]
    high, low = np.zeros(count * width, dtype=np.int64), np.zeros(count * width, dtype=np.int64)
    np.add.at(high, codes, values >> 32)
    np.add.at(low, codes, values & 0xFFFFFFFF)
    totals: list[dict[str, int]] = [{} for _ in range(count)]
    for code in np.flatnonzero(np.bincount(codes, minlength=count * width)).tolist():
        totals[code // width][names[code % width]] = (int(high[code]) << 32) + int(low[code])
    return totals


# --- key groups ----------------------------------------------------------------------------------------


def _unique_position_by_group(name: str, groups: np.ndarray, count: int) -> np.ndarray:
    """As ``position_by_group``, for provider records, whose keys the provider guarantees unique."""
    position = position_by_group(groups, count)
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
    primary = position_by_group(groups, count)
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
        tolerance_bps: np.ndarray,
    ) -> _Comparison:
        presentment = figures.currency[records] == entry_currency
        settlement_currency = figures.settlement_currency[records]
        settlement = (settlement_currency == entry_currency) & (settlement_currency != _NO_CURRENCY)
        settlement &= ~presentment
        within = np.zeros(len(settlement), dtype=bool)
        booked = np.flatnonzero(settlement)  # few rows: conversions booked in the settlement currency
        if len(booked):
            within[booked] = _within_tolerance(
                figures.settlement_amounts[records][booked], entry_amounts[booked], tolerance_bps[booked]
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


def _within_tolerance(settled: np.ndarray, booked: np.ndarray, tolerance_bps: np.ndarray) -> np.ndarray:
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
        tolerance_bps: np.ndarray,  # per provider record
    ) -> _ProviderPairs:
        booked = primary >= 0
        entry = np.full(len(primary), -1, dtype=INDEX)
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
    timing: np.ndarray  # ledger positions of the entries whose record settled in another night

    @classmethod
    def classify(
        cls,
        entries: np.ndarray,
        other_match: np.ndarray,
        other: _ProviderArrays,
        figures: _Figures,
        ledger: _LedgerArrays,
        ledger_currency: np.ndarray,
        tolerances: np.ndarray,  # per scope
    ) -> _LateEntries:
        found = other_match >= 0
        entry, record = entries[found], other_match[found]
        settled = other.settled[record]
        compared = _Comparison.of(
            figures, record, ledger_currency[entry], ledger.amounts[entry], tolerances[ledger.scopes[entry]]
        )

        def select(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return entry[mask], record[mask]

        return cls(
            missing=entries[~found],
            amount_mismatch=select(settled & compared.amount_mismatch),
            fx_difference=select(settled & compared.fx_difference),
            currency_mismatch=select(settled & compared.currency_mismatch),
            status_mismatch=select(~settled),
            timing=entry[settled],
        )


def _gather(values: np.ndarray, positions: np.ndarray, fill: Any) -> np.ndarray:
    """``values[positions]``, or ``fill`` everywhere when there are no values to take from."""
    if len(values) == 0:
        return np.full(len(positions), fill, dtype=values.dtype)
    return values[positions]
