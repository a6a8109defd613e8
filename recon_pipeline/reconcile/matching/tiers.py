"""The candidate pairs each one-to-one tier proposes, found with merges on equal keys (no Python per row).

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

from recon_pipeline.reconcile.matching.policy import (
    BOOKING_AMOUNT,
    CARD_WINDOW,
    CONFLICT_SCORE,
    REFERENCE,
    SCORES,
)
from recon_pipeline.reconcile.matching.sides import NO_TIME, Sides

EDGE_COLUMNS: Final = ("r", "e", "figure", "score", "direct")
# A reference token: letters, digits and underscores, hyphen-joined runs kept whole as well as split.
_TOKEN: Final = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")


def no_edges() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "r": np.empty(0, dtype=np.int64),
            "e": np.empty(0, dtype=np.int64),
            "figure": np.empty(0, dtype=np.int64),
            "score": np.empty(0, dtype=np.float64),
            "direct": np.empty(0, dtype=bool),
        }
    )


def _edges(frame: pd.DataFrame, score: float | np.ndarray, direct: np.ndarray | None = None) -> pd.DataFrame:
    if frame.empty:
        return no_edges()
    return pd.DataFrame(
        {
            "r": frame["r"].to_numpy(dtype=np.int64),
            "e": frame["e"].to_numpy(dtype=np.int64),
            "figure": frame["figure"].to_numpy(dtype=np.int64),
            "score": np.broadcast_to(np.asarray(score, dtype=np.float64), len(frame)).copy(),
            "direct": np.zeros(len(frame), dtype=bool) if direct is None else direct,
        }
    )


def _free_entries(sides: Sides, free_e: np.ndarray, *required: str) -> pd.DataFrame:
    entries = sides.entries.assign(e=np.arange(len(sides.entries)))[free_e]
    for name in required:
        entries = entries[entries[name].notna()]
    return entries


def _free_figures(sides: Sides, free_r: np.ndarray, settled_only: bool, *keys: str) -> pd.DataFrame:
    """The free records' figures with the record keys named, one row per figure."""
    usable = free_r & sides.records["settled"].to_numpy() if settled_only else free_r
    figures = sides.figures[usable[sides.figures["r"].to_numpy()]]
    if keys:
        records = sides.records
        figures = figures.assign(**{key: records[key].to_numpy()[figures["r"].to_numpy()] for key in keys})
        for key in keys:
            figures = figures[figures[key].notna()]
    return figures.rename(columns={"amount": "figure"})


def reference_edges(sides: Sides, free_r: np.ndarray, free_e: np.ndarray) -> pd.DataFrame:
    """The entry's reference names the record's provider_record_id, charge_id or payment_intent_id as a
    whole token (``direct`` when it names the record's own id). Unsettled records count: the reference
    says which record the PMS meant, and the diff reports a status mismatch if it did not move money."""
    entries = _free_entries(sides, free_e, "reference")
    if entries.empty or not free_r.any():
        return no_edges()
    tokens = entries["reference"].astype(str).map(reference_tokens).explode().dropna()
    # sides.entries has a RangeIndex, so an exploded token's index is its entry's row (``e``)
    said = pd.DataFrame({"e": tokens.index.to_numpy(dtype=np.int64), "token": tokens.to_numpy()})
    records = sides.records.assign(r=np.arange(len(sides.records)))[free_r]
    named = pd.concat(
        [
            pd.DataFrame({"r": records["r"], "token": records[column], "direct": column == "record_id"})
            for column in ("record_id", "charge_id", "intent_id")
        ],
        ignore_index=True,
    ).dropna(subset=["token"])
    pairs = said.merge(named, on="token")
    if pairs.empty:
        return no_edges()
    pairs = pairs.groupby(["r", "e"], as_index=False)["direct"].max()
    pairs = pairs.assign(kind=sides.entries["kind"].to_numpy()[pairs["e"].to_numpy()])
    pairs = pairs.assign(currency=sides.entries["currency"].to_numpy()[pairs["e"].to_numpy()])
    figures = sides.figures.rename(columns={"amount": "figure"})
    pairs = pairs.merge(figures, on=["r", "kind", "currency"])  # same kind, a currency of the record
    return _edges(pairs, SCORES[REFERENCE], pairs["direct"].to_numpy(dtype=bool))


def reference_tokens(text: str) -> list[str]:
    """The whole tokens of a reference text: ``Stripe ch_1-deposit`` holds ``ch_1-deposit``, ``ch_1``, ..."""
    found = _TOKEN.findall(text)
    return sorted({*found, *(part for token in found if "-" in token for part in token.split("-"))})


