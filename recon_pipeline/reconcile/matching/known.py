"""Matches decided before this run, applied before any tier: a person's word, or an earlier night's match.

A confirmed match is applied verbatim, whatever the tiers would say now: its entries carry its records'
ids from here on. A record not in tonight's pull (an entry of tonight posted for yesterday's charge) still
re-keys the entry, so that the diff's by-id lookup finds the record elsewhere: a timing difference. A
person's match whose entries lie outside the night's window holds its rows here back (a person decided
them); an earlier night's match whose entries are gone is simply not applied. A rejected pairing is only
remembered, so that no tier proposes it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from recon_pipeline.reconcile.matching.policy import CONFIRMED, MATCHED, PERSON, SCORES, KnownMatch


@dataclass(frozen=True)
class Applied:
    """A match in positions of the input frames (records of tonight's pull, entries of the ledger)."""

    records: tuple[int, ...]
    absent: tuple[str, ...]  # record ids the pull does not hold
    entries: tuple[int, ...]
    kind: str
    rule: str
    score: float
    status: str
    held: bool = False  # a person's match with entries outside the window: rows held back, not rewritten
    earlier: bool = False  # decided before this run (a KnownMatch)
    absent_entries: tuple[str, ...] = ()  # entry ids of a held match the ledger frame does not hold


def apply_known(
    provider_records: pd.DataFrame, ledger: pd.DataFrame, known: Sequence[KnownMatch]
) -> tuple[list[Applied], frozenset[str]]:
    """The confirmed matches to apply (a person's first), and the match keys a person rejected."""
    banned = frozenset(match.match_key for match in known if not match.confirmed)
    confirmed = sorted(
        (match for match in known if match.confirmed), key=lambda match: match.rule != PERSON
    )  # stable: a person's decisions first, then the earlier nights' in the order given
    if not confirmed:
        return [], banned
    records = _first_positions(
        provider_records["provider_record_id"].to_numpy(dtype=object),
        provider_records["kind"].to_numpy(dtype=object),
        {(rid, match.kind) for match in confirmed for rid in match.provider_record_ids},
    )
    entries = _first_positions(
        ledger["entry_id"].to_numpy(dtype=object),
        None,
        {eid for m in confirmed for eid in m.ledger_entry_ids},
    )
    used_records: set[int] = set()
    used_entries: set[int] = set()
    applied: list[Applied] = []
    for match in confirmed:
        at_records = [records.get((rid, match.kind)) for rid in match.provider_record_ids]
        at_entries = [entries.get(eid) for eid in match.ledger_entry_ids]
        present_r = tuple(dict.fromkeys(p for p in at_records if p is not None))
        present_e = tuple(dict.fromkeys(p for p in at_entries if p is not None))
        if used_records.intersection(present_r) or used_entries.intersection(present_e):
            continue  # a row is already another decided match's: the first decision stands
        person = match.rule == PERSON
        whole = None not in at_entries
        if not whole and not (person and (present_r or present_e)):
            continue
        absent = tuple(
            rid for rid, at in zip(match.provider_record_ids, at_records, strict=True) if at is None
        )
        used_records.update(present_r)
        used_entries.update(present_e)
        applied.append(
            Applied(
                records=present_r,
                absent=absent,
                entries=present_e,
                kind=match.kind,
                rule=match.rule,
                score=SCORES.get(match.rule, 1.0),
                status=CONFIRMED if person else MATCHED,
                held=not whole,
                earlier=True,
                absent_entries=tuple(
                    eid for eid, at in zip(match.ledger_entry_ids, at_entries, strict=True) if at is None
                ),
            )
        )
    return applied, banned


def _first_positions(ids: np.ndarray, kinds: np.ndarray | None, wanted: set[Any]) -> dict[Any, int]:
    """Key (id, or (id, kind)) → first position holding it, for the wanted keys only."""
    names = {key[0] if isinstance(key, tuple) else key for key in wanted}
    hits = np.flatnonzero(pd.Series(ids, dtype=object).isin(names).to_numpy())
    found: dict[Any, int] = {}
    for position in hits.tolist():
        key = (ids[position], kinds[position]) if kinds is not None else ids[position]
        if key in wanted:
            found.setdefault(key, position)
    return found
