"""The key-grouping engine stays exact under hash collisions, and resolves them without touching other rows.

Collisions are forced by replacing the hash: every key colliding (one run), a few bits of hash (many
runs, each mixing keys), and a single pair of colliding keys among many (the case that used to cost a pass
over every row). Each grouping is compared with a plain dictionary's and, number for number, with the
engine's former way of untangling (a whole-matrix sort of the colliding runs), kept here as the reference.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from recon_pipeline.reconcile import grouping
from recon_pipeline.reconcile.grouping import INDEX, IdBytes, group_keys

HashFunction = Callable[[np.ndarray], np.ndarray]
_REAL_HASH = grouping._key_hash


def _parts(seed: int) -> list[tuple[list[str | None], list[int]]]:
    """Three parts of ids and kinds with repeats within and across parts, and ids of several lengths."""
    rng = np.random.default_rng(seed)
    pool = [f"ch_{n:0{width}d}" for n, width in zip(range(400), rng.integers(1, 30, 400), strict=True)]
    pool += ["", "ab", "ab\0"]
    parts = []
    for size in (700, 500, 300):
        ids = [pool[i] for i in rng.integers(0, len(pool), size)]
        parts.append((ids, rng.integers(0, 3, size).tolist()))
    return parts


def _group(parts: list[tuple[list[str | None], list[int]]]) -> list[np.ndarray]:
    keyed = [
        (IdBytes.of(pd.Series(ids, dtype=object)), np.array(kinds, dtype=np.int8)) for ids, kinds in parts
    ]
    return group_keys(*keyed).groups


def _dictionary_groups(parts: list[tuple[list[str | None], list[int]]]) -> list[list[int]]:
    """Group numbers by first appearance of each (id, kind) in a plain dictionary."""
    seen: dict[tuple[str | None, int], int] = {}
    return [[seen.setdefault(key, len(seen)) for key in zip(ids, kinds, strict=True)] for ids, kinds in parts]


def _same_partition(groups: list[np.ndarray], reference: list[list[int]]) -> bool:
    ours, theirs = np.concatenate(groups), np.concatenate([np.array(r) for r in reference])
    pairs = set(zip(ours.tolist(), theirs.tolist(), strict=True))
    return len(pairs) == len(set(ours.tolist())) == len(set(theirs.tolist()))


def _former_group(words: np.ndarray) -> tuple[np.ndarray, int]:
    """The engine's grouping before the in-place untangling: a copy and a pass over every row."""
    size = len(words)
    index_bits = max(1, (size - 1).bit_length())
    low = np.uint64((1 << index_bits) - 1)
    packed = grouping._key_hash(words)
    packed &= ~low
    packed |= np.arange(size, dtype=np.uint64)
    packed.sort()
    order = (packed & low).astype(INDEX)
    hashes = packed >> np.uint64(index_bits)
    same_hash = hashes[1:] == hashes[:-1]
    sorted_words = np.take(words, order, axis=0)
    same_key = grouping._adjacent_equal(sorted_words)
    if (same_hash & ~same_key).any():
        run = np.concatenate([[0], np.cumsum(~same_hash)])
        rows = np.flatnonzero(np.isin(run, run[1:][same_hash & ~same_key]))
        sort_keys = [*(sorted_words[rows, c] for c in reversed(range(words.shape[1]))), run[rows]]
        rows_sorted = rows[np.lexsort(sort_keys)]
        order, sorted_words = order.copy(), sorted_words.copy()
        order[rows], sorted_words[rows] = order[rows_sorted], sorted_words[rows_sorted]
        same_key = grouping._adjacent_equal(sorted_words)
    starts = np.empty(size, dtype=bool)
    starts[0] = True
    np.logical_not(same_key, out=starts[1:])
    sorted_groups = np.cumsum(starts, dtype=INDEX) - 1
    groups = np.empty(size, dtype=INDEX)
    groups[order] = sorted_groups
    return groups, int(sorted_groups[-1]) + 1


def _all_collide(words: np.ndarray) -> np.ndarray:
    return np.zeros(len(words), dtype=np.uint64)


def _three_bits(words: np.ndarray) -> np.ndarray:
    return _REAL_HASH(words) & np.uint64(0b111 << 61)


def _one_pair_collides(words: np.ndarray) -> np.ndarray:
    """The real hash, except that the keys of the first two distinct rows share one hash."""
    hashed = _REAL_HASH(words)
    other = int(np.flatnonzero((words != words[0]).any(axis=1))[0])
    hashed[(words == words[other]).all(axis=1)] = hashed[0]
    return hashed


@pytest.mark.parametrize("hash_function", [_all_collide, _three_bits, _one_pair_collides])
@pytest.mark.parametrize("seed", [0, 1])
def test_forced_collisions_group_as_a_dictionary_and_as_before(
    monkeypatch: pytest.MonkeyPatch, hash_function: HashFunction, seed: int
) -> None:
    parts = _parts(seed)
    honest = _group(parts)
    monkeypatch.setattr(grouping, "_key_hash", hash_function)
    collided = _group(parts)
    assert _same_partition(collided, _dictionary_groups(parts))
    assert _same_partition(honest, _dictionary_groups(parts))
    monkeypatch.setattr(grouping, "_group", _former_group)
    assert all(np.array_equal(ours, former) for ours, former in zip(collided, _group(parts), strict=True))


def test_a_single_collision_rewrites_only_its_own_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows outside the colliding run are neither copied nor rescanned: the untangling sees only it."""
    parts = _parts(3)
    seen: list[int] = []
    untangle = grouping._untangle

    def spy(order: np.ndarray, words: np.ndarray, same_key: np.ndarray, *rest: np.ndarray) -> None:
        before = words.copy()
        untangle(order, words, same_key, *rest)
        seen.append(int((before != words).any(axis=1).sum()))

    monkeypatch.setattr(grouping, "_key_hash", _one_pair_collides)
    monkeypatch.setattr(grouping, "_untangle", spy)
    assert _same_partition(_group(parts), _dictionary_groups(parts))
    total = sum(len(ids) for ids, _ in parts)
    assert len(seen) == 1 and seen[0] < total // 50