def booking_amount_edges(sides: Sides, free_r: np.ndarray, free_e: np.ndarray) -> pd.DataFrame:
    """Same booking, kind, currency and amount (at the figure of the entry's currency)."""
    entries = _free_entries(sides, free_e, "booking")
    figures = _free_figures(sides, free_r, True, "booking")
    pairs = figures.merge(
        entries[["e", "kind", "booking", "currency", "amount"]],
        left_on=["kind", "booking", "currency", "figure"],
        right_on=["kind", "booking", "currency", "amount"],
    )
    return _edges(pairs, SCORES[BOOKING_AMOUNT])


def strong_key_edges(sides: Sides, free_r: np.ndarray, free_e: np.ndarray) -> pd.DataFrame:
    """The issuer's approval code agrees; or, in one booking, the card (brand + last four) agrees. The
    amounts may differ: the pair then stands, and the diff reports one amount mismatch, not two findings."""
    entries = _free_entries(sides, free_e)
    by_approval = _free_figures(sides, free_r, True, "approval").merge(
        entries[entries["approval"].notna()][["e", "kind", "approval", "currency"]],
        on=["kind", "approval", "currency"],
    )
    by_card = _free_figures(sides, free_r, True, "booking", "last4").merge(
        entries[entries["booking"].notna() & entries["last4"].notna()][
            ["e", "kind", "booking", "last4", "currency", "brand"]
        ],
        on=["kind", "booking", "last4", "currency"],
    )
    if not by_card.empty:  # a brand both sides know must agree too
        record_brand = sides.records["brand"].to_numpy()[by_card["r"].to_numpy()]
        entry_brand = by_card["brand"].to_numpy()
        by_card = by_card[~(pd.notna(record_brand) & pd.notna(entry_brand) & (record_brand != entry_brand))]
    edges = pd.concat(
        [
            _edges(by_approval, SCORES["strong_keys/approval"]),
            _edges(by_card, SCORES["strong_keys/card_booking"]),
        ],
        ignore_index=True,
    )
    if edges.empty:
        return no_edges()
    best = edges.sort_values("score", ascending=False, kind="stable").drop_duplicates(["r", "e"])
    return best.sort_values(["r", "e"], ignore_index=True)


def card_window_edges(sides: Sides, free_r: np.ndarray, free_e: np.ndarray, window_ns: int) -> pd.DataFrame:
    """No booking to compare (unknown on a side): same kind, currency and amount, posted within the time
    window of the record's creation; the card agrees (a match) or is unknown on a side (a suggestion
    only). A card both sides know and that differs rules the pair out."""
    entries = _free_entries(sides, free_e)
    figures = _free_figures(sides, free_r, True)
    record_booked = pd.notna(sides.records["booking"].to_numpy())[figures["r"].to_numpy()]
    entry_booked = entries["booking"].notna().to_numpy()
    parts = [
        _window_join(figures, entries[~entry_booked], sides, window_ns),
        _window_join(figures[~record_booked], entries[entry_booked], sides, window_ns),
    ]
    pairs = pd.concat(parts, ignore_index=True)
    if pairs.empty:
        return no_edges()
    r, e = pairs["r"].to_numpy(), pairs["e"].to_numpy()
    card = card_agreement(sides, r, e)
    pairs = pairs[card >= 0]
    score = np.where(card[card >= 0] > 0, SCORES[CARD_WINDOW], SCORES["card_window/amount_only"])
    return _edges(pairs, score)


