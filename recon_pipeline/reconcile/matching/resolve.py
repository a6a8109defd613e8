"""Which candidates each tier pairs, which it holds back, and why (a unique best, certain money, or neither).

A tier's edges are first narrowed to *mutual best* candidates (an edge stays when no other candidate of
its record or of its entry ranks higher). What is then unique both ways and scores at least the threshold
pairs at once (vectorised: on a PMS-style night that is nearly everything); a unique edge below the
threshold is a suggestion. The few rows left have several equally good candidates: when every candidate
pair agrees on the amount and is sure, money is certain whichever way they pair, so they pair in time
order (records by creation, entries in-night first, then by posting) as far as they go. When the
candidates are equal in every key (twins), what is left is the certain finding, with its money, and goes
to the diff; otherwise whatever is left, or a tangle whose amounts differ, is held back as one ambiguity.
Held rows stay candidates of the later tiers, which may still pair them with certainty; at the end, holds
sharing a row merge into one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pandas as pd

from recon_pipeline.reconcile.matching.overlap import overlapping_groups
from recon_pipeline.reconcile.matching.policy import CONFLICT_SCORE, SCORES, SPLIT
from recon_pipeline.reconcile.matching.sides import Sides, Table
from recon_pipeline.reconcile.matching.split import SplitFound
from recon_pipeline.reconcile.matching.tiers import card_agreement

Rows = tuple[int, ...]
SUGGESTION: Final = "suggestion"
AMBIGUITY: Final = "ambiguity"
_LARGEST_TANGLE: Final = 400  # rows of one ambiguous component the augmenting-path pairing takes on


@dataclass(frozen=True)
class Found:
    """A pairing of candidate rows (rows of Sides.records / Sides.entries) by one rule."""

    records: Rows
    entries: Rows
    rule: str
    score: float


@dataclass
class Hold:
    """Rows held back from the diff: a suggestion (one pairing below the threshold) or an ambiguity.

    ``records``/``entries`` are the rows held back; ``named_*`` every candidate the finding names."""

    kind: str
    records: set[int]
    entries: set[int]
    named_records: set[int]
    named_entries: set[int]
    rules: list[str]
    score: float = 0.0


@dataclass
class Pool:
    """What is still unmatched, what was paired and what is held, as the tiers run one after another."""

    sides: Sides
    threshold: float
    free_r: np.ndarray = field(init=False)
    free_e: np.ndarray = field(init=False)
    pairs: list[tuple[np.ndarray, np.ndarray, str, np.ndarray]] = field(default_factory=list)
    groups: list[Found] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.free_r = np.ones(len(self.sides.records), dtype=bool)
        self.free_e = np.ones(len(self.sides.entries), dtype=bool)

    def pair(self, r: np.ndarray, e: np.ndarray, rule: str, score: np.ndarray) -> None:
        self.free_r[r] = False
        self.free_e[e] = False
        self.pairs.append((r, e, rule, score))

    def pair_group(self, found: Found) -> None:
        self.free_r[list(found.records)] = False
        self.free_e[list(found.entries)] = False
        self.groups.append(found)

    def hold(
        self,
        kind: str,
        records: Iterable[int],
        entries: Iterable[int],
        rule: str,
        score: float = 0.0,
        named: tuple[Iterable[int], Iterable[int]] | None = None,
    ) -> None:
        held_r, held_e = set(records), set(entries)
        named_r, named_e = (held_r, held_e) if named is None else (set(named[0]), set(named[1]))
        self.holds.append(Hold(kind, held_r, held_e, named_r | held_r, named_e | held_e, [rule], score))

    def in_night(self, entries: Iterable[int]) -> set[int]:
        flags = self.sides.entries["in_night"]
        return {e for e in entries if flags[e]}

    # --- one-to-one tiers -----------------------------------------------------------------------------

    def run_edges(self, edges: Table, rule: str) -> None:
        """Pair, suggest or hold back what one tier's qualified edges propose."""
        live = self._live(edges)
        kept = live
        while len(live):
            kept = _mutual_best(live, len(self.free_r), len(self.free_e))
            unique = self._unique(kept)
            sure = unique & (kept["score"] >= self.threshold)
            if not sure.any():
                break
            self.pair(kept["r"][sure], kept["e"][sure], rule, kept["score"][sure])
            live = self._live(live)
            kept = live
        if not len(kept):
            return
        unique = self._unique(kept)
        for r, e, score in zip(
            kept["r"][unique].tolist(),
            kept["e"][unique].tolist(),
            kept["score"][unique].tolist(),
            strict=True,
        ):
            self.hold(SUGGESTION, [r], [e], rule, score)
        for component in _components(kept.take(~unique)):
            self._settle(component, rule)

    def _live(self, edges: Table) -> Table:
        return edges.take(self.free_r[edges["r"]] & self.free_e[edges["e"]])

    def _unique(self, edges: Table) -> np.ndarray:
        r, e = edges["r"], edges["e"]
        per_record = np.bincount(r, minlength=len(self.free_r))
        per_entry = np.bincount(e, minlength=len(self.free_e))
        return (per_record[r] == 1) & (per_entry[e] == 1)

    def _settle(self, component: Table, rule: str) -> None:
        """Several equally good candidates: pair what is certain in time order, hold back the rest."""
        records = sorted(set(component["r"].tolist()))
        entries = sorted(set(component["e"].tolist()))
        certain = (
            bool(component["same_amount"].all() and (component["score"] >= self.threshold).all())
            and len(records) + len(entries) <= _LARGEST_TANGLE
        )
        if certain:
            paired = _pair_in_time_order(component, self.sides)
            if paired:
                self.pair(
                    np.array([r for r, _, _ in paired], dtype=np.int64),
                    np.array([e for _, e, _ in paired], dtype=np.int64),
                    rule,
                    np.array([score for _, _, score in paired], dtype=np.float64),
                )
        if certain and _interchangeable(self.sides, records, entries):
            return  # twins: whichever is left is the certain finding, with its money (the diff's)
        # left over: records that moved money, and in-night entries (a failed attempt or an adjacent
        # night's posting nobody pairs is no finding of this night, as for the diff)
        settled = self.sides.records["settled"]
        left_r = [r for r in records if self.free_r[r] and settled[r]]
        left_e = self.in_night(e for e in entries if self.free_e[e])
        if left_r or left_e:
            self.hold(AMBIGUITY, left_r, left_e, rule, named=(records, entries))

    # --- split ----------------------------------------------------------------------------------------

    def run_split(self, found: SplitFound) -> None:
        for records, entries in found.solutions:
            score = SCORES[SPLIT]
            if _conflicting(self.sides, records, entries):
                score = min(score, CONFLICT_SCORE)
            if score >= self.threshold:
                self.pair_group(Found(records, entries, SPLIT, score))
            else:
                self.hold(SUGGESTION, records, entries, SPLIT, score)
        for records, entries in found.ambiguous:
            self.hold(AMBIGUITY, records, self.in_night(entries), SPLIT, named=(records, entries))

    # --- the end --------------------------------------------------------------------------------------

    def final_holds(self) -> list[Hold]:
        """The holds whose rows no later tier paired, merged where they share a row.

        A suggestion that lost a row to a sure pairing is void (its other row goes to the diff); an
        ambiguity keeps the rows still held, and is void once none is left."""
        alive: list[Hold] = []
        for hold in self.holds:
            records = {r for r in hold.records if self.free_r[r]}
            entries = {e for e in hold.entries if self.free_e[e]}
            if hold.kind == SUGGESTION and (records != hold.records or entries != hold.entries):
                continue
            if not records and not entries:
                continue
            alive.append(
                Hold(
                    hold.kind,
                    records,
                    entries,
                    hold.named_records,
                    hold.named_entries,
                    hold.rules,
                    hold.score,
                )
            )
        return _merged(alive)


