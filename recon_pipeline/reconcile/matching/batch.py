"""Many nights matched as one: their frames stacked, each row carrying its night (``frames.SCOPE``).

Every step of the matcher keys on the scope too (each tier's join, the split search, the refunds' and the
reversals' keys, a rejection), so rows of two nights never pair and a night's outcome is what it would
be alone, row for row. What a night costs is then its rows, not the fixed cost of a dozen array and frame
calls: a batch of 250 property-nights pays those once. ``split`` hands each night its own outcome.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from recon_pipeline.frames import SCOPE, Cut, pieces, sorted_by
from recon_pipeline.reconcile.matching.outcome import MatchOutcome, StackedOutcome, counts_of


def split(stacked: StackedOutcome, columns: Sequence[tuple[pd.Index, pd.Index]]) -> list[MatchOutcome]:
    """Each night's outcome out of the stacked one, its frames with the columns its input had (``columns``:
    the provider records' and the ledger's, per night); a stack without the scope column is one night,
    handed back as it is."""
    if SCOPE not in stacked.ledger.columns:
        frames = (stacked.provider_records, stacked.ledger, stacked.matches, stacked.findings)
        return [_outcome(stacked, *frames, 0)]
    count = len(columns)
    provider_columns = [provider for provider, _ in columns]
    ledger_columns = [ledger for _, ledger in columns]
    providers = pieces(
        stacked.provider_records, stacked.provider_records[SCOPE].to_numpy(), count, provider_columns
    )
    ledgers = pieces(stacked.ledger, stacked.ledger[SCOPE].to_numpy(), count, ledger_columns)
    matches = pieces(stacked.matches, stacked.match_scopes, count)
    findings = pieces(stacked.findings, stacked.finding_scopes, count)
    return [
        _outcome(stacked, providers[at], ledgers[at], matches[at], findings[at], at) for at in range(count)
    ]


def _outcome(
    stacked: StackedOutcome,
    provider_records: pd.DataFrame,
    ledger: pd.DataFrame,
    matches: pd.DataFrame,
    findings: pd.DataFrame,
    scope: int,
) -> MatchOutcome:
    """One night's outcome: its findings in the diff's order, its counts per rule, its exact-id count."""
    if len(findings) > 1:
        findings = sorted_by(findings, "category", "record_key")

    def exact() -> int:
        counts = stacked.exact_ids()
        return int(counts[scope]) if scope < len(counts) else 0

    reversed_entries = tuple(entry for at, entry in stacked.reversed_entries if at == scope)
    stacks = (stacked.provider_records, stacked.ledger)
    cuts = (Cut(stacks[0], scope), Cut(stacks[1], scope)) if all(SCOPE in s.columns for s in stacks) else None
    return MatchOutcome(
        provider_records, ledger, matches, findings, counts_of(matches), exact, reversed_entries, cuts
    )
