"""Which candidate pairings overlap: the one grouping that both the hold-back and the split search need.

Two pairings that share a provider record or a ledger entry cannot both be true, so whatever overlaps,
directly or through a third, is decided together: the split search keeps a solution only when nothing
overlaps it, and held-back candidates that overlap become one ambiguity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def overlapping_groups(pairings: Sequence[tuple[Iterable[int], Iterable[int]]]) -> list[list[int]]:
    """Positions into ``pairings`` (each its record positions and entry positions) grouped so that two
    pairings sharing a record or an entry, directly or through others, are in one group; groups and their
    members in the order of first appearance."""
    parent = list(range(len(pairings)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[str, int], int] = {}
    for index, (records, entries) in enumerate(pairings):
        for row in [("r", r) for r in records] + [("e", e) for e in entries]:
            if row in owner:
                parent[root(index)] = root(owner[row])
            else:
                owner[row] = index
    groups: dict[int, list[int]] = {}
    for index in range(len(pairings)):
        groups.setdefault(root(index), []).append(index)
    return list(groups.values())
