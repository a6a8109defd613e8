"""The night's takings by tender: what the provider may hold, and what it never sees.

A folio's cash, bank transfers, vouchers and OTA-collected money never pass through the provider, so they
are set aside before anything is compared with it (``tenders.is_provider_tender``): no finding, no
proposal, no candidate of any match. They are still the hotel's takings, and the night counts them.

What a night auditor compares by hand, computed here (pure) and kept per property-night
(``batches/takings.py``):

- **takings per tender**: the night's in-night valid ledger entries of every tender (an unrecorded one
  named ``tenders.NOT_RECORDED``), count and signed sum per (tender, currency);
- **cards per brand on both sides**: the PMS's in-night entries the provider may hold (tender card or not
  recorded) against the provider's settled records of the night, count and signed sum per (brand,
  currency) on each side, the difference the provider's less the PMS's (``words.SIGN_CONVENTION``). A
  brand only one side has still shows, the other side at 0; a brand nobody can read is ``unknown``.

Takings are money a guest paid or was paid back: ``payment`` and ``refund`` rows (a negative payment, as a
PMS posts a refund, counts at its sign). A provider's fees, its disputes and their reversals are not the
guest's tender, and a ledger ``adjustment`` is a correction posted later: none of them is takings. A
record whose money has not moved at the provider (failed, uncaptured) is not either. A conversion counts
at its settlement figure, what the account received, as the night's provider totals do
(``diff.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pandas as pd

from recon_pipeline.frames import present
from recon_pipeline.tenders import CARD, NOT_RECORDED, TENDERS

LEDGER: Final = "ledger"  # the PMS's side
PROVIDER: Final = "provider"
TENDER: Final = "tender"  # what a line is grouped by
BRAND: Final = "brand"
UNKNOWN_BRAND: Final = "unknown"  # a card whose brand nobody recorded or nobody can read
TAKINGS_KINDS: Final = ("payment", "refund")
_TENDER_ORDER: Final = {tender: at for at, tender in enumerate((*TENDERS, NOT_RECORDED))}


@dataclass(frozen=True)
class Tendered:
    """A night's valid ledger entries split by whether the provider may hold them."""

    provider: pd.DataFrame  # tender card or not recorded: compared with the provider
    others: pd.DataFrame  # every other tender: counted, never compared


def by_tender(ledger: pd.DataFrame) -> Tendered:
    """Split validated entries (``tender`` in the vocabulary or null) by the provider's tenders."""
    if "tender" not in ledger.columns:
        return Tendered(ledger, ledger.iloc[0:0])
    tender = ledger["tender"].to_numpy(dtype=object)
    theirs = pd.isna(tender) | (tender == CARD)
    if theirs.all():
        return Tendered(ledger, ledger.iloc[0:0])
    return Tendered(
        ledger[theirs].reset_index(drop=True), ledger[~np.asarray(theirs, dtype=bool)].reset_index(drop=True)
    )


@dataclass(frozen=True)
class Takings:
    """One line of a night's takings: on ``side``, the ``name`` (a tender or a brand) ``grouped_by``
    names, in ``currency``: how many movements and their signed sum in minor units."""

    side: str  # LEDGER or PROVIDER (tenders are the ledger's only)
    grouped_by: str  # TENDER or BRAND
    name: str
    currency: str
    movements: int
    amount_minor: int

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.side, self.grouped_by, self.name, self.currency)


@dataclass(frozen=True)
class BrandTotals:
    """One card brand in one currency on both sides; a side without it holds 0."""

    brand: str
    currency: str
    ledger_movements: int
    ledger_minor: int
    provider_movements: int
    provider_minor: int

    @property
    def difference_minor(self) -> int:
        """The provider's sum less the PMS's (``words.SIGN_CONVENTION``)."""
        return self.provider_minor - self.ledger_minor


@dataclass(frozen=True)
class NightTakings:
    """A night's takings per tender and its cards per brand on both sides, as lines (what is stored)."""

    lines: tuple[Takings, ...] = field(default=())

    def tenders(self) -> list[Takings]:
        """The ledger's takings per tender, in the vocabulary's order (not recorded last), then currency."""
        return sorted(
            (line for line in self.lines if line.grouped_by == TENDER),
            key=lambda line: (_TENDER_ORDER.get(line.name, len(_TENDER_ORDER)), line.name, line.currency),
        )

    def brands(self) -> list[BrandTotals]:
        """Each (brand, currency) either side has, both sides side by side, by brand (unknown last)."""
        sides: dict[tuple[str, str], dict[str, Takings]] = {}
        for line in self.lines:
            if line.grouped_by == BRAND:
                sides.setdefault((line.name, line.currency), {})[line.side] = line
        shown = []
        for (brand, currency), by_side in sorted(sides.items(), key=lambda item: _brand_order(*item[0])):
            ledger, provider = by_side.get(LEDGER), by_side.get(PROVIDER)
            shown.append(
                BrandTotals(
                    brand,
                    currency,
                    0 if ledger is None else ledger.movements,
                    0 if ledger is None else ledger.amount_minor,
                    0 if provider is None else provider.movements,
                    0 if provider is None else provider.amount_minor,
                )
            )
        return shown

    @classmethod
    def combined(cls, many: Iterable[NightTakings]) -> NightTakings:
        """Several property-nights' takings summed line by line (a batch's report)."""
        return cls(
            _lines(
                (line.key, line.movements, line.amount_minor) for takings in many for line in takings.lines
            )
        )


