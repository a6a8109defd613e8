"""The candidate pairs each one-to-one tier proposes, found by joins on equal keys (no Python per row).

Every tier returns *edges*: one row per (candidate record, candidate entry) it would pair, with the
record's figure in the entry's currency and the tier's score. ``qualify`` then applies the rules every
tier obeys (same kind and a currency of the record, enforced by the joins; two known bookings that
differ pair only when approval codes agree; a known key that disagrees caps the score; a pairing a person
rejected is never proposed) and ranks the edges, so that ``resolve.py`` can tell a unique best candidate
from several equally good ones. The split tier, a search over sums, is ``split.py``.
"""

from __future__ import annotations

import re
from typing import Final

import numpy as np
import pandas as pd

from recon_pipeline.reconcile.matching.joins import equi_join, first_per_pair, window_join
from recon_pipeline.reconcile.matching.policy import (
    BOOKING_AMOUNT,
    CARD_WINDOW,
    CONFLICT_SCORE,
    REFERENCE,
    SCORES,
    scoped_key,
)
from recon_pipeline.reconcile.matching.sides import NO_TIME, Sides, Table

# A reference token: letters, digits and underscores; hyphen-joined runs count whole and split.
_TOKEN: Final = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")


def edges_of(
    r: np.ndarray,
    e: np.ndarray,
    figure: np.ndarray,
    score: float | np.ndarray,
    direct: np.ndarray | None = None,
) -> Table:
    """Edges (r, e, figure, score, direct) from aligned arrays."""
    size = len(r)
    return Table(
        {
            "r": r.astype(np.int64),
            "e": e.astype(np.int64),
            "figure": figure.astype(np.int64),
            "score": np.broadcast_to(np.asarray(score, dtype=np.float64), size).copy(),
            "direct": np.zeros(size, dtype=bool) if direct is None else direct.astype(bool),
        },
        size,
    )


def no_edges() -> Table:
    empty = np.empty(0, dtype=np.int64)
    return edges_of(empty, empty, empty, 0.0)


def _figures(sides: Sides, free_r: np.ndarray) -> Table:
    """The free records' figures. Records that moved no money (a failed attempt) are candidates too: a
    posting only they fit is the diff's status mismatch, as a keyed one would be; ``qualify`` ranks them
    below a record that moved money, so a failed attempt never takes the posting of its successful retry."""
    return sides.figures.take(free_r[sides.figures["r"]])


def _entries(sides: Sides, free_e: np.ndarray) -> np.ndarray:
    return np.flatnonzero(free_e)


def reference_edges(sides: Sides, free_r: np.ndarray, free_e: np.ndarray) -> Table:
    """The entry's reference names the record's provider_record_id, charge_id or payment_intent_id as a
    whole token (``direct`` when it names the record's own id)."""
    references = sides.entries["reference"]
    said_e: list[int] = []
    said: list[str] = []
    for row in np.flatnonzero(free_e).tolist():
        if references[row] is not None:
            tokens = reference_tokens(str(references[row]))
            said_e += [row] * len(tokens)
            said += tokens
    if not said:
        return no_edges()
    rows = np.flatnonzero(free_r)
    records = sides.records
    named_r = np.concatenate([rows, rows, rows])
    named = np.concatenate(
        [records["record_id"][rows], records["charge_id"][rows], records["intent_id"][rows]]
    )
    direct = np.concatenate([np.ones(len(rows), bool), np.zeros(2 * len(rows), bool)])
    said_at = np.array(said_e, dtype=np.int64)
    token_at, named_at = equi_join(
        [np.array(said, dtype=object), sides.entries["scope"][said_at]], [named, records["scope"][named_r]]
    )
    e = said_at[token_at]
    r, direct = named_r[named_at], direct[named_at]
    keep = first_per_pair(r, e, direct.astype(np.int64))
    r, e, direct = r[keep], e[keep], direct[keep]
    figures = sides.figures  # same kind, and a currency of the record (its figure in that currency)
    pair_at, figure_at = equi_join(
        [r, sides.entries["kind"][e], sides.entries["currency"][e]],
        [figures["r"], figures["kind"], figures["currency"]],
    )
    return edges_of(r[pair_at], e[pair_at], figures["amount"][figure_at], SCORES[REFERENCE], direct[pair_at])


