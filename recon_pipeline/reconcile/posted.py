"""A property-night's posted adjustments folded into its ledger frame before the diff (pure).

The PMS books every correction it was sent as an entry of kind ``adjustment`` (``postings/``), posted
when it was posted, often days after the night; the diff leaves such entries out of matching and totals.
A finding is about a *movement* (a payment booked for the wrong amount, a refund nobody booked), so once
its correction is posted the correction is credited to the movement it corrects, and the next
reconciliation of the night sees the movement as corrected and clears the finding:

- ``post_missing_<k>``: the adjustment entry stands as the missing entry of kind ``<k>`` for the
  provider record, in the night (so the record is matched);
- ``correct_amount_<k>`` / ``correct_fx_<k>``: its amount is added to the entry of kind ``<k>`` for the
  record in the adjustment's currency (the figure the finding was about), and the adjustment entry drops;
- ``reverse_unmatched_<k>`` / ``reverse_duplicate_<k>``: the reversed entry and the reversal cancel out,
  and both drop.

An adjustment whose entry the PMS does not hold (yet) changes nothing: its finding stays true.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from recon_pipeline.ledger.records import LEDGER_MATCH_KEY_COLUMNS, LEDGER_RECORD_COLUMNS
from recon_pipeline.money import upper_currency
from recon_pipeline.reconcile.adjustments import ADJUSTMENT_POLICY

POST_MISSING: Final = "post_missing"
CORRECTIONS: Final = ("correct_amount", "correct_fx")
REVERSALS: Final = ("reverse_unmatched", "reverse_duplicate")
_ACTIONS: Final = tuple(sorted({action for action, *_ in ADJUSTMENT_POLICY.values()}, key=len, reverse=True))


@dataclass(frozen=True)
class PostedAdjustment:
    """A ``posted`` adjustment of the night and its entry in ``ledger_entries`` (a row as read)."""

    kind: str  # <action>_<record kind>, as ADJUSTMENT_POLICY names it
    provider_record_id: str | None
    ledger_entry_id: str | None
    amount_minor: int
    currency: str
    entry: Mapping[str, Any]

    @classmethod
    def of(cls, adjustment: Mapping[Any, Any], entry: Mapping[str, Any]) -> PostedAdjustment:
        """``adjustment`` (an ``adjustments`` row, or a proposal as planned: the same columns) as posted,
        with ``entry``, the PMS's ledger row of it: the one place the row's columns are picked."""
        return cls(
            adjustment["kind"],
            adjustment["provider_record_id"],
            adjustment["ledger_entry_id"],
            adjustment["amount_minor"],
            adjustment["currency"],
            entry,
        )

    @property
    def action(self) -> tuple[str, str]:
        """(action, record kind) of :attr:`kind`; ValueError naming a kind no policy makes."""
        for action in _ACTIONS:
            if self.kind.startswith(f"{action}_"):
                return action, self.kind.removeprefix(f"{action}_")
        raise ValueError(f"adjustment kind {self.kind!r} names no action of the adjustment policy")


def fold_posted_adjustments(ledger: pd.DataFrame, posted: Sequence[PostedAdjustment]) -> pd.DataFrame:
    """``ledger`` (a ledger-record frame of the night, with its adjacent nights') with ``posted`` credited
    to the entries they correct (see the module docstring); ``ledger`` itself when nothing was posted."""
    if not posted:
        return ledger
    actions = [adjustment.action for adjustment in posted]
    dropped = {str(adjustment.entry["entry_id"]) for adjustment in posted} | {
        str(adjustment.ledger_entry_id)
        for adjustment, (action, _) in zip(posted, actions, strict=True)
        if action in REVERSALS
    }
    kept = ledger[~ledger["entry_id"].isin(dropped)]
    standing = [
        _standing_entry(adjustment, kind)
        for adjustment, (action, kind) in zip(posted, actions, strict=True)
        if action == POST_MISSING
    ]
    frame = pd.concat([kept, _frame(standing)], ignore_index=True) if standing else kept
    frame = frame.reset_index(drop=True)
    amounts = frame["amount_minor"].to_numpy(dtype="int64", copy=True)
    for adjustment, (action, kind) in zip(posted, actions, strict=True):
        if action in CORRECTIONS:
            corrected = (
                (frame["kind"] == kind)
                & (frame["provider_record_id"] == adjustment.provider_record_id)
                & (frame["currency"] == upper_currency(adjustment.currency))
            ).to_numpy(dtype=bool)
            if corrected.any():  # the first of them: the one a duplicate group is compared by
                amounts[corrected.argmax()] += int(adjustment.entry["amount_minor"])
    return frame.assign(amount_minor=amounts)


def _standing_entry(adjustment: PostedAdjustment, kind: str) -> dict[str, Any]:
    """The adjustment's entry as the ledger entry of kind ``kind`` it posted, for the provider record
    the finding named (the adjustment's id, as the diff keys the record) and in the night."""
    return {
        **{name: adjustment.entry.get(name) for name in LEDGER_MATCH_KEY_COLUMNS},  # null if never read
        **{
            name: adjustment.entry[name]
            for name in LEDGER_RECORD_COLUMNS
            if name != "in_night" and name not in LEDGER_MATCH_KEY_COLUMNS
        },
        "provider_record_id": adjustment.provider_record_id,
        "kind": kind,
        "in_night": True,
    }


def _frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=list(LEDGER_RECORD_COLUMNS))
    frame["currency"] = frame["currency"].map(upper_currency)
    frame["posted_at"] = pd.to_datetime(frame["posted_at"], utc=True)
    return frame.astype(LEDGER_RECORD_COLUMNS)
