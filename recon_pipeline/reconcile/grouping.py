"""Exact grouping of (id, kind) keys: which rows of several frames carry the same key (pure numpy/Arrow).

The engine the diff matches provider records and ledger entries with: given parts of (ids, kind codes),
:func:`group_keys` numbers the distinct keys densely across all parts, so that two rows, in the same part
or in different ones, share a group number exactly when their id and kind are equal; then
:func:`position_by_group` says where each group occurs in a part. Nothing here knows what a record, an
entry or a finding is.

Matching 10^6 against 10^6 rows within a second rules out pandas' string merges and hash tables (about
0.4 µs a string on the reference machine). Instead each id is read once through Arrow (:class:`IdBytes`),
and each key becomes one fixed-width row of bytes (id, length, kind); the rows' 64-bit words are mixed into
one integer, and the row number is packed into that integer's low bits so that one plain ``np.sort``
groups equal keys. Neighbours of equal hash are then compared word by word, so the grouping is exact;
the rare colliding runs are sorted exactly on their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa

INDEX: Final = np.intp  # dtype of row and group numbers (numpy indexes with intp without a cast)
_GOLDEN: Final = np.uint64(0x9E3779B97F4A7C15)
_LONGEST_ID: Final = 0xFFFF


@dataclass(frozen=True)
class IdBytes:
    """Ids as UTF-8 bytes (Arrow's layout: one buffer, per-row start and length) and which are null."""

    data: np.ndarray  # uint8
    starts: np.ndarray  # int64
    lengths: np.ndarray  # int64
    null: np.ndarray  # bool

    @classmethod
    def of(cls, ids: pd.Series) -> IdBytes:
        """One pass over the string objects (Arrow's converter is the fastest there is to hand)."""
        text = pa.array(ids, type=pa.large_string(), from_pandas=True)
        validity, offsets, data = text.buffers()
        bounds = np.frombuffer(offsets, dtype=np.int64)[text.offset : text.offset + len(text) + 1]
        return cls(
            data=np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, dtype=np.uint8),
            starts=bounds[:-1],
            lengths=np.diff(bounds),
            null=text.is_null().to_numpy(zero_copy_only=False)
            if text.null_count
            else np.zeros(len(text), bool),
        )

    def select(self, rows: np.ndarray) -> IdBytes:
        """The ids at ``rows`` (a mask or positions), sharing this one's buffer."""
        return IdBytes(self.data, self.starts[rows], self.lengths[rows], self.null[rows])


# One part of the keys to group: its ids (none null) and, per id, a kind code from 0 to 255.
KeyPart: TypeAlias = tuple[IdBytes, np.ndarray]


@dataclass(frozen=True)
class KeyGroups:
    """Dense group numbers of the match key, one array per input part, and how many groups exist."""

    groups: list[np.ndarray]
    count: int


def group_keys(*parts: KeyPart) -> KeyGroups:
    """Number the distinct (id, kind) keys across ``parts``; equal keys get equal numbers in every part.

    ``groups`` holds one array per part, aligned with the part's rows, in the order the parts were given.
    """
    sizes = [len(ids.lengths) for ids, _ in parts]
    groups, count = _group(_key_words(parts))
    bounds = np.cumsum([0, *sizes])
    return KeyGroups([groups[start:end] for start, end in zip(bounds[:-1], bounds[1:], strict=True)], count)


