"""Equality and time-window joins on numpy columns: what the tiers' candidate finding is made of.

A PMS night holds a few dozen rows, where each pandas merge costs a millisecond of fixed overhead (and, in
pandas 3, turns every text column into Arrow strings first); a benchmark night holds 10^5. Both are served
by factorising the key columns of the two sides together into one dense integer per row and joining the
integers by sorting and binary search: no Python per row, and a cost that follows the pairs found.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

Pairs = tuple[np.ndarray, np.ndarray]  # (left positions, right positions), aligned


def dense_keys(left: Sequence[np.ndarray], right: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """One int64 per row such that two rows (of either side) share it exactly when every key column is
    equal; a row with a null in any key column gets -1 (it joins nothing)."""
    size = len(left[0]) if left else 0
    combined = np.zeros(size + (len(right[0]) if right else 0), dtype=np.int64)
    null = np.zeros(len(combined), dtype=bool)
    for left_column, right_column in zip(left, right, strict=True):
        codes, uniques = pd.factorize(np.concatenate([left_column, right_column]))
        null |= codes < 0
        combined, _ = pd.factorize(combined * (len(uniques) + 1) + codes + 1)  # below rows^2
        combined = combined.astype(np.int64)
    combined[null] = -1
    return combined[:size], combined[size:]


def expand(start: np.ndarray, end: np.ndarray, order: np.ndarray) -> Pairs:
    """The pairs (i, order[k]) for every i and every k in [start[i], end[i])."""
    counts = np.maximum(end - start, 0)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    left = np.repeat(np.arange(len(start), dtype=np.int64), counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return left, order[np.repeat(start, counts) + offsets].astype(np.int64)


def equi_join(left: Sequence[np.ndarray], right: Sequence[np.ndarray]) -> Pairs:
    """Every (i, j) whose key columns are all equal (nulls never equal), sorted by i then j."""
    if not left or len(left[0]) == 0 or len(right[0]) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    left_key, right_key = dense_keys(left, right)
    order = np.argsort(right_key, kind="stable")
    sorted_keys = right_key[order]
    start = np.searchsorted(sorted_keys, left_key, "left")
    end = np.searchsorted(sorted_keys, left_key, "right")
    end[left_key < 0] = start[left_key < 0]
    return expand(start, end, order)


def window_join(
    left: Sequence[np.ndarray],
    left_time: np.ndarray,
    right: Sequence[np.ndarray],
    right_time: np.ndarray,
    window: int,
) -> Pairs:
    """Every (i, j) with equal key columns and ``|left_time[i] - right_time[j]| <= window``.

    Each left row is keyed by (key, rank of its time among the left times); each right row then finds
    the block its window spans with two binary searches, so many equal keys cost only the pairs within
    the window, never the product of the groups.
    """
    if not left or len(left[0]) == 0 or len(right[0]) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    left_key, right_key = dense_keys(left, right)
    times = np.sort(left_time)
    scale = len(times) + 1
    ranked = np.where(left_key < 0, -1, left_key * scale + np.searchsorted(times, left_time, "left"))
    order = np.argsort(ranked, kind="stable")
    sorted_keys = ranked[order]
    low = right_key * scale + np.searchsorted(times, right_time - window, "left")
    high = right_key * scale + np.searchsorted(times, right_time + window, "right")
    start = np.searchsorted(sorted_keys, low, "left")
    end = np.searchsorted(sorted_keys, high, "left")
    end[right_key < 0] = start[right_key < 0]
    right_rows, left_rows = expand(start, end, order)
    return left_rows, right_rows


def first_per_pair(r: np.ndarray, e: np.ndarray, preference: np.ndarray) -> np.ndarray:
    """Positions keeping one row per (r, e): the one of highest ``preference`` (then the first)."""
    if len(r) == 0:
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((-preference, e, r))
    first = np.ones(len(order), dtype=bool)
    first[1:] = (r[order][1:] != r[order][:-1]) | (e[order][1:] != e[order][:-1])
    return np.sort(order[first])
