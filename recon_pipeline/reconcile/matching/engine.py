"""``match_night``: the matcher of one property-night, run before the diff (docs/matching.md);
``match_nights``: the same for a batch's nights at once, stacked (``batch.py``).

Order: negative payments read as the refunds they post (``refunds.py``); decided matches first (a
person's, then the adjacent nights'), verbatim; then the policy's tiers, each only on what is still
unmatched; what is certain pairs, what is not is held back with one finding; last, the postings the PMS
reversed itself (+X and −X, ``reversals.py``) are set aside.
A night whose every entry names its provider record (and with nothing decided) returns at once: the
frames as they came, at the cost of one null check of the ledger's ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

import numpy as np
import pandas as pd

from recon_pipeline.frames import stack
from recon_pipeline.reconcile.matching.batch import split
from recon_pipeline.reconcile.matching.known import Applied, apply_known
from recon_pipeline.reconcile.matching.outcome import MatchOutcome, StackedOutcome, build_outcome, unchanged
from recon_pipeline.reconcile.matching.policy import (
    BOOKING_AMOUNT,
    CARD_WINDOW,
    REFERENCE,
    SPLIT,
    STRONG_KEYS,
    KnownMatch,
    MatchPolicy,
    scoped_key,
)
from recon_pipeline.reconcile.matching.refunds import negative_payments_as_refunds
from recon_pipeline.reconcile.matching.resolve import Pool
from recon_pipeline.reconcile.matching.reversals import set_aside_reversals
from recon_pipeline.reconcile.matching.sides import candidate_sides, scopes, unkeyed_entries
from recon_pipeline.reconcile.matching.split import SCOPES, split_search
from recon_pipeline.reconcile.matching.tiers import (
    booking_amount_edges,
    card_window_edges,
    qualify,
    reference_edges,
    strong_key_edges,
)


def match_night(
    provider_records: pd.DataFrame,
    ledger_records: pd.DataFrame,
    policy: MatchPolicy = MatchPolicy(),  # noqa: B008 (frozen: one shared default is safe)
    known: Sequence[KnownMatch] = (),
) -> MatchOutcome:
    """Pair the night's provider records with the ledger entries that do not name them (see the module
    docstring); the outcome's frames are what the diff is to compare."""
    return split(_match(provider_records, ledger_records, policy, [known]), [])[0]


@dataclass(frozen=True)
class NightToMatch:
    """One night's input to :func:`match_nights`."""

    provider_records: pd.DataFrame
    ledger: pd.DataFrame
    policy: MatchPolicy = MatchPolicy()  # noqa: B008 (frozen: one shared default is safe)
    known: Sequence[KnownMatch] = ()


def match_nights(nights: Sequence[NightToMatch]) -> list[MatchOutcome]:
    """Each night's outcome, as :func:`match_night` gives it, for the cost of one stacked run per policy
    (``batch.py``): a batch's nights pay the matcher's fixed costs once."""
    outcomes: list[MatchOutcome | None] = [None] * len(nights)
    by_policy: dict[MatchPolicy, list[int]] = {}
    for at, night in enumerate(nights):
        by_policy.setdefault(night.policy, []).append(at)
    for policy, members in by_policy.items():
        if len(members) == 1:
            night = nights[members[0]]
            outcomes[members[0]] = match_night(night.provider_records, night.ledger, policy, night.known)
            continue
        provider = stack([nights[at].provider_records for at in members])
        ledger = stack([nights[at].ledger for at in members])
        stacked = _match(provider, ledger, policy, [nights[at].known for at in members])
        columns = [(nights[at].provider_records.columns, nights[at].ledger.columns) for at in members]
        for at, outcome in zip(members, split(stacked, columns), strict=True):
            outcomes[at] = outcome
    return [outcome for outcome in outcomes if outcome is not None]


def _match(
    provider_records: pd.DataFrame,
    ledger_records: pd.DataFrame,
    policy: MatchPolicy,
    known: Sequence[Sequence[KnownMatch]],
) -> StackedOutcome:
    """The matcher over stacked nights (one frame a side, ``known`` per scope)."""
    ledger_records = negative_payments_as_refunds(provider_records, ledger_records)
    entries_at = unkeyed_entries(ledger_records)
    if len(entries_at) == 0 and not any(known):
        return set_aside_reversals(provider_records, unchanged(provider_records, ledger_records))
    applied, banned = _apply_known(provider_records, ledger_records, known)
    taken_records = np.array([p for match in applied for p in match.records], dtype=np.int64)
    taken_entries = np.array([p for match in applied for p in match.entries], dtype=np.int64)
    entries_at = entries_at[~np.isin(entries_at, taken_entries)]
    sides = candidate_sides(provider_records, ledger_records, entries_at, taken_records)
    pool = Pool(sides, policy.threshold)
    if len(sides.records) and len(sides.entries):
        for tier in policy.tiers:
            _run(tier, pool, policy, banned)
    outcome = build_outcome(
        provider_records, ledger_records, sides, pool, applied, pool.final_holds(), policy.threshold
    )
    return set_aside_reversals(provider_records, outcome)


def _apply_known(
    provider_records: pd.DataFrame, ledger: pd.DataFrame, known: Sequence[Sequence[KnownMatch]]
) -> tuple[list[Applied], frozenset[str]]:
    """Each scope's decided matches applied to its rows (positions in the stacked frames), and the keys a
    person rejected, each within its scope."""
    if not any(known):
        return [], frozenset()
    record_bounds = _bounds(scopes(provider_records), len(known))
    entry_bounds = _bounds(scopes(ledger), len(known))
    applied: list[Applied] = []
    banned: set[str] = set()
    for scope, decided in enumerate(known):
        if not decided:
            continue
        (r0, r1), (e0, e1) = record_bounds[scope], entry_bounds[scope]
        found, rejected = apply_known(provider_records.iloc[r0:r1], ledger.iloc[e0:e1], decided)
        applied += [
            replace(
                match,
                records=tuple(p + r0 for p in match.records),
                entries=tuple(p + e0 for p in match.entries),
            )
            for match in found
        ]
        banned |= {scoped_key(scope, key) for key in rejected}
    return applied, frozenset(banned)


def _bounds(scope: np.ndarray, count: int) -> list[tuple[int, int]]:
    """Each scope's rows [start, end) in a frame stacked in scope order."""
    edges = np.searchsorted(scope, np.arange(count + 1)).tolist()
    return list(zip(edges[:-1], edges[1:], strict=True))


def _run(tier: str, pool: Pool, policy: MatchPolicy, banned: frozenset[str]) -> None:
    sides, free_r, free_e = pool.sides, pool.free_r, pool.free_e
    if not free_r.any() or not free_e.any():
        return
    if tier == SPLIT:
        for scope in SCOPES:  # each on what the scopes before it left (the pool's rows, updated)
            pool.run_split(split_search(sides, pool.free_r, pool.free_e, policy.max_split, banned, scope))
        return
    if tier == REFERENCE:
        edges = reference_edges(sides, free_r, free_e)
    elif tier == BOOKING_AMOUNT:
        edges = booking_amount_edges(sides, free_r, free_e)
    elif tier == STRONG_KEYS:
        edges = strong_key_edges(sides, free_r, free_e)
    elif tier == CARD_WINDOW:
        edges = card_window_edges(sides, free_r, free_e, policy.window // timedelta(microseconds=1) * 1000)
    else:  # MatchPolicy refuses any other name
        raise ValueError(f"unknown match tier {tier!r}")
    pool.run_edges(qualify(edges, sides, banned), tier)
