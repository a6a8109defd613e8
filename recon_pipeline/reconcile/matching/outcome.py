"""What the matcher hands on: the frames the diff sees, the matches as data, and the held-back findings.

The diff keys on (provider_record_id, kind), so a match is handed over by writing the record's id onto its
entry: one entry for one record is re-keyed; N entries for one record become one row (the first entry's,
the amounts summed); one entry for N records becomes N rows (the same entry_id, each record's amount in the
entry's currency). What is held back (a suggestion, an ambiguity) leaves both frames, so that the diff
proposes no money for it; its finding here says why, with a difference of zero.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import pandas as pd

from recon_pipeline.categories import AMBIGUOUS_MATCH, SUGGESTED_MATCH, finding_frame
from recon_pipeline.frames import Cut, present, typed_frame
from recon_pipeline.reconcile.matching.known import Applied
from recon_pipeline.reconcile.matching.policy import (
    EXACT_ID,
    MATCHED,
    PERSON,
    SUGGESTED,
    TIERS,
    match_key,
)
from recon_pipeline.reconcile.matching.resolve import SUGGESTION, Hold, Pool
from recon_pipeline.reconcile.matching.sentences import (
    PAIR_ENTRY_FIELDS,
    PAIR_RECORD_FIELDS,
    figure,
    say_ambiguity,
    say_held,
    say_match,
    state_pairs,
)
from recon_pipeline.reconcile.matching.sides import (
    Sides,
    Table,
    entry_keys,
    named_by_ledger,
    record_keys,
    scopes,
)

MATCH_COLUMNS: Final = (
    "match_key",  # "<sorted record ids joined by +>=<sorted entry ids joined by +>": stable across runs
    "rule",  # exact_id is the diff's and never a row; person, or one of TIERS
    "score",  # 0..1 (policy.SCORES)
    "status",  # matched (score >= threshold) | suggested (below) | confirmed (a person's)
    "kind",
    "provider_record_ids",  # ids joined by a single space, sorted
    "ledger_entry_ids",  # ids joined by a single space, sorted
    "booking_id",  # nullable
    "provider_amount_minor",  # nullable Int64: the records' figure in the entries' currency, summed
    "ledger_amount_minor",  # nullable Int64: the entries' amounts, summed
    "currency",  # the entries' (the figure compared), else the records'
    "keys_agree",  # words an analyst reads: "booking B-17, amount 120.00 EUR, card visa 4242"
    "keys_differ",  # the same for what differs: "amount 120.00 EUR vs 115.00 EUR"
    "detail",  # one sentence: what pairs with what, by which rule, and why
)
MATCH_DTYPES: Final[Mapping[str, str]] = {name: "object" for name in MATCH_COLUMNS} | {
    "score": "float64",
    "provider_amount_minor": "Int64",
    "ledger_amount_minor": "Int64",
}


def match_frame(columns: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """A matches frame from column values (None is null), in MATCH_COLUMNS order and dtypes."""
    rows = max((len(values) for values in columns.values()), default=0)
    return typed_frame(columns, MATCH_DTYPES, rows)


def empty_matches() -> pd.DataFrame:
    return match_frame({})


@dataclass(frozen=True, eq=False)
class MatchOutcome:
    """What the matcher made of one night (see the module docstring for the two frames)."""

    provider_records: pd.DataFrame  # what the diff sees: records held back removed
    ledger: pd.DataFrame  # what the diff sees: matched entries carry their record's id; held ones removed
    matches: pd.DataFrame  # MATCH_COLUMNS, one row per match or suggestion (not exact-id ones)
    findings: pd.DataFrame  # discrepancy frame: ambiguous_match and suggested_match findings
    _rule_counts: Mapping[str, int] = field(repr=False)
    _exact_id: Callable[[], int] = field(repr=False)
    # entries set aside as a reversed pair (+X and −X the PMS posted itself; ``reversals.py``)
    reversed_entries: tuple[str, ...] = ()
    # where ``provider_records`` and ``ledger`` were cut from, when the night was matched in a stack: a
    # batch's diff takes the stack again rather than stacking hundreds of pieces (``frames.stack``)
    cuts: tuple[Cut, Cut] | None = field(default=None, repr=False)

    @functools.cached_property
    def counts_by_rule(self) -> dict[str, int]:
        """Matches per rule (suggestions are no match), "exact_id" counting the records the diff will
        match by id. That count is taken on first read: a fully keyed night pays for it only if asked."""
        return {EXACT_ID: self._exact_id(), **self._rule_counts}


def zero_counts() -> dict[str, int]:
    return dict.fromkeys((PERSON, *TIERS), 0)


def counts_of(matches: pd.DataFrame) -> dict[str, int]:
    """Matches per rule of a matches frame: every row but a suggestion (which is no match)."""
    counts = zero_counts()
    if matches.empty:
        return counts
    for rule, status in zip(matches["rule"].tolist(), matches["status"].tolist(), strict=True):
        if status != SUGGESTED:
            counts[rule] = counts.get(rule, 0) + 1
    return counts


@dataclass(frozen=True, eq=False)
class StackedOutcome:
    """The matcher's outcome over the nights of a stacked frame (``batch.py``; one night is a stack of
    one): the frames as :class:`MatchOutcome`'s, each match and finding with the night it belongs to."""

    provider_records: pd.DataFrame
    ledger: pd.DataFrame
    matches: pd.DataFrame
    findings: pd.DataFrame
    match_scopes: np.ndarray  # per row of ``matches``
    finding_scopes: np.ndarray  # per row of ``findings``
    exact_ids: Callable[[], np.ndarray]  # per scope: records a keyed entry names (read when asked)
    reversed_entries: tuple[tuple[int, str], ...] = ()  # (scope, entry id) set aside as reversed pairs


