"""The night's payout findings: a failed payout, and a paid one the bank never showed by its deadline.

One payout is one finding (``record_key`` ``<payout id>:payout``, ``provider_record_id`` the payout id),
whatever the number of property-nights it covers; ``trace.finding_holder`` says which property holds it.
Its difference is the payout's amount: money the property expected at the bank that is not there. Neither
category proposes a ledger adjustment: the ledger is right, the money is elsewhere (back in the provider
balance, or lost between provider and bank) and a person has to chase it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import pandas as pd

from recon_pipeline.categories import PAYOUT_FAILED, PAYOUT_NOT_DEPOSITED, finding_frame
from recon_pipeline.money import format_minor
from recon_pipeline.providers.payouts import Payout

PAYOUT_KIND = "payout"


@dataclass(frozen=True)
class PayoutFinding:
    """A payout's finding before it is given its property and night."""

    category: str
    payout: Payout
    detail: str


def failed_finding(payout: Payout) -> PayoutFinding:
    """A failed payout: the bank refused it (``failure_code``) and the money went back to the balance."""
    amount = format_minor(payout.amount_minor, payout.currency)
    detail = (
        f"payout {payout.payout_id} of {amount} due {payout.arrival_date} failed "
        f"({payout.failure_code or 'no failure code'}): the money returned to the provider balance"
    )
    return PayoutFinding(PAYOUT_FAILED, payout, detail)


def not_deposited_finding(payout: Payout, deadline: date) -> PayoutFinding:
    """A paid payout with no matching bank credit by its deadline."""
    amount = format_minor(payout.amount_minor, payout.currency)
    detail = (
        f"payout {payout.payout_id} of {amount} paid for {payout.arrival_date} has no matching bank "
        f"credit by {deadline}"
    )
    return PayoutFinding(PAYOUT_NOT_DEPOSITED, payout, detail)


def findings_frame(findings: Sequence[PayoutFinding]) -> pd.DataFrame:
    """The finding frame of one property-night's payout findings, ordered by category and payout."""
    ordered = sorted(findings, key=lambda f: (f.category, f.payout.payout_id))
    amounts = [finding.payout.amount_minor for finding in ordered]
    return finding_frame(
        {
            "category": [finding.category for finding in ordered],
            "record_key": [f"{finding.payout.payout_id}:{PAYOUT_KIND}" for finding in ordered],
            "kind": [PAYOUT_KIND] * len(ordered),
            "provider_record_id": [finding.payout.payout_id for finding in ordered],
            "provider_amount_minor": amounts,
            "difference_minor": amounts,
            "currency": [finding.payout.currency for finding in ordered],
            "detail": [finding.detail for finding in ordered],
        }
    )
