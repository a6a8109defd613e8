"""The night's takings by tender: what the provider may hold, and what it never sees.

A folio's cash, bank transfers, vouchers and OTA-collected money never pass through the provider, so they
are set aside before anything is compared with it (``tenders.is_provider_tender``): no finding, no
proposal, no candidate of any match. They are still the hotel's takings, and the night counts them.

What a night auditor compares by hand, computed here (pure) and kept per property-night
(``storage/night_takings.py``):

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

from collections.abc import Iterable
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
Key = tuple[str, str, str, str]  # side, grouped_by, name, currency


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
    def key(self) -> Key:
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
    to the property: a provider-record frame). Worked in plain Python over each column's values: a night
    is a few dozen rows, where every pandas filter costs more than the loop."""
    counted: list[tuple[Key, int]] = []
    for entries, cards in ((tendered.provider, True), (tendered.others, False)):
        if not len(entries):
            continue
        tenders = entries["tender"].tolist() if "tender" in entries.columns else [None] * len(entries)
        for in_night, kind, tender, brand, currency, amount in zip(
            entries["in_night"].tolist(),
            entries["kind"].tolist(),
            tenders,
            entries["card_brand"].tolist(),
            entries["currency"].tolist(),
            entries["amount_minor"].tolist(),
            strict=True,
        ):
            if in_night and kind in TAKINGS_KINDS:
                tendered_as = str(tender) if present(tender) else NOT_RECORDED
                counted.append(((LEDGER, TENDER, tendered_as, str(currency)), int(amount)))
                if cards:
                    counted.append(((LEDGER, BRAND, _brand(brand), str(currency)), int(amount)))
    if len(provider):
        converted = provider["settlement_amount_minor"].astype("Int64").tolist()
        for settled, kind, brand, currency, amount, settlement, settlement_currency in zip(
            provider["settled"].tolist(),
            provider["kind"].tolist(),
            provider["card_brand"].tolist(),
            provider["currency"].tolist(),
            provider["amount_minor"].tolist(),
            converted,
            provider["settlement_currency"].tolist(),
            strict=True,
        ):
            if settled and kind in TAKINGS_KINDS:  # a conversion: what the account received
                if present(settlement):
                    amount, currency = settlement, settlement_currency
                counted.append(((PROVIDER, BRAND, _brand(brand), str(currency)), int(amount)))
    return NightTakings(_lines((key, 1, amount) for key, amount in counted))


def _brand(brand: object) -> str:
    """A brand in the one vocabulary (both frames read it so), ``unknown`` for none."""
    return str(brand) if present(brand) else UNKNOWN_BRAND


def _lines(counted: Iterable[tuple[Key, int, int]]) -> tuple[Takings, ...]:
    """Counts and exact sums per key (Python integers: no int64 wrap), as lines in key order."""
    movements: dict[Key, int] = {}
    amounts: dict[Key, int] = {}
    for key, n, amount in counted:
        movements[key] = movements.get(key, 0) + n
        amounts[key] = amounts.get(key, 0) + amount
    return tuple(Takings(*key, movements[key], amounts[key]) for key in sorted(movements))


def _brand_order(brand: str, currency: str) -> tuple[bool, str, str]:
    return (brand == UNKNOWN_BRAND, brand, currency)