def night_takings(tendered: Tendered, provider: pd.DataFrame) -> NightTakings:
    """The night's takings from its valid ledger entries split by tender (``by_tender``: both halves, the
    adjacent nights' entries left out here) and the provider's records of the night (the pull attributed
    to the property: a provider-record frame)."""
    counted: list[tuple[tuple[str, str, str, str], int, int]] = []
    for entries in (tendered.provider, tendered.others):
        taken = _in_night_takings(entries)
        tenders = [str(t) if present(t) else NOT_RECORDED for t in taken["tender"].tolist()]
        counted += _counted(LEDGER, TENDER, tenders, taken)
    cards = _in_night_takings(tendered.provider)
    counted += _counted(LEDGER, BRAND, _brands(cards["card_brand"]), cards)
    moved = provider["settled"].to_numpy(dtype=bool) & provider["kind"].isin(TAKINGS_KINDS).to_numpy()
    moved = provider[moved]
    counted += _counted(PROVIDER, BRAND, _brands(moved["card_brand"]), _as_settled(moved))
    return NightTakings(_lines(counted))


def _in_night_takings(entries: pd.DataFrame) -> pd.DataFrame:
    """The entries of the night (not its neighbours') that are takings: payments and refunds."""
    if "tender" not in entries.columns:  # a frame built before the PMS recorded tenders
        entries = entries.assign(tender=pd.Series([None] * len(entries), index=entries.index, dtype="object"))
    keep = entries["in_night"].to_numpy(dtype=bool) & entries["kind"].isin(TAKINGS_KINDS).to_numpy()
    return entries[keep]


def _as_settled(records: pd.DataFrame) -> pd.DataFrame:
    """``amount_minor`` and ``currency`` of each record as the account received it: a conversion's
    settlement figure, else its own."""
    if "settlement_amount_minor" not in records.columns or not len(records):
        return records
    settlement = records["settlement_amount_minor"].astype("Int64")
    converted = settlement.notna().to_numpy()
    if not converted.any():
        return records
    amounts = settlement.to_numpy(dtype=object, na_value=0)
    currencies = records["settlement_currency"].to_numpy(dtype=object)
    return records.assign(
        amount_minor=np.where(converted, amounts, records["amount_minor"].to_numpy(dtype=object)),
        currency=np.where(converted, currencies, records["currency"].to_numpy(dtype=object)),
    )


def _brands(column: pd.Series) -> list[str]:
    """Each row's brand in the one vocabulary (already read so by both frames), ``unknown`` for none."""
    return [str(brand) if present(brand) else UNKNOWN_BRAND for brand in column.tolist()]


def _counted(
    side: str, grouped_by: str, names: Sequence[str], rows: pd.DataFrame
) -> list[tuple[tuple[str, str, str, str], int, int]]:
    """One (key, 1, amount) per row: ``names`` are the rows' tenders or brands, in their order."""
    return [
        ((side, grouped_by, name, str(currency)), 1, int(amount))
        for name, currency, amount in zip(
            names, rows["currency"].tolist(), rows["amount_minor"].tolist(), strict=True
        )
    ]


def _lines(counted: Iterable[tuple[tuple[str, str, str, str], int, int]]) -> tuple[Takings, ...]:
    """Counts and exact sums per key (Python integers: no int64 wrap), as lines in key order."""
    movements: dict[tuple[str, str, str, str], int] = {}
    amounts: dict[tuple[str, str, str, str], int] = {}
    for key, n, amount in counted:
        movements[key] = movements.get(key, 0) + n
        amounts[key] = amounts.get(key, 0) + amount
    return tuple(Takings(*key, movements[key], amounts[key]) for key in sorted(movements))


def _brand_order(brand: str, currency: str) -> tuple[bool, str, str]:
    return (brand == UNKNOWN_BRAND, brand, currency)
