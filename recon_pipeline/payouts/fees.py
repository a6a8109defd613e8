"""A payout's fees against the ledger, for a property whose PMS books fees per payout (pure).

Such a PMS (``properties.fee_booking`` = per_payout, ``reconcile/fees.py``) books one ``fee`` entry per
payout, under the payout id, for the fees the provider took from the movements that payout carried; the
night's diff compares no fee of that property. Here, for each payout arriving in the night that is not
failed or canceled, and for each per_payout property of its account, the fees of the payout's
movements traced to that property (the sum of their balance transactions' fee figures: ``trace.py``) are
compared with what the ledger books under the payout id in the payout's currency, signed as the ledger
signs fees (a fee of 3.20 EUR is -320):

- equal: nothing (no fee taken and none booked is equal too);
- different: ``payout_fee_mismatch``, proposing ``correct_amount_fee`` for the payout id (the difference);
- nothing booked while the payout took fees: ``payout_fee_missing``, proposing ``post_missing_fee`` for the
  payout id (the fees).

One finding per payout and property, ``record_key`` ``<payout id>:fee``, held by the payout's arrival
night. A payout the provider does not break down (untraceable) is not judged: its fees are unknown; on a
shared account the movements nobody owns are nobody's fees.

Why categories of their own and not ``amount_mismatch``/``missing_in_ledger``: findings are kept true per
writer and category (``save_findings``): the night's reconciliation owns those two in every
property-night and clears what its diff did not see, so a payout's fee finding written under them would be
cleared by the next nightly run and re-opened by the next payouts run. As ``payout_fee_mismatch`` and
``payout_fee_missing`` (``PAYOUT_CATEGORIES``) they are the payouts asset's alone, cleared by its own
re-run once the entry is booked; their proposals are scoped the same way (``sync_adjustments``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from recon_pipeline.categories import PAYOUT_FEE_MISMATCH, PAYOUT_FEE_MISSING, finding_frame
from recon_pipeline.money import format_minor, upper_currency
from recon_pipeline.payouts.trace import TracedTransaction
from recon_pipeline.providers.payouts import Payout

FEE_KIND = "fee"
JUDGED_STATUSES = ("paid", "in_transit", "pending")  # a failed or canceled payout carried no fees to book


@dataclass(frozen=True)
class BookedFee:
    """One ledger entry booking (part of) a payout's fee: a ``fee`` entry under the payout id, or the PMS's
    entry of a posted correction of an earlier finding."""

    entry_id: str
    property_id: str
    payout_id: str
    amount_minor: int
    currency: str


@dataclass(frozen=True)
class PayoutFeeFinding:
    """A payout's fee finding for one property, before it is given its night."""

    category: str
    payout: Payout
    property_id: str
    provider_amount_minor: int  # the fees taken, signed as the ledger signs fees
    ledger_amount_minor: int | None  # what the ledger books under the payout id (None: nothing)
    ledger_entry_id: str | None  # the first entry booking it
    detail: str

    @property
    def difference_minor(self) -> int:
        return self.provider_amount_minor - (self.ledger_amount_minor or 0)


def judged(payout: Payout) -> bool:
    """Whether the payout's fees are compared: one the bank gets (or will), not a failed or canceled one."""
    return payout.status in JUDGED_STATUSES


def fees_taken_by_property(traced: Sequence[TracedTransaction]) -> dict[str, int]:
    """The fee figures of the payout's traced movements summed per property (as taken: positive)."""
    taken: dict[str, int] = {}
    for item in traced:
        if item.property_id is not None:
            taken[item.property_id] = taken.get(item.property_id, 0) + item.transaction.fee_minor
    return taken


def fee_findings(
    payout: Payout,
    traced: Sequence[TracedTransaction] | None,
    per_payout_properties: Collection[str],
    booked: Iterable[BookedFee],
) -> list[PayoutFeeFinding]:
    """The payout's fee findings, one per property of ``per_payout_properties`` whose ledger disagrees
    with the fees its movements took (see the module's rule); ``booked`` may hold other payouts' and
    properties' entries."""
    if traced is None or not per_payout_properties or not judged(payout):
        return []
    taken = fees_taken_by_property(traced)
    entries: dict[str, list[BookedFee]] = {}
    for fee in booked:
        if fee.payout_id == payout.payout_id and upper_currency(fee.currency) == payout.currency:
            entries.setdefault(fee.property_id, []).append(fee)
    found = []
    for property_id in sorted(per_payout_properties):
        expected = -taken.get(property_id, 0)
        mine = sorted(entries.get(property_id, []), key=lambda fee: fee.entry_id)
        ledger = sum(fee.amount_minor for fee in mine) if mine else None
        if ledger == expected or (ledger is None and expected == 0):
            continue
        fees = format_minor(-expected, payout.currency)
        if ledger is None:
            category = PAYOUT_FEE_MISSING
            detail = (
                f"payout {payout.payout_id} took {fees} in fees on {property_id}'s movements and the "
                f"ledger books no fee entry under its id"
            )
        else:
            category = PAYOUT_FEE_MISMATCH
            detail = (
                f"payout {payout.payout_id} took {fees} in fees on {property_id}'s movements; the "
                f"ledger's fee entries under its id ({', '.join(fee.entry_id for fee in mine)}) book "
                f"{format_minor(-ledger, payout.currency)}"
            )
        found.append(
            PayoutFeeFinding(
                category, payout, property_id, expected, ledger, mine[0].entry_id if mine else None, detail
            )
        )
    return found


def fee_findings_frame(findings: Sequence[PayoutFeeFinding]) -> pd.DataFrame:
    """The finding frame of one property-night's payout fee findings, ordered by category and payout."""
    ordered = sorted(findings, key=lambda f: (f.category, f.payout.payout_id))
    return finding_frame(
        {
            "category": [f.category for f in ordered],
            "record_key": [f"{f.payout.payout_id}:{FEE_KIND}" for f in ordered],
            "kind": [FEE_KIND] * len(ordered),
            "provider_record_id": [f.payout.payout_id for f in ordered],
            "ledger_entry_id": [f.ledger_entry_id for f in ordered],
            "provider_amount_minor": [f.provider_amount_minor for f in ordered],
            "ledger_amount_minor": [f.ledger_amount_minor for f in ordered],
            "difference_minor": [f.difference_minor for f in ordered],
            "currency": [f.payout.currency for f in ordered],
            "ledger_currency": [
                None if f.ledger_amount_minor is None else f.payout.currency for f in ordered
            ],
            "detail": [f.detail for f in ordered],
        }
    )


def booked_fees_of(rows: Iterable[Mapping[str, object]]) -> list[BookedFee]:
    """Rows with ``entry_id``, ``property_id``, ``payout_id``, ``amount_minor``, ``currency`` (as the store
    reads them), each entry once."""
    seen: dict[str, BookedFee] = {}
    for row in rows:
        entry_id = str(row["entry_id"])
        seen.setdefault(
            entry_id,
            BookedFee(
                entry_id,
                str(row["property_id"]),
                str(row["payout_id"]),
                int(row["amount_minor"]),  # type: ignore[call-overload]
                str(row["currency"]),
            ),
        )
    return list(seen.values())
