"""Postings the PMS reversed itself: +X and −X on one booking and card, netting to zero, are no finding.

A card declined at the terminal is often posted anyway and reversed at once: the folio holds +X and −X,
and the provider a failed charge (or nothing). Compared one by one, the +X is a status mismatch with the
failed charge, the −X a refund the provider never made, and the correction proposed for the first would
put a declined payment back on the books. Here, after the tiers, such pairs leave the ledger the diff
compares: a positive payment that no record that moved money explains (unpaired, paired only with a record
that moved no money, or keyed to one), and a negative one (a refund entry, or a negative payment,
``refunds.py``) that the provider's refunds do not explain either, of one booking (or, without one, one
card's last four), one currency and the same amount, with no card both know differing. Each −X takes
the earliest such +X posted before it (then after it), so a re-run sets the same pair aside.
"""

from __future__ import annotations

import dataclasses
from typing import Final

import numpy as np
import pandas as pd

from recon_pipeline.reconcile.matching.outcome import StackedOutcome
from recon_pipeline.reconcile.matching.sides import brands, last_fours, optional_column, scopes, texts, times

PAYMENT: Final = "payment"
REFUND: Final = "refund"


def set_aside_reversals(provider_records: pd.DataFrame, outcome: StackedOutcome) -> StackedOutcome:
    """The outcome without the reversed pairs of postings (the module docstring), and without the
    matches that paired one of their legs with a record that moved no money."""
    ledger = outcome.ledger
    legs = _legs(provider_records, ledger)
    if legs is None:
        return outcome
    positive, negative = legs
    legs_paired = _pair_legs(ledger, positive, negative)
    if not len(legs_paired):
        return outcome
    entry_ids = ledger["entry_id"].to_numpy(dtype=object)
    entry_scopes = scopes(ledger)
    reversed_ids = {
        (scope, str(entry_id))
        for scope, entry_id in zip(
            entry_scopes[legs_paired].tolist(), entry_ids[legs_paired].tolist(), strict=True
        )
    }
    drop = np.array(
        [
            (scope, str(entry_id)) in reversed_ids
            for scope, entry_id in zip(entry_scopes.tolist(), entry_ids, strict=True)
        ],
        dtype=bool,
    )
    ledger = ledger[~drop].reset_index(drop=True)
    matches = outcome.matches
    touched = np.array(
        [
            any((scope, entry_id) in reversed_ids for entry_id in str(ids).split())
            for scope, ids in zip(outcome.match_scopes.tolist(), matches["ledger_entry_ids"], strict=True)
        ],
        dtype=bool,
    )
    if touched.any():
        matches = matches[~touched].reset_index(drop=True)
    return dataclasses.replace(
        outcome,
        ledger=ledger,
        matches=matches,
        match_scopes=outcome.match_scopes[~touched],
        reversed_entries=tuple(sorted(reversed_ids)),
    )


def _legs(provider_records: pd.DataFrame, ledger: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """Positions of the candidate +X legs and −X legs (None when there are not both)."""
    kinds = ledger["kind"].to_numpy(dtype=object)
    amounts = ledger["amount_minor"].to_numpy(dtype=np.int64)
    maybe_positive = (kinds == PAYMENT) & (amounts > 0)
    maybe_negative = (kinds == REFUND) & (amounts < 0)
    if not maybe_positive.any() or not maybe_negative.any():
        return None
    ids = ledger["provider_record_id"].to_numpy(dtype=object)
    keyed = np.flatnonzero((maybe_positive | maybe_negative) & pd.notna(ids))
    explained = np.zeros(len(ledger), dtype=bool)
    if len(keyed):  # a night of a few dozen rows: plain sets beat an index of pairs
        settled = provider_records["settled"].to_numpy(dtype=bool)
        moved = set(
            zip(
                scopes(provider_records)[settled].tolist(),
                provider_records["provider_record_id"].to_numpy(dtype=object)[settled].tolist(),
                provider_records["kind"].to_numpy(dtype=object)[settled].tolist(),
                strict=True,
            )
        )
        entry_scopes = scopes(ledger)
        explained[keyed] = [(entry_scopes[at], ids[at], kinds[at]) in moved for at in keyed.tolist()]
    positive = np.flatnonzero(maybe_positive & ~explained)
    negative = np.flatnonzero(maybe_negative & ~explained)
    if not len(positive) or not len(negative):
        return None
    return positive, negative


def _pair_legs(ledger: pd.DataFrame, positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """The positions of the legs paired: per (booking or last four, currency, amount), each −X with the
    earliest unpaired +X posted before it, else after it; a card both legs know and that differs never
    pairs."""
    bookings = texts(ledger["booking_id"].to_numpy(dtype=object))
    last4 = last_fours(optional_column(ledger, "card_last4"))
    brand = brands(optional_column(ledger, "card_brand"))
    posted = times(ledger["posted_at"])
    currency = ledger["currency"].to_numpy(dtype=object)
    amounts = ledger["amount_minor"].to_numpy(dtype=np.int64)
    entry_ids = ledger["entry_id"].to_numpy(dtype=object)
    entry_scopes = scopes(ledger)

    def key(at: int) -> tuple[object, ...] | None:
        holder = ("booking", bookings[at]) if bookings[at] is not None else ("card", last4[at])
        if holder[1] is None:
            return None
        return (int(entry_scopes[at]), *holder, currency[at], abs(int(amounts[at])))

    waiting: dict[tuple[object, ...], list[int]] = {}
    for at in sorted(positive.tolist(), key=lambda p: (posted[p], str(entry_ids[p]))):
        found = key(at)
        if found is not None:
            waiting.setdefault(found, []).append(at)
    paired: list[int] = []
    for at in sorted(negative.tolist(), key=lambda p: (posted[p], str(entry_ids[p]))):
        found = key(at)
        options = [p for p in waiting.get(found, []) if _same_card(at, p, brand, last4)] if found else []
        if not options:
            continue
        before = [p for p in options if posted[p] <= posted[at]]
        leg = (before or options)[0]
        waiting[found].remove(leg)  # type: ignore[index]
        paired += [leg, at]
    return np.array(paired, dtype=np.int64)


def _same_card(one: int, other: int, brand: np.ndarray, last4: np.ndarray) -> bool:
    """No card key both entries know differs."""
    for values in (brand, last4):
        if values[one] is not None and values[other] is not None and values[one] != values[other]:
            return False
    return True