def unchanged(provider_records: pd.DataFrame, ledger: pd.DataFrame) -> StackedOutcome:
    """Nothing to match: both frames as they came (the exact-id count taken only if asked: a fully keyed
    night pays for it only then)."""
    none = np.empty(0, dtype=np.int64)

    @functools.cache
    def exact_ids() -> np.ndarray:
        return np.bincount(scopes(provider_records)[named_by_ledger(provider_records, ledger)])

    return StackedOutcome(provider_records, ledger, empty_matches(), finding_frame({}), none, none, exact_ids)


def build_outcome(
    provider_records: pd.DataFrame,
    ledger: pd.DataFrame,
    sides: Sides,
    pool: Pool,
    known: list[Applied],
    holds: list[Hold],
    threshold: float,
) -> StackedOutcome:
    """The outcome of the tiers' pool and the decided matches.

    The one-to-one pairs of the tiers (nearly every match of a PMS-style night) stay arrays of rows of the
    sides and are stated straight from them; decided matches, splits and held-back groups, a few, are
    read out of the frames by position."""
    pair_r, pair_e, pair_rule, pair_score = _pairs(pool)
    record_at, entry_at = sides.records["at"], sides.entries["at"]
    matches = [*known, *_group_matches(sides, pool)]
    placed = [
        (
            hold,
            tuple(sorted(int(record_at[r]) for r in hold.records)),
            tuple(sorted(int(entry_at[e]) for e in hold.entries)),
        )
        for hold in holds
    ]
    held_records = [r for _, records, _ in placed for r in records] + [
        r for m in matches if m.held for r in m.records
    ]
    held_entries = [e for _, _, entries in placed for e in entries]
    rekeyed = (entry_at[pair_e], sides.records["record_id"][pair_r])
    ledger_out = _rewritten_ledger(ledger, provider_records, matches, held_entries, rekeyed)
    provider_out = provider_records
    if held_records:
        keep = np.ones(len(provider_records), dtype=bool)
        keep[held_records] = False
        provider_out = provider_records[keep].reset_index(drop=True)

    named_r = {int(record_at[r]) for hold in holds for r in hold.named_records}
    named_e = {int(entry_at[e]) for hold in holds for e in hold.named_entries}
    records = _rows(
        record_keys, provider_records, {p for m in matches for p in m.records} | named_r, sides.records
    )
    entries = _rows(entry_keys, ledger, {p for m in matches for p in m.entries} | named_e, sides.entries)

    rows: dict[str, list[Any]] = {name: [] for name in MATCH_COLUMNS}
    found: dict[str, list[Any]] = {}
    record_scope, entry_scope = scopes(provider_records), scopes(ledger)

    def scope_of(records_at: Sequence[int], entries_at: Sequence[int]) -> int:
        return int(entry_scope[entries_at[0]] if entries_at else record_scope[records_at[0]])

    match_scopes = [scope_of(m.records, m.entries) for m in known]
    for match in known:
        _add_match(rows, match, records, entries, threshold)
    _add_pairs(rows, sides, pair_r, pair_e, pair_rule, pair_score, threshold)
    match_scopes += sides.records["scope"][pair_r].tolist()
    for match in matches[len(known) :]:
        _add_match(rows, match, records, entries, threshold)
        match_scopes.append(scope_of(match.records, match.entries))
    finding_scopes: list[int] = []
    suggestions = [(hold, r, e) for hold, r, e in placed if hold.kind == SUGGESTION]
    ambiguities = [(hold, r, e) for hold, r, e in placed if hold.kind != SUGGESTION]
    for hold, at_r, at_e in suggestions:
        kind = records[at_r[0]].kind
        suggestion = Applied(at_r, (), at_e, kind, hold.rules[0], hold.score, SUGGESTED)
        said = _add_match(rows, suggestion, records, entries, threshold)
        match_scopes.append(scope_of(at_r, at_e))
        finding_scopes.append(scope_of(at_r, at_e))
        _add_finding(
            found,
            SUGGESTED_MATCH,
            f"match:{rows['match_key'][-1]}",
            kind,
            [records[p] for p in at_r],
            [entries[p] for p in at_e],
            said,
        )
    for hold, at_r, at_e in ambiguities:
        named_records = [records[int(record_at[r])] for r in sorted(hold.named_records)]
        named_entries = [entries[int(entry_at[e])] for e in sorted(hold.named_entries)]
        kind = (named_records or named_entries)[0].kind
        detail = say_ambiguity(
            named_records,
            named_entries,
            [records[p] for p in at_r],
            [entries[p] for p in at_e],
            kind,
            hold.rules,
        )
        key = match_key([r.record_id for r in named_records], [e.entry_id for e in named_entries])
        finding_scopes.append(int((named_entries or named_records)[0].scope))
        _add_finding(
            found,
            AMBIGUOUS_MATCH,
            f"ambiguous:{key}",
            kind,
            [records[p] for p in at_r],
            [entries[p] for p in at_e],
            detail,
        )
    return StackedOutcome(
        provider_out,
        ledger_out,
        match_frame(rows),
        finding_frame(found),
        np.array(match_scopes, dtype=np.int64),
        np.array(finding_scopes, dtype=np.int64),
        lambda: np.bincount(record_scope[sides.named]),
    )