def _key_words(parts: Sequence[KeyPart]) -> np.ndarray:
    """Each key as one row of uint64 words: the id's bytes, NUL padding, its length (2 bytes), its kind.

    Two rows are equal exactly when the keys are: the length keeps "ab" and "ab\\0" apart. Rows are
    copied per distinct id length (a provider's ids come in a handful) as whole windows of the buffer.
    A 32-byte row (ids up to 29 bytes, most are 27) also lets numpy gather rows as single items.
    """
    lengths = np.concatenate([ids.lengths for ids, _ in parts])
    longest = int(lengths.max(initial=0))
    if longest > _LONGEST_ID:
        raise ValueError(f"a provider_record_id of {longest} bytes is longer than {_LONGEST_ID}")
    width = -(-(longest + 3) // 8) * 8
    words = np.empty((len(lengths), width // 8), dtype=np.uint64)
    as_bytes = words.view(np.uint8)
    as_bytes[:, width - 3] = lengths & 0xFF
    as_bytes[:, width - 2] = lengths >> 8
    as_bytes[:, width - 1] = np.concatenate([kinds for _, kinds in parts])
    base = 0
    for ids, _ in parts:
        size = len(ids.lengths)
        for length in np.flatnonzero(np.bincount(ids.lengths)):
            if ids.lengths[0] == length and (ids.lengths == length).all():
                rows: slice | np.ndarray = slice(base, base + size)
                starts = ids.starts
            else:
                chosen = np.flatnonzero(ids.lengths == length)
                rows, starts = base + chosen, ids.starts[chosen]
            if length:
                windows = np.lib.stride_tricks.sliding_window_view(ids.data, int(length))
                as_bytes[rows, :length] = windows[starts]
            as_bytes[rows, length : width - 3] = 0
        base += size
    return words


def _key_hash(words: np.ndarray) -> np.ndarray:
    """A well-mixed 64-bit hash of each row; only its high bits are used."""
    hashed = np.zeros(len(words), dtype=np.uint64)
    for column in words.T:
        hashed ^= column
        hashed *= _GOLDEN
    hashed ^= hashed >> np.uint64(29)
    hashed *= _GOLDEN
    return hashed


def _group(words: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense group number per row such that rows share a number exactly when they are equal."""
    size = len(words)
    if size == 0:
        return np.empty(0, dtype=INDEX), 0
    index_bits = max(1, (size - 1).bit_length())
    low = np.uint64((1 << index_bits) - 1)
    packed = _key_hash(words)
    packed &= ~low
    packed |= np.arange(size, dtype=np.uint64)
    packed.sort()
    order = (packed & low).astype(INDEX)
    hashes = packed >> np.uint64(index_bits)
    same_hash = hashes[1:] == hashes[:-1]
    sorted_words = np.take(words, order, axis=0)
    same_key = _adjacent_equal(sorted_words)
    collisions = np.flatnonzero(same_hash & ~same_key)
    if len(collisions):
        _untangle(order, sorted_words, same_key, hashes, collisions)
    starts = np.empty(size, dtype=bool)
    starts[0] = True
    np.logical_not(same_key, out=starts[1:])
    sorted_groups = np.cumsum(starts, dtype=INDEX) - 1
    groups = np.empty(size, dtype=INDEX)
    groups[order] = sorted_groups
    return groups, int(sorted_groups[-1]) + 1


def _adjacent_equal(words: np.ndarray) -> np.ndarray:
    """Whether each row equals the previous row, word by word."""
    equal = words[1:, 0] == words[:-1, 0]
    for column in range(1, words.shape[1]):
        equal &= words[1:, column] == words[:-1, column]
    return equal


def _untangle(
    order: np.ndarray, words: np.ndarray, same_key: np.ndarray, hashes: np.ndarray, collisions: np.ndarray
) -> None:
    """Sort exactly, in place, the runs of equal hash that hold different keys, so equal keys are adjacent.

    ``collisions`` are the positions ``i`` where rows ``i`` and ``i + 1`` share a hash but not a key.
    Only the colliding runs are touched: ``hashes`` is sorted, so each run's bounds are two binary searches,
    and ``order``, ``words`` and ``same_key`` are rewritten on those rows alone. A pass over every row (or
    a copy of the key matrix) here would cost a whole grouping's time for one collision in 10^7 keys.
    """
    colliding = np.unique(hashes[collisions])
    starts = np.searchsorted(hashes, colliding, side="left")
    lengths = np.searchsorted(hashes, colliding, side="right") - starts
    run = np.repeat(np.arange(len(colliding)), lengths)
    rows = np.arange(len(run)) + np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    block = words[rows]
    exact = np.lexsort([*(block[:, column] for column in reversed(range(words.shape[1]))), run])
    order[rows] = order[rows[exact]]
    words[rows] = block[exact]
    pairs = rows[np.flatnonzero(run[1:] == run[:-1])]  # each row followed by one of its own run
    same_key[pairs] = _adjacent_equal_at(words, pairs)


def _adjacent_equal_at(words: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Whether row ``i + 1`` equals row ``i``, for each ``i`` of ``rows``."""
    return (words[rows] == words[rows + 1]).all(axis=1)


def position_by_group(groups: np.ndarray, count: int) -> np.ndarray:
    """For each group number, the (last) position holding it, or -1."""
    position = np.full(count, -1, dtype=INDEX)
    position[groups] = np.arange(len(groups), dtype=INDEX)
    return position


def scoped(keys: KeyGroups, scopes: Sequence[np.ndarray]) -> KeyGroups:
    """``keys`` with each row's scope (a stacked night, ``frames.SCOPE``; one array per part) as part of
    its key: the same (id, kind) in two scopes is two groups, numbered densely again. One scope is
    ``keys`` as they are."""
    count = 1 + max((int(part.max(initial=0)) for part in scopes), default=0)
    if count == 1:
        return keys
    combined = np.concatenate(
        [groups.astype(np.int64) * count + part for groups, part in zip(keys.groups, scopes, strict=True)]
    )
    distinct, dense = np.unique(combined, return_inverse=True)
    bounds = np.cumsum([0, *(len(groups) for groups in keys.groups)])
    dense = dense.astype(INDEX)
    return KeyGroups(
        [dense[start:end] for start, end in zip(bounds[:-1], bounds[1:], strict=True)], len(distinct)
    )
