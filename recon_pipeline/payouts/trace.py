"""Which property-night each movement of a payout belongs to, whether the payout adds up, and which
property holds the payout's finding.

A movement belongs to the account's property when the account serves one property (a connected
account); on an account several properties share (the platform), to the property the reconciliation
itself gave its source (``owners``: the ledger's and the findings' ``provider_record_id``). Its night is
the night of that property whose window holds the movement's time. A movement nobody owns stays
untraced (property and night null): the payout is then not fully traced.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from recon_pipeline.nights import night_of
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.payouts import Payout, PayoutTransaction


@dataclass(frozen=True)
class TracedTransaction:
    """A payout's movement with the property-night it belongs to (None, None: untraced)."""

    transaction: PayoutTransaction
    property_id: str | None
    night: str | None


def trace(
    transactions: Sequence[PayoutTransaction],
    account_properties: Sequence[PropertyRow],
    owners: Mapping[str, str],
) -> list[TracedTransaction]:
    """Each transaction with its property-night (see the module's rule)."""
    by_id = {row.property_id: row for row in account_properties}
    sole = account_properties[0] if len(account_properties) == 1 else None
    traced = []
    for transaction in transactions:
        owner = sole or by_id.get(owners.get(transaction.source_id or "", ""))
        night = None
        if owner is not None:
            night = night_of(transaction.created_at, owner.timezone, owner.night_cutoff).isoformat()
        traced.append(TracedTransaction(transaction, owner.property_id if owner else None, night))
    return traced


def sum_difference(payout: Payout, transactions: Sequence[PayoutTransaction] | None) -> int | None:
    """The payout's amount less its transactions' net (0: it adds up); None when it is untraceable."""
    if transactions is None:
        return None
    return payout.amount_minor - sum(transaction.net_minor for transaction in transactions)


def fully_traced(traced: Sequence[TracedTransaction] | None) -> bool:
    """Whether every movement of the payout was given a property-night (an untraceable payout is not)."""
    return traced is not None and all(item.property_id is not None for item in traced)


def finding_holder(
    traced: Sequence[TracedTransaction] | None, account_properties: Sequence[PropertyRow]
) -> str:
    """The property whose night holds the payout's finding: one payout is one finding, however many
    property-nights it covers.

    The account's property when it serves one; on a shared account, the property that carried the
    largest share of the payout's net (ties: the smallest property id), and when nothing is traced the
    account's first property by id, so that the finding still lands somewhere stable."""
    ids = sorted(row.property_id for row in account_properties)
    if not ids:
        raise ValueError("a payout's account serves no property")
    shares: Counter[str] = Counter()
    for item in traced or ():
        if item.property_id is not None:
            shares[item.property_id] += abs(item.transaction.net_minor)
    if len(ids) == 1 or not shares:
        return ids[0]
    return min(shares, key=lambda property_id: (-shares[property_id], property_id))