def _pairs(pool: Pool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The tiers' one-to-one pairs as four aligned arrays: record rows, entry rows, rules, scores."""
    if not pool.pairs:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0, dtype=object), np.empty(0, dtype=np.float64)
    return (
        np.concatenate([r for r, _, _, _ in pool.pairs]),
        np.concatenate([e for _, e, _, _ in pool.pairs]),
        np.concatenate([np.full(len(r), rule, dtype=object) for r, _, rule, _ in pool.pairs]),
        np.concatenate([score for _, _, _, score in pool.pairs]),
    )


def _group_matches(sides: Sides, pool: Pool) -> list[Applied]:
    """The tiers' splits in positions of the input frames."""
    record_at, entry_at = sides.records["at"], sides.entries["at"]
    return [
        Applied(
            tuple(int(record_at[r]) for r in group.records),
            (),
            tuple(int(entry_at[e]) for e in group.entries),
            str(sides.records["kind"][group.records[0]]),
            group.rule,
            group.score,
            MATCHED,
        )
        for group in pool.groups
    ]


def _table_rows(table: Table, rows: np.ndarray) -> list[Any]:
    """The table's rows at ``rows`` as namedtuples."""
    row = namedtuple("Row", list(table.columns))  # type: ignore[misc]
    values = zip(*(column[rows].tolist() for column in table.columns.values()), strict=True)
    return [row(*fields) for fields in values]


def _add_pairs(
    rows: dict[str, list[Any]],
    sides: Sides,
    r: np.ndarray,
    e: np.ndarray,
    rules: np.ndarray,
    scores: np.ndarray,
    threshold: float,
) -> None:
    """The rows of the tiers' one-to-one pairs, stated column by column from the sides' own rows."""
    if not len(r):
        return
    records = {name: sides.records[name][r].tolist() for name in PAIR_RECORD_FIELDS}
    entries = {name: sides.entries[name][e].tolist() for name in PAIR_ENTRY_FIELDS}
    size = len(r)
    agree, differ, detail = state_pairs(
        list(records.values()),
        list(entries.values()),
        rules.tolist(),
        scores.tolist(),
        [MATCHED] * size,
        [False] * size,
        threshold,
    )
    rids, eids = records["record_id"], entries["entry_id"]
    currency = entries["currency"]
    converted = sides.records["converted"][r] & (
        sides.records["settlement_currency"][r] == sides.entries["currency"][e]
    )
    figures = np.where(converted, sides.records["settlement_amount"][r], sides.records["amount"][r])
    presented = sides.records["currency"][r] == sides.entries["currency"][e]
    rows["match_key"] += [f"{rid}={eid}" for rid, eid in zip(rids, eids, strict=True)]
    rows["rule"] += rules.tolist()
    rows["score"] += scores.tolist()
    rows["status"] += [MATCHED] * size
    rows["kind"] += records["kind"]
    rows["provider_record_ids"] += rids
    rows["ledger_entry_ids"] += eids
    rows["booking_id"] += [
        b if b is not None else eb for b, eb in zip(records["booking"], entries["booking"], strict=True)
    ]
    rows["provider_amount_minor"] += [
        int(value) if ok or conv else None
        for value, ok, conv in zip(figures.tolist(), presented.tolist(), converted.tolist(), strict=True)
    ]
    rows["ledger_amount_minor"] += entries["amount"]
    rows["currency"] += currency
    rows["keys_agree"] += agree
    rows["keys_differ"] += differ
    rows["detail"] += detail


