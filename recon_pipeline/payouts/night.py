"""One night of payouts, for every account: read, trace, store, match to the bank, judge.

The night ``N`` reads the payouts arriving on ``N`` and those whose deposit deadline is ``N``
(``deposit.arrivals_due_on``), so each payout is judged by exactly one night:
- ``payout_failed``: a payout arriving on ``N`` that failed, held by night ``N``;
- ``payout_not_deposited``: a paid payout due at the bank by ``N`` that no bank credit pays, held by
  night ``N`` (its deadline);
- ``payout_fee_mismatch`` / ``payout_fee_missing``: for a property whose PMS books fees per payout, a
  payout arriving on ``N`` whose fees the ledger's fee entries under its id do not book (``fees.py``),
  held by night ``N`` of that property; each proposes its correction of the fee entry.
Findings are written through the findings' writer under the payout categories only, and the proposals
through the adjustments' writer scoped the same way, for every property of every account read, so a
finding the bank or the ledger has since explained is cleared (and its proposal withdrawn) on a re-run.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import pandas as pd
from sqlalchemy import Engine

from recon_pipeline.categories import PAYOUT_CATEGORIES
from recon_pipeline.payouts import store
from recon_pipeline.payouts.deposit import arrivals_due_on
from recon_pipeline.payouts.fees import PayoutFeeFinding, fee_findings, fee_findings_frame, judged
from recon_pipeline.payouts.findings import (
    PayoutFinding,
    failed_finding,
    findings_frame,
    not_deposited_finding,
)
from recon_pipeline.payouts.trace import (
    TracedTransaction,
    finding_holder,
    fully_traced,
    sum_difference,
    trace,
)
from recon_pipeline.properties import FEE_PER_PAYOUT, PropertyRow
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.payouts import Payout
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.storage.adjustments import sync_adjustments
from recon_pipeline.storage.findings import save_findings

logger = logging.getLogger(__name__)


@dataclass
class PayoutNightResult:
    """What a night of payouts came to (the asset's metadata)."""

    payouts: int = 0
    traced: int = 0
    untraceable: int = 0  # payouts the provider does not break down (manual)
    failed: int = 0
    not_deposited: int = 0
    credits_matched: int = 0
    fee_mismatches: int = 0  # payout_fee_mismatch findings (property and payout)
    fees_missing: int = 0  # payout_fee_missing findings
    proposed: int = 0  # the corrections those findings propose
    sum_mismatches: dict[str, int] = field(default_factory=dict)  # payout id -> amount less net

    @property
    def sum_check(self) -> str:
        if not self.sum_mismatches:
            return "ok"
        listed = ", ".join(f"{pid} off by {diff}" for pid, diff in sorted(self.sum_mismatches.items()))
        return f"{len(self.sum_mismatches)} payouts do not add up: {listed}"


def accounts_of(properties: Sequence[PropertyRow]) -> dict[str | None, list[PropertyRow]]:
    """Properties by the account their money lives on (None: the platform), each list sorted by id."""
    grouped: dict[str | None, list[PropertyRow]] = defaultdict(list)
    for row in sorted(properties, key=lambda row: row.property_id):
        grouped[row.provider_account].append(row)
    return dict(grouped)


def reconcile_payouts(
    engine: Engine,
    client: ProviderClient,
    night: date,
    properties: Sequence[PropertyRow],
    deposit_days: int,
    holidays: Container[date],
    run_id: str | None,
) -> PayoutNightResult:
    """Night ``night`` of payouts for every account of ``properties`` (see the module's rule)."""
    due = arrivals_due_on(night, deposit_days, holidays)
    first = min([night, *due])
    gte = datetime(first.year, first.month, first.day, tzinfo=UTC)
    lt = datetime(night.year, night.month, night.day, tzinfo=UTC) + timedelta(days=1)
    result = PayoutNightResult()
    findings: dict[str, list[PayoutFinding]] = defaultdict(list)
    fee_found: dict[str, list[PayoutFeeFinding]] = defaultdict(list)
    read: list[PropertyRow] = []
    for account, account_properties in accounts_of(properties).items():
        arriving = client.payouts_arriving(account, gte, lt)
        if arriving is None:  # this provider's payouts are not read through its API
            continue
        listed = [p for p in arriving if p.arrival_date == night or p.arrival_date in due]
        read += account_properties
        recorded = {p.payout_id: _record(engine, client, p, account_properties, result) for p in listed}
        holders = {payout_id: holder for payout_id, (holder, _) in recorded.items()}
        per_payout = [row.property_id for row in account_properties if row.fee_booking_mode == FEE_PER_PAYOUT]
        judged_tonight = [p for p in listed if p.arrival_date == night and judged(p)]
        if per_payout and judged_tonight:
            with engine.connect() as connection:
                booked = store.booked_payout_fees(
                    connection, per_payout, [p.payout_id for p in judged_tonight], night.isoformat()
                )
            for payout in judged_tonight:
                for fee_finding in fee_findings(payout, recorded[payout.payout_id][1], per_payout, booked):
                    fee_found[fee_finding.property_id].append(fee_finding)
                    result.fee_mismatches += fee_finding.ledger_amount_minor is not None
                    result.fees_missing += fee_finding.ledger_amount_minor is None
        with engine.begin() as connection:
            result.credits_matched += store.match_unmatched(connection)
            due_paid = {p.payout_id for p in listed if p.status == "paid" and p.arrival_date in due}
            deposited = store.deposited_payouts(connection, due_paid)
        for payout in listed:
            if payout.status == "failed" and payout.arrival_date == night:
                findings[holders[payout.payout_id]].append(failed_finding(payout))
                result.failed += 1
            elif payout.payout_id in due_paid - deposited:
                findings[holders[payout.payout_id]].append(not_deposited_finding(payout, night))
                result.not_deposited += 1
    now = datetime.now(UTC)
    with engine.begin() as connection:
        for row in read:
            frame = _findings(
                findings_frame(findings.get(row.property_id, [])),
                fee_findings_frame(fee_found.get(row.property_id, [])),
            )
            night_text = night.isoformat()
            proposals = plan_adjustments(row.property_id, night_text, frame, run_id, now)
            sync_adjustments(connection, row.property_id, night_text, proposals, now, PAYOUT_CATEGORIES)
            save_findings(connection, row.property_id, night_text, frame, run_id, now, PAYOUT_CATEGORIES)
            result.proposed += len(proposals)
    return result


def _findings(*frames: pd.DataFrame) -> pd.DataFrame:
    """One property-night's payout findings, ordered by category and record key."""
    found = [frame for frame in frames if len(frame)]
    if len(found) <= 1:
        return found[0] if found else frames[0]
    stacked = pd.concat(found, ignore_index=True)
    return stacked.sort_values(["category", "record_key"], kind="stable", ignore_index=True)


def _record(
    engine: Engine,
    client: ProviderClient,
    payout: Payout,
    account_properties: Sequence[PropertyRow],
    result: PayoutNightResult,
) -> tuple[str, list[TracedTransaction] | None]:
    """Read the payout's transactions, trace them, check they add up and store it all; returns the
    property that holds the payout's finding, and the traced transactions (None: untraceable)."""
    transactions = client.payout_transactions(payout)
    with engine.begin() as connection:
        owners = {}
        if transactions and len(account_properties) > 1:
            owners = store.source_owners(connection, [t.source_id for t in transactions if t.source_id])
        traced = None if transactions is None else trace(transactions, account_properties, owners)
        difference = sum_difference(payout, transactions)
        holder = finding_holder(traced, account_properties)
        complete = fully_traced(traced)
        store.save_payout(
            connection, client.name, payout, traced, difference, complete, holder, datetime.now(UTC)
        )
    result.payouts += 1
    result.traced += complete
    result.untraceable += transactions is None
    if difference:
        logger.warning("payout %s: amount less its transactions' net is %d", payout.payout_id, difference)
        result.sum_mismatches[payout.payout_id] = difference
    return holder, traced
