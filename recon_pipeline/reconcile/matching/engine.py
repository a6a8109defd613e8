"""``match_night``: the matcher of one property-night, run before the diff (docs/matching.md).

Order: negative payments read as the refunds they post (``refunds.py``); decided matches first (a
person's, then the adjacent nights'), verbatim; then the policy's tiers, each only on what is still
unmatched; what is certain pairs, what is not is held back with one finding; last, the postings the PMS
reversed itself (+X and −X, ``reversals.py``) are set aside.
A night whose every entry names its provider record (and with nothing decided) returns at once: the
frames as they came, at the cost of one null check of the ledger's ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np
import pandas as pd

from recon_pipeline.reconcile.matching.known import apply_known
from recon_pipeline.reconcile.matching.outcome import MatchOutcome, build_outcome, unchanged
from recon_pipeline.reconcile.matching.policy import (
    BOOKING_AMOUNT,
    CARD_WINDOW,
    REFERENCE,
    SPLIT,
    STRONG_KEYS,
    KnownMatch,
    MatchPolicy,
)
from recon_pipeline.reconcile.matching.refunds import negative_payments_as_refunds
from recon_pipeline.reconcile.matching.resolve import Pool
from recon_pipeline.reconcile.matching.reversals import set_aside_reversals
from recon_pipeline.reconcile.matching.sides import candidate_sides, exact_id_count, unkeyed_entries
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
    ledger_records = negative_payments_as_refunds(provider_records, ledger_records)
    entries_at = unkeyed_entries(ledger_records)
    if len(entries_at) == 0 and not known:
        keyed = unchanged(
            provider_records, ledger_records, lambda: exact_id_count(provider_records, ledger_records)
        )
        return set_aside_reversals(provider_records, keyed)
    applied, banned = apply_known(provider_records, ledger_records, known)
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