def _rows(
    read: Callable[[pd.DataFrame, np.ndarray], Table], frame: pd.DataFrame, at: set[int], sides: Table
) -> dict[int, Any]:
    """The rows at ``at`` with their normalised keys, by position (namedtuples): a candidate's from the
    sides already read, any other (a decided match's) read from the frame."""
    if not at:
        return {}
    positions = np.array(sorted(at), dtype=np.int64)
    found = np.isin(positions, sides["at"])
    rows: dict[int, Any] = {}
    if found.any():
        row_of = {int(position): row for row, position in enumerate(sides["at"].tolist())}
        taken = positions[found]
        named = np.array([row_of[int(position)] for position in taken], dtype=np.int64)
        rows.update(zip(taken.tolist(), _table_rows(sides, named), strict=True))
    if not found.all():
        rest = positions[~found]
        rows.update(zip(rest.tolist(), _table_rows(read(frame, rest), np.arange(len(rest))), strict=True))
    return rows


def _add_match(
    rows: dict[str, list[Any]],
    match: Applied,
    records: dict[int, Any],
    entries: dict[int, Any],
    threshold: float,
) -> str:
    """One row of the matches frame; returns its detail (a suggestion's finding says the same)."""
    recs = sorted((records[p] for p in match.records), key=lambda r: (r.created, str(r.record_id)))
    ents = sorted(
        (entries[p] for p in match.entries), key=lambda e: (not e.in_night, e.posted, str(e.entry_id))
    )
    record_ids = [str(r.record_id) for r in recs] + list(match.absent)
    entry_ids = [str(e.entry_id) for e in ents] + list(match.absent_entries)
    currency = str(ents[0].currency if ents else recs[0].currency)
    figures = [figure(r, currency) for r in recs] if ents else [None]
    if match.held:
        said = say_held(record_ids, entry_ids, match.kind)
    else:
        said = say_match(
            recs,
            match.absent,
            ents,
            match.kind,
            match.rule,
            match.score,
            match.status,
            threshold,
            earlier=match.earlier,
        )
    bookings = [r.booking for r in recs if present(r.booking)] + [
        e.booking for e in ents if present(e.booking)
    ]
    values = {
        "match_key": match_key(record_ids, entry_ids),
        "rule": match.rule,
        "score": float(match.score),
        "status": match.status,
        "kind": match.kind,
        "provider_record_ids": " ".join(sorted(record_ids)),
        "ledger_entry_ids": " ".join(sorted(entry_ids)),
        "booking_id": bookings[0] if bookings else None,
        "provider_amount_minor": None
        if match.absent or None in figures
        else sum(f for f in figures if f is not None),
        "ledger_amount_minor": sum(int(e.amount) for e in ents) if ents else None,
        "currency": currency,
        "keys_agree": said.keys_agree,
        "keys_differ": said.keys_differ,
        "detail": said.detail,
    }
    for name, value in values.items():
        rows[name].append(value)
    return said.detail


def _add_finding(
    found: dict[str, list[Any]],
    category: str,
    record_key: str,
    kind: str,
    recs: list[Any],
    ents: list[Any],
    detail: str,
) -> None:
    """A held-back finding: the rows it holds, no money (difference 0, no proposal in ADJUSTMENT_POLICY)."""
    bookings = [r.booking for r in recs if present(r.booking)] + [
        e.booking for e in ents if present(e.booking)
    ]
    values = {
        "category": category,
        "record_key": record_key,
        "kind": kind,
        "provider_record_id": str(recs[0].record_id) if recs else None,
        "ledger_entry_id": str(ents[0].entry_id) if ents else None,
        "booking_id": bookings[0] if bookings else None,
        "provider_amount_minor": sum(int(r.amount) for r in recs) if recs else None,
        "ledger_amount_minor": sum(int(e.amount) for e in ents) if ents else None,
        "difference_minor": 0,
        "currency": recs[0].currency if recs else ents[0].currency,
        "ledger_currency": ents[0].currency if ents else None,
        "detail": detail,
    }
    for name, value in values.items():
        found.setdefault(name, []).append(value)


