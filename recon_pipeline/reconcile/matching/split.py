"""Split folios: N ledger entries that sum exactly to one provider record, or one entry to N records.

A hotel posts a deposit and a balance against one card charge, or one folio payment for a guest who paid
twice, or a group's one charge to each of the group's bookings. The search runs within one booking both
sides know, then within one group (``bookings.group_id``), then, for one charge, across the postings that
carry its card and approval code (``SCOPES``); always within one kind and currency, over what the earlier
tiers left, and bounded: a side with more than ``max_split`` unmatched rows in one key is not searched
(2^max_split subsets at most, summed in one matrix product). Only a unique solution pairs: two solutions
that share a row (two subsets summing to one charge, or one subset fitting two charges) are an
ambiguity, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pandas as pd

from recon_pipeline.reconcile.matching.joins import dense_keys
from recon_pipeline.reconcile.matching.overlap import overlapping_groups
from recon_pipeline.reconcile.matching.policy import match_key, scoped_key
from recon_pipeline.reconcile.matching.sides import Sides

Rows = tuple[int, ...]


@dataclass
class SplitFound:
    """Unique solutions (record rows, entry rows), and groups of rows whose solutions overlap."""

    solutions: list[tuple[Rows, Rows]] = field(default_factory=list)
    ambiguous: list[tuple[Rows, Rows]] = field(default_factory=list)


# Where a split is looked for, in this order, each on what the ones before left: the postings of one
# booking; of one group's bookings (bookings.group_id: a group's charge posted to each member booking);
# and, for one record, the postings that carry its card and approval code, whatever their bookings.
BOOKING: Final = "booking"
GROUP: Final = "group"
CARD: Final = "card"
SCOPES: Final = (BOOKING, GROUP, CARD)
_SCOPE_KEYS: Final = {BOOKING: ("booking",), GROUP: ("group",), CARD: ("approval", "last4")}


def split_search(
    sides: Sides,
    free_r: np.ndarray,
    free_e: np.ndarray,
    max_split: int,
    banned: frozenset[str],
    scope: str = BOOKING,
) -> SplitFound:
    """Every unique split among the free rows (settled records only) within one ``scope`` key (and one
    kind and currency); ``CARD`` splits one record across N entries only."""
    found = SplitFound()
    records, entries, figures = sides.records, sides.entries, sides.figures
    keys = _SCOPE_KEYS[scope]
    usable = free_r & records["settled"]
    for key in keys:
        usable &= pd.notna(records[key])
    figures = figures.take(usable[figures["r"]])
    listed = free_e.copy()
    for key in keys:
        listed &= pd.notna(entries[key])
    at_e = np.flatnonzero(listed)
    if not len(figures) or not len(at_e):
        return found
    r = figures["r"]
    key_f, key_e = dense_keys(
        [figures["scope"], figures["kind"], *(records[key][r] for key in keys), figures["currency"]],
        [
            entries["scope"][at_e],
            entries["kind"][at_e],
            *(entries[key][at_e] for key in keys),
            entries["currency"][at_e],
        ],
    )
    size = int(max(key_f.max(initial=-1), key_e.max(initial=-1))) + 1
    per_f = np.bincount(key_f[key_f >= 0], minlength=size)
    per_e = np.bincount(key_e[key_e >= 0], minlength=size)
    wanted = np.flatnonzero((per_f > 0) & (per_e > 0) & ((per_f >= 2) | (per_e >= 2)))
    record_ids, entry_ids = records["record_id"], entries["entry_id"]
    for group in wanted.tolist():
        in_f = np.flatnonzero(key_f == group)
        group_r, amounts = r[in_f], figures["amount"][in_f]
        group_e = at_e[key_e == group]
        posted = entries["amount"][group_e]
        solutions: list[tuple[Rows, Rows]] = []
        if 2 <= len(group_e) <= max_split:
            for subset, target in _sums_hitting(posted, amounts):
                solutions.append(((int(group_r[target]),), tuple(int(x) for x in group_e[subset])))
        if scope != CARD and 2 <= len(group_r) <= max_split:
            for subset, target in _sums_hitting(amounts, posted):
                solutions.append((tuple(int(x) for x in group_r[subset]), (int(group_e[target]),)))
        night_scope = int(figures["scope"][in_f[0]])  # a stacked night (``batch.py``), not a split scope
        solutions = [
            (rs, es)
            for rs, es in solutions
            if scoped_key(night_scope, match_key(record_ids[list(rs)], entry_ids[list(es)])) not in banned
        ]
        _sort_out(solutions, found)
    return found


def _sums_hitting(parts: np.ndarray, targets: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """Every subset of two or more ``parts`` (as a boolean mask) whose sum equals a target, with the
    target's position."""
    count = len(parts)
    masks = np.arange(1, 1 << count, dtype=np.int64)
    bits = ((masks[:, None] >> np.arange(count)) & 1).astype(bool)
    bits = bits[bits.sum(axis=1) >= 2]
    sums = bits.astype(np.int64) @ parts
    subset, target = np.nonzero(sums[:, None] == targets[None, :])
    return [(bits[s], int(t)) for s, t in zip(subset, target, strict=True)]


def _sort_out(solutions: list[tuple[Rows, Rows]], found: SplitFound) -> None:
    """Solutions sharing no row with another are unique; overlapping ones form ambiguous groups."""
    if not solutions:
        return
    for members in overlapping_groups(solutions):
        if len(members) == 1:
            found.solutions.append(solutions[members[0]])
        else:
            found.ambiguous.append(
                (
                    tuple(sorted({x for i in members for x in solutions[i][0]})),
                    tuple(sorted({x for i in members for x in solutions[i][1]})),
                )
            )