def _mutual_best(edges: Table, records: int, entries: int) -> Table:
    """The edges that rank highest among both their record's and their entry's candidates."""
    r, e, rank = edges["r"], edges["e"], edges["rank"]
    best_r = np.full(records, -1, dtype=np.int64)
    best_e = np.full(entries, -1, dtype=np.int64)
    np.maximum.at(best_r, r, rank)
    np.maximum.at(best_e, e, rank)
    return edges.take((rank == best_r[r]) & (rank == best_e[e]))


def _components(edges: Table) -> list[Table]:
    """The connected groups of records and entries the edges link (few rows: plain union-find)."""
    if not len(edges):
        return []
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def root(node: tuple[str, int]) -> tuple[str, int]:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    r, e = edges["r"].tolist(), edges["e"].tolist()
    for record, entry in zip(r, e, strict=True):
        parent[root(("r", record))] = root(("e", entry))
    order: dict[tuple[str, int], int] = {}
    codes = np.array([order.setdefault(root(("r", record)), len(order)) for record in r])
    return [edges.take(codes == code) for code in range(len(order))]


def _pair_in_time_order(component: Table, sides: Sides) -> list[tuple[int, int, float]]:
    """A largest pairing of the component, records by creation time against entries in-night first and
    by posting time (augmenting paths; a complete group is simply zipped in that order)."""
    created = sides.records["created"]
    posted = sides.entries["posted"]
    in_night = sides.entries["in_night"]
    records = sorted(set(component["r"].tolist()), key=lambda r: (created[r], r))
    entries = sorted(set(component["e"].tolist()), key=lambda e: (not in_night[e], posted[e], e))
    score = dict(
        zip(
            zip(component["r"].tolist(), component["e"].tolist(), strict=True),
            component["score"].tolist(),
            strict=True,
        )
    )
    if len(score) == len(records) * len(entries):
        return [(r, e, score[(r, e)]) for r, e in zip(records, entries, strict=False)]
    rank = {e: i for i, e in enumerate(entries)}
    options: dict[int, list[int]] = {r: [] for r in records}
    for r, e in score:
        options[r].append(e)
    for r in records:
        options[r].sort(key=rank.__getitem__)
    owner: dict[int, int] = {}

    def augment(record: int, seen: set[int]) -> bool:
        for entry in options[record]:
            if entry in seen:
                continue
            seen.add(entry)
            if entry not in owner or augment(owner[entry], seen):
                owner[entry] = record
                return True
        return False

    for record in records:
        augment(record, set())
    pairs = [(r, e, score[(r, e)]) for e, r in owner.items()]
    return sorted(pairs, key=lambda pair: (created[pair[0]], pair[0]))