def reference_tokens(text: str) -> list[str]:
    """The whole tokens of a reference text: ``Stripe ch_1-deposit`` holds ``ch_1-deposit``, ``ch_1``, ..."""
    found = _TOKEN.findall(text)
    return sorted({*found, *(part for token in found if "-" in token for part in token.split("-"))})


def _join(
    figures: Table,
    sides: Sides,
    entries: np.ndarray,
    record_keys: tuple[str, ...],
    entry_keys: tuple[str, ...],
    window: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r, e, figure) of the figures and entries whose named keys are equal (within the window)."""
    records, ledger = sides.records, sides.entries
    r = figures["r"]
    left = [
        records[key][r] if key in records.columns and key not in figures.columns else figures[key]
        for key in record_keys
    ]
    right = [ledger[key][entries] for key in entry_keys]
    if window is None:
        at_f, at_e = equi_join(left, right)
    else:
        created, posted = records["created"][r], ledger["posted"][entries]
        at_f, at_e = window_join(left, created, right, posted, window)
        timed = (created[at_f] != NO_TIME) & (posted[at_e] != NO_TIME)
        at_f, at_e = at_f[timed], at_e[timed]
    return r[at_f], entries[at_e], figures["amount"][at_f]


def booking_amount_edges(sides: Sides, free_r: np.ndarray, free_e: np.ndarray) -> Table:
    """Same booking, kind, currency and amount (at the figure of the entry's currency)."""
    r, e, figure = _join(
        _figures(sides, free_r),
        sides,
        _entries(sides, free_e),
        ("scope", "kind", "booking", "currency", "amount"),
        ("scope", "kind", "booking", "currency", "amount"),
    )
    return edges_of(r, e, figure, SCORES[BOOKING_AMOUNT])


def strong_key_edges(sides: Sides, free_r: np.ndarray, free_e: np.ndarray) -> Table:
    """The issuer's approval code agrees; or, in one booking, the card (brand + last four) agrees. The
    amounts may differ: the pair then stands, and the diff reports one amount mismatch, not two findings."""
    figures, entries = _figures(sides, free_r), _entries(sides, free_e)
    by_approval = _join(
        figures,
        sides,
        entries,
        ("scope", "kind", "approval", "currency"),
        ("scope", "kind", "approval", "currency"),
    )
    r, e, figure = _join(
        figures,
        sides,
        entries,
        ("scope", "kind", "booking", "last4", "currency"),
        ("scope", "kind", "booking", "last4", "currency"),
    )
    record_brand, entry_brand = sides.records["brand"][r], sides.entries["brand"][e]
    same_card = ~(pd.notna(record_brand) & pd.notna(entry_brand) & (record_brand != entry_brand))
    r = np.concatenate([by_approval[0], r[same_card]])
    e = np.concatenate([by_approval[1], e[same_card]])
    figure = np.concatenate([by_approval[2], figure[same_card]])
    score = np.concatenate(
        [
            np.full(len(by_approval[0]), SCORES["strong_keys/approval"]),
            np.full(int(same_card.sum()), SCORES["strong_keys/card_booking"]),
        ]
    )
    keep = first_per_pair(r, e, np.round(score * 1000).astype(np.int64))
    return edges_of(r[keep], e[keep], figure[keep], score[keep])


def card_window_edges(sides: Sides, free_r: np.ndarray, free_e: np.ndarray, window_ns: int) -> Table:
    """No booking to compare (unknown on a side): same kind, currency and amount, posted within the time
    window of the record's creation; the card agrees (a match) or is unknown on a side (a suggestion
    only). A card both sides know and that differs rules the pair out."""
    figures, entries = _figures(sides, free_r), _entries(sides, free_e)
    booked_entry = pd.notna(sides.entries["booking"][entries])
    booked_record = pd.notna(sides.records["booking"][figures["r"]])
    keys = ("scope", "kind", "currency", "amount")
    parts = [
        _join(figures, sides, entries[~booked_entry], keys, keys, window_ns),
        _join(figures.take(~booked_record), sides, entries[booked_entry], keys, keys, window_ns),
    ]
    r, e, figure = (np.concatenate([part[i] for part in parts]) for i in range(3))
    card = card_agreement(sides, r, e)
    known = card >= 0
    score = np.where(card[known] > 0, SCORES[CARD_WINDOW], SCORES["card_window/amount_only"])
    return edges_of(r[known], e[known], figure[known], score)


def card_agreement(sides: Sides, r: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per pair: 1 the card agrees (last four equal, brands equal where both known), -1 it differs (last
    four, or brands both known), 0 unknown (a side lacks its last four and no brand disagrees)."""
    record_last4, entry_last4 = sides.records["last4"][r], sides.entries["last4"][e]
    record_brand, entry_brand = sides.records["brand"][r], sides.entries["brand"][e]
    known = pd.notna(record_last4) & pd.notna(entry_last4)
    brand_differs = pd.notna(record_brand) & pd.notna(entry_brand) & (record_brand != entry_brand)
    differs = (known & (record_last4 != entry_last4)) | brand_differs
    return np.where(differs, -1, np.where(known, 1, 0)).astype(np.int8)


def _equal_known(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(agree, differ): both sides know the value, and it is equal / different."""
    known = pd.notna(left) & pd.notna(right)
    equal = known & (left == right)
    return equal, known & ~equal


def qualify(edges: Table, sides: Sides, banned: frozenset[str]) -> Table:
    """The edges every tier may propose, with what agrees and a rank among a row's candidates.

    Two bookings both sides know and that differ are never paired unless the approval codes agree; a
    card or approval code that differs caps the score at CONFLICT_SCORE (a suggestion); a pairing a
    person rejected is dropped. ``rank`` orders a row's candidates: score first, then a record that moved
    money (a failed attempt of the same intent is no rival of the charge that succeeded), then an equal
    amount, then each further key that agrees; equal ranks are equally good candidates.
    """
    r, e = edges["r"], edges["e"]
    records, entries = sides.records, sides.entries
    approval_agrees, approval_differs = _equal_known(records["approval"][r], entries["approval"][e])
    booking_agrees, booking_differs = _equal_known(records["booking"][r], entries["booking"][e])
    card = card_agreement(sides, r, e)
    keep = ~(booking_differs & ~approval_agrees)
    if banned and len(r):
        keys = np.array(
            [
                scoped_key(scope, f"{rid}={eid}")
                for scope, rid, eid in zip(
                    records["scope"][r].tolist(), records["record_id"][r], entries["entry_id"][e], strict=True
                )
            ]
        )
        keep &= ~np.isin(keys, list(banned))
    score = np.where(
        (card < 0) | approval_differs, np.minimum(edges["score"], CONFLICT_SCORE), edges["score"]
    )
    same_amount = edges["figure"] == entries["amount"][e]
    rank = (
        (np.round(score * 1000).astype(np.int64) << 8)
        | (records["settled"][r].astype(np.int64) << 5)
        | (same_amount.astype(np.int64) << 4)
        | (approval_agrees.astype(np.int64) << 3)
        | ((card > 0).astype(np.int64) << 2)
        | (booking_agrees.astype(np.int64) << 1)
        | edges["direct"].astype(np.int64)
    )
    return edges.with_columns(score=score, same_amount=same_amount, rank=rank).take(keep)
