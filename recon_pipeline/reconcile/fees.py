"""Fees booked the hotel's way: what the night's diff sees of the provider's fees, by the property's
``fee_booking`` (pure).

A provider takes a fee per charge (and per dispute) and reports it as a ``fee`` row under the movement's
id. Not every PMS books it so: many book the gross and let the fees reach accounting from the payout.
Comparing such a ledger fee by fee would make every charge a ``missing_in_ledger`` fee proposing
``post_missing_fee``: findings that are not real and money that would be wrong. So, per mode
(``properties.FEE_BOOKINGS``):

- ``per_movement`` (today's, the default): both frames as they are; nothing to summarise.
- ``per_payout``: the PMS books one ``fee`` entry per payout under the payout id. Neither side's fees are
  compared in the night: the provider's fee rows and the ledger's ``fee`` entries leave the diff, and
  the payouts asset compares each payout's fees with the entries under its id (``payouts/fees.py``).
- ``none``: the PMS books no fee. The provider's fee rows leave the diff, so no fee is ever missing in the
  ledger; the ledger's ``fee`` entries stay. An entry the PMS booked anyway is compared as today: against
  the provider's fee row of its id when there is one (kept for that purpose: matched when equal, an
  ``amount_mismatch`` when not, a timing difference when the fee is another night's), and
  ``missing_at_provider`` when the provider holds no such fee.

Under ``per_payout`` and ``none`` the night's report shows what the provider took (``FeesTaken``): the
count and sum of its settled fee rows per currency, a conversion's at its settlement figure (what the
account was charged), as the diff's totals count it. The diff's provider totals then exclude fees, as
the gross ledger does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from recon_pipeline.frames import present
from recon_pipeline.money import format_minor
from recon_pipeline.properties import FEE_BOOKINGS, FEE_NONE, FEE_PER_MOVEMENT

FEE_KIND = "fee"


@dataclass(frozen=True)
class FeesTaken:
    """The fees the provider took in a night whose ledger does not book them per movement: per currency
    how many fee rows and their sum, in minor units as taken (a fee of 3.20 EUR is 320)."""

    count_by_currency: dict[str, int] = field(default_factory=dict)
    amount_by_currency: dict[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(self.count_by_currency.values())

    def lines(self) -> list[str]:
        """One "12 fees, 34.50 EUR" per currency, sorted by currency; none when nothing was taken."""
        return [
            f"{self.count_by_currency[currency]} fees, "
            f"{format_minor(self.amount_by_currency.get(currency, 0), currency)}"
            for currency in sorted(self.count_by_currency)
        ]

    def as_text(self) -> str:
        """The report's sentence: what the provider took that the ledger does not book per movement."""
        taken = "; ".join(self.lines()) or "none"
        return f"Fees the provider took (not booked per movement): {taken}"

    def frame(self) -> pd.DataFrame:
        """``currency``, ``count``, ``amount_minor`` (and ``amount``, formatted) per currency: what a CSV or
        HTML report shows."""
        currencies = sorted(self.count_by_currency)
        amounts = [self.amount_by_currency.get(currency, 0) for currency in currencies]
        return pd.DataFrame(
            {
                "currency": pd.Series(currencies, dtype="object"),
                "count": pd.Series([self.count_by_currency[c] for c in currencies], dtype="int64"),
                "amount_minor": pd.Series(amounts, dtype="int64"),
                "amount": pd.Series(
                    [format_minor(a, c) for a, c in zip(amounts, currencies, strict=True)], dtype="object"
                ),
            }
        )

    @classmethod
    def combined(cls, parts: Iterable[FeesTaken]) -> FeesTaken:
        """Several nights' (a batch's) fees, summed per currency."""
        counts: dict[str, int] = {}
        amounts: dict[str, int] = {}
        for part in parts:
            for currency, count in part.count_by_currency.items():
                counts[currency] = counts.get(currency, 0) + count
            for currency, amount in part.amount_by_currency.items():
                amounts[currency] = amounts.get(currency, 0) + amount
        return cls(counts, amounts)


def check_fee_booking(mode: str) -> str:
    """``mode`` when it is one of ``FEE_BOOKINGS``; a one-line ValueError naming it otherwise."""
    if mode not in FEE_BOOKINGS:
        raise ValueError(f"fee booking must be one of {', '.join(FEE_BOOKINGS)}, not {mode!r}")
    return mode


def fees_taken(provider_records: pd.DataFrame) -> FeesTaken:
    """Count and sum per currency of the settled ``fee`` rows of ``provider_records`` (a provider-record
    frame: fees signed negative, as the ledger signs them; a converted fee at its settlement figure)."""
    at = np.flatnonzero(_settled_fees(provider_records).to_numpy(dtype=bool))
    if not len(at):
        return FeesTaken()
    rows = provider_records.iloc[at]
    converts = {"settlement_currency", "settlement_amount_minor"} <= set(rows.columns)
    settlements = (
        zip(rows["settlement_currency"].tolist(), rows["settlement_amount_minor"].tolist(), strict=True)
        if converts
        else ((None, None) for _ in range(len(rows)))
    )
    counts: dict[str, int] = {}
    sums: dict[str, int] = {}
    # A night's few fees: summed in Python, which costs a fraction of a pandas group-by.
    for currency, amount, (settled_in, settled) in zip(
        rows["currency"].tolist(), rows["amount_minor"].tolist(), settlements, strict=True
    ):
        if present(settled_in) and present(settled):
            currency, amount = settled_in, settled
        counts[str(currency)] = counts.get(str(currency), 0) + 1
        sums[str(currency)] = sums.get(str(currency), 0) - int(amount)
    return FeesTaken(dict(sorted(counts.items())), dict(sorted(sums.items())))


def fees_for_diff(
    provider_records: pd.DataFrame, ledger_records: pd.DataFrame, mode: str
) -> tuple[pd.DataFrame, pd.DataFrame, FeesTaken | None]:
    """The provider records and ledger entries the night's diff should see under the fee booking ``mode``
    (see the module's rule), and what the provider took: None under per_movement, where both frames are
    returned as they are (the same objects), so a property booking fees per movement reconciles exactly
    as before.

    ``provider_records`` is the night's pull attributed to the property; ``ledger_records`` the canonical
    ledger frame (ids mapped to charge ids, posted adjustments folded in, the adjacent nights' entries
    with ``in_night`` False). Apply it before the look-up of unmatched ledger ids and before the
    matcher, so that neither sees a fee the night does not compare."""
    check_fee_booking(mode)
    if mode == FEE_PER_MOVEMENT:
        return provider_records, ledger_records, None
    taken = fees_taken(provider_records)
    is_fee = (provider_records["kind"] == FEE_KIND).to_numpy(dtype=bool)
    booked_fee = (ledger_records["kind"] == FEE_KIND).to_numpy(dtype=bool)
    if mode == FEE_NONE:
        booked_ids = set(ledger_records.loc[booked_fee, "provider_record_id"].dropna().tolist())
        compared = provider_records["provider_record_id"].isin(booked_ids).to_numpy(dtype=bool)
        return _rows(provider_records, ~is_fee | compared), ledger_records, taken
    return _rows(provider_records, ~is_fee), _rows(ledger_records, ~booked_fee), taken


def _settled_fees(provider_records: pd.DataFrame) -> pd.Series:
    return (provider_records["kind"] == FEE_KIND) & provider_records["settled"].astype(bool)


def _rows(frame: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """``frame`` itself when every row is kept (no copy), else the kept rows renumbered from 0."""
    if keep.all():
        return frame
    return frame[keep].reset_index(drop=True)
