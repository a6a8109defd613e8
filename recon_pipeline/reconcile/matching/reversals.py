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

from recon_pipeline.reconcile.matching.outcome import MatchOutcome
from recon_pipeline.reconcile.matching.sides import brands, last_fours, optional_column, texts, times

PAYMENT: Final = "payment"
REFUND: Final = "refund"


def set_aside_reversals(provider_records: pd.DataFrame, outcome: MatchOutcome) -> MatchOutcome:
    """The outcome without the reversed pairs of postings (the module docstring), and without the
    matches that paired one of their legs with a record that moved no money."""
    ledger = outcome.ledger
    legs = _legs(provider_records, ledger)
    if legs is None:
        return outcome
    positive, negative = legs
    reversed_ids = _pair_legs(ledger, positive, negative)
    if not reversed_ids:
        return outcome
    entry_ids = ledger["entry_id"].to_numpy(dtype=object)
    ledger = ledger[~np.isin(entry_ids, list(reversed_ids))].reset_index(drop=True)
    matches = outcome.matches
    touched = [bool(reversed_ids.intersection(str(ids).split())) for ids in matches["ledger_entry_ids"]]
    counts = dict(outcome._rule_counts)
    if any(touched):
        for rule in matches["rule"].to_numpy(dtype=object)[np.array(touched, dtype=bool)].tolist():
            counts[str(rule)] = counts.get(str(rule), 0) - 1
        matches = matches[~np.array(touched, dtype=bool)].reset_index(drop=True)
    return dataclasses.replace(
        outcome,
        ledger=ledger,
        matches=matches,
        _rule_counts=counts,
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
                provider_records["provider_record_id"].to_numpy(dtype=object)[settled].tolist(),
                provider_records["kind"].to_numpy(dtype=object)[settled].tolist(),
                strict=True,
            )
        )
        explained[keyed] = [(ids[at], kinds[at]) in moved for at in keyed.tolist()]
    positive = np.flatnonzero(maybe_positive & ~explained)
    negative = np.flatnonzero(maybe_negative & ~explained)
    if not len(positive) or not len(negative):
        return None
    return positive, negative


def _pair_legs(ledger: pd.DataFrame, positive: np.ndarray, negative: np.ndarray) -> set[str]:
    """The entry ids of the legs paired: per (booking or last four, currency, amount), each −X with the
    earliest unpaired +X posted before it, else after it; a card both legs know and that differs never
    pairs."""
    bookings = texts(ledger["booking_id"].to_numpy(dtype=object))
    last4 = last_fours(optional_column(ledger, "card_last4"))
    brand = brands(optional_column(ledger, "card_brand"))
    posted = times(ledger["posted_at"])
    currency = ledger["currency"].to_numpy(dtype=object)
    amounts = ledger["amount_minor"].to_numpy(dtype=np.int64)
    entry_ids = ledger["entry_id"].to_numpy(dtype=object)

    def key(at: int) -> tuple[object, ...] | None:
        holder = ("booking", bookings[at]) if bookings[at] is not None else ("card", last4[at])
        if holder[1] is None:
            return None
        return (*holder, currency[at], abs(int(amounts[at])))

    waiting: dict[tuple[object, ...], list[int]] = {}
    for at in sorted(positive.tolist(), key=lambda p: (posted[p], str(entry_ids[p]))):
        found = key(at)
        if found is not None:
            waiting.setdefault(found, []).append(at)
    paired: set[str] = set()
    for at in sorted(negative.tolist(), key=lambda p: (posted[p], str(entry_ids[p]))):
        found = key(at)
        options = [p for p in waiting.get(found, []) if _same_card(at, p, brand, last4)] if found else []
        if not options:
            continue
        before = [p for p in options if posted[p] <= posted[at]]
        leg = (before or options)[0]
        waiting[found].remove(leg)  # type: ignore[index]
        paired |= {str(entry_ids[leg]), str(entry_ids[at])}
    return paired


def _same_card(one: int, other: int, brand: np.ndarray, last4: np.ndarray) -> bool:
    """No card key both entries know differs."""
    for values in (brand, last4):
        if values[one] is not None and values[other] is not None and values[one] != values[other]:
            return False
    return True