def _rewritten_ledger(
    ledger: pd.DataFrame,
    provider_records: pd.DataFrame,
    matches: list[Applied],
    held: list[int],
    rekeyed: tuple[np.ndarray, np.ndarray],
) -> pd.DataFrame:
    """The ledger the diff sees (module docstring); the very frame when nothing changes. ``rekeyed``:
    (ledger positions, record ids) of the one-to-one pairs."""
    if not matches and not held and not len(rekeyed[0]):
        return ledger
    ids = ledger["provider_record_id"].to_numpy(dtype=object, copy=True)
    ids[rekeyed[0]] = rekeyed[1]
    amounts = ledger["amount_minor"].to_numpy(dtype=np.int64)
    drop = np.zeros(len(ledger), dtype=bool)
    drop[held] = True
    record_ids = provider_records["provider_record_id"].to_numpy(dtype=object)
    figure_at = _Figures(provider_records)
    first_entry = _FirstEntry(ledger)
    currencies = ledger["currency"].to_numpy(dtype=object)
    simple: list[tuple[int, str]] = []
    extra_from: list[int] = []
    extra_ids: list[str] = []
    extra_amounts: list[int] = []
    for match in matches:
        if match.held:
            drop[list(match.entries)] = True
            continue
        names = [str(record_ids[p]) for p in match.records] + list(match.absent)
        if len(match.entries) == 1 and len(names) == 1:
            simple.append((match.entries[0], names[0]))
            continue
        first = first_entry(match.entries)
        currency = currencies[first]
        total = int(amounts[list(match.entries)].sum())
        shares = [figure_at(p, currency) for p in match.records]
        rest = total - sum(shares)
        if match.absent:  # an absent record's figure is unknown: it takes what the present ones leave
            names, shares = names[: len(match.records) + 1], [*shares, rest]
        else:
            shares[0] += rest
        drop[list(match.entries)] = True
        extra_from += [first] * len(names)
        extra_ids += names
        extra_amounts += shares
    if simple:
        at, named = zip(*simple, strict=True)
        ids[list(at)] = list(named)
    # One take of the rows kept and the combined rows' firsts, then the two columns that change: a night of
    # a few dozen rows pays pandas per call, not per row.
    kept = np.flatnonzero(~drop)
    rows = np.concatenate([kept, np.array(extra_from, dtype=np.int64)])
    out = ledger.take(rows).reset_index(drop=True)
    out["provider_record_id"] = pd.Series(
        np.concatenate([ids[kept], np.array(extra_ids, dtype=object)]),
        dtype=ledger["provider_record_id"].dtype,
    )
    out["amount_minor"] = np.concatenate([amounts[kept], np.array(extra_amounts, dtype=np.int64)])
    return out


class _FirstEntry:
    """The entry a combined row stands as: in-night first, then the earliest posted, then the smallest id
    (the ledger's columns read once for every combined row of the night)."""

    def __init__(self, ledger: pd.DataFrame) -> None:
        self.in_night = ledger["in_night"].to_numpy()
        self.posted = ledger["posted_at"].to_numpy(dtype="datetime64[ns]").view(np.int64)
        self.ids = ledger["entry_id"].to_numpy(dtype=object)

    def __call__(self, entries: Sequence[int]) -> int:
        return min(entries, key=lambda p: (not self.in_night[p], self.posted[p], str(self.ids[p])))


class _Figures:
    """A record's figure in a currency (presentment, or a conversion's settlement), else its amount (the
    records' columns read once for the night)."""

    def __init__(self, provider_records: pd.DataFrame) -> None:
        def column(name: str) -> np.ndarray:
            if name not in provider_records.columns:
                return np.full(len(provider_records), None, dtype=object)
            return provider_records[name].to_numpy(dtype=object)

        self.currency = column("currency")
        self.amount = column("amount_minor")
        self.settlement_amount = column("settlement_amount_minor")
        self.settlement_currency = column("settlement_currency")

    def __call__(self, position: int, currency: str) -> int:
        if self.currency[position] == currency:
            return int(self.amount[position])
        settled = self.settlement_amount[position]
        if present(settled) and self.settlement_currency[position] == currency:
            return int(settled)
        return int(self.amount[position])