def _interchangeable(sides: Sides, records: list[int], entries: list[int]) -> bool:
    """Whether the candidates are equal in every key the matcher reads (twins: two identical charges of
    one booking and card, and one posting): then it makes no difference which pairs with which, and what
    is left over is certain money, not a question for a person."""
    same_records = all(_all_equal(sides.records[key][records]) for key in _TWIN_KEYS)
    same_entries = all(_all_equal(sides.entries[key][entries]) for key in (*_TWIN_KEYS, "approval"))
    approvals = sides.records["approval"][records]
    told_apart = not _all_equal(approvals) and pd.notna(sides.entries["approval"][entries]).any()
    return same_records and same_entries and not told_apart


_TWIN_KEYS: Final = ("kind", "currency", "amount", "booking", "brand", "last4")


def _all_equal(values: np.ndarray) -> bool:
    """Every value equal to the first (nulls equal to nulls)."""
    first = values[0]
    if first is None or (isinstance(first, float) and np.isnan(first)):
        return bool(pd.isna(values).all())
    return bool((values == first).all())


def _conflicting(sides: Sides, records: Rows, entries: Rows) -> bool:
    """Whether a card or approval code both sides know differs between any record and any entry."""
    r = np.repeat(np.array(records, dtype=np.int64), len(entries))
    e = np.tile(np.array(entries, dtype=np.int64), len(records))
    if (card_agreement(sides, r, e) < 0).any():
        return True
    left, right = sides.records["approval"][r], sides.entries["approval"][e]
    return bool((pd.notna(left) & pd.notna(right) & (left != right)).any())


def _merged(holds: list[Hold]) -> list[Hold]:
    """Holds sharing a held row become one; a lone suggestion stays a suggestion, anything merged is an
    ambiguity (a row with two weak or tangled candidates has no single candidate to confirm)."""
    clusters = [
        [holds[i] for i in group]
        for group in overlapping_groups([(hold.records, hold.entries) for hold in holds])
    ]
    merged = []
    for members in clusters:
        if len(members) == 1:
            merged.append(members[0])
            continue
        rules = list(dict.fromkeys(rule for hold in members for rule in hold.rules))
        merged.append(
            Hold(
                AMBIGUITY,
                set().union(*(hold.records for hold in members)),
                set().union(*(hold.entries for hold in members)),
                set().union(*(hold.named_records for hold in members)),
                set().union(*(hold.named_entries for hold in members)),
                rules,
            )
        )
    return merged