def _window_join(figures: pd.DataFrame, entries: pd.DataFrame, sides: Sides, window_ns: int) -> pd.DataFrame:
    """(r, e, figure) of equal (kind, currency, amount) whose times lie within the window.

    Sort-based, so that a night of many equal amounts costs the pairs within the window, not the product
    of the groups: each record's key is (key group, rank of its time among the records' times), and each
    entry looks up the block of ranks its window spans with two binary searches.
    """
    created = sides.records["created"].to_numpy()[figures["r"].to_numpy()]
    figures = figures[created != NO_TIME]
    created = created[created != NO_TIME]
    entries = entries[entries["posted"].to_numpy() != NO_TIME]
    if figures.empty or entries.empty:
        return pd.DataFrame({"r": [], "e": [], "figure": []}, dtype=np.int64)
    keys = pd.concat(
        [
            figures[["kind", "currency", "figure"]],
            entries[["kind", "currency", "amount"]].set_axis(["kind", "currency", "figure"], axis=1),
        ],
        ignore_index=True,
    )
    group = keys.groupby(["kind", "currency", "figure"], sort=False).ngroup().to_numpy(dtype=np.int64)
    record_group, entry_group = group[: len(figures)], group[len(figures) :]
    times_sorted = np.sort(created)
    scale = len(created) + 1
    record_key = record_group * scale + np.searchsorted(times_sorted, created, "left")
    order = np.argsort(record_key, kind="stable")
    sorted_keys = record_key[order]
    posted = entries["posted"].to_numpy()
    low = entry_group * scale + np.searchsorted(times_sorted, posted - window_ns, "left")
    high = entry_group * scale + np.searchsorted(times_sorted, posted + window_ns, "right")
    start, end = np.searchsorted(sorted_keys, low, "left"), np.searchsorted(sorted_keys, high, "left")
    counts = end - start
    total = int(counts.sum())
    which_entry = np.repeat(np.arange(len(entries)), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    which_figure = order[np.repeat(start, counts) + offsets]
    return pd.DataFrame(
        {
            "r": figures["r"].to_numpy()[which_figure],
            "e": entries["e"].to_numpy()[which_entry],
            "figure": figures["figure"].to_numpy()[which_figure],
        }
    )


def card_agreement(sides: Sides, r: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per pair: 1 the card agrees (last four equal, brands equal where both known), -1 it differs (last
    four, or brands both known), 0 unknown (a side lacks its last four and no brand disagrees)."""
    return _agreement(
        sides.records["last4"].to_numpy()[r],
        sides.entries["last4"].to_numpy()[e],
        sides.records["brand"].to_numpy()[r],
        sides.entries["brand"].to_numpy()[e],
    )


def _agreement(
    record_last4: np.ndarray, entry_last4: np.ndarray, record_brand: np.ndarray, entry_brand: np.ndarray
) -> np.ndarray:
    known = pd.notna(record_last4) & pd.notna(entry_last4)
    brand_differs = pd.notna(record_brand) & pd.notna(entry_brand) & (record_brand != entry_brand)
    differs = (known & (record_last4 != entry_last4)) | brand_differs
    return np.where(differs, -1, np.where(known, 1, 0)).astype(np.int8)


def _equal_known(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(agree, differ): both sides know the value, and it is equal / different."""
    known = pd.notna(left) & pd.notna(right)
    equal = known & (left == right)
    return equal, known & ~equal


def qualify(
    edges: pd.DataFrame, sides: Sides, banned: frozenset[str], respect_bookings: bool = True
) -> pd.DataFrame:
    """The edges every tier may propose, with what agrees and a rank among a row's candidates.

    Two bookings both sides know and that differ are never paired unless the approval codes agree; a
    card or approval code that differs caps the score at CONFLICT_SCORE (a suggestion); a pairing a
    person rejected is dropped. ``rank`` orders a row's candidates: score first, then an equal amount,
    then each further key that agrees; equal ranks are equally good candidates.
    """
    if edges.empty:
        return edges.assign(same_amount=np.zeros(0, dtype=bool), rank=np.zeros(0, dtype=np.int64))
    r, e = edges["r"].to_numpy(), edges["e"].to_numpy()
    records, entries = sides.records, sides.entries
    approval_agrees, approval_differs = _equal_known(
        records["approval"].to_numpy()[r], entries["approval"].to_numpy()[e]
    )
    booking_agrees, booking_differs = _equal_known(
        records["booking"].to_numpy()[r], entries["booking"].to_numpy()[e]
    )
    card = card_agreement(sides, r, e)
    keep = ~(booking_differs & ~approval_agrees) if respect_bookings else np.ones(len(edges), dtype=bool)
    if banned:
        keys = (
            records["record_id"].to_numpy()[r].astype(str)
            + "="
            + entries["entry_id"].to_numpy()[e].astype(str)
        )
        keep &= ~np.isin(keys, list(banned))
    score = edges["score"].to_numpy()
    score = np.where((card < 0) | approval_differs, np.minimum(score, CONFLICT_SCORE), score)
    same_amount = edges["figure"].to_numpy() == entries["amount"].to_numpy()[e]
    rank = (
        (np.round(score * 1000).astype(np.int64) << 8)
        | (same_amount.astype(np.int64) << 4)
        | (approval_agrees.astype(np.int64) << 3)
        | ((card > 0).astype(np.int64) << 2)
        | (booking_agrees.astype(np.int64) << 1)
        | edges["direct"].to_numpy(dtype=np.int64)
    )
    return edges.assign(score=score, same_amount=same_amount, rank=rank)[keep].reset_index(drop=True)
