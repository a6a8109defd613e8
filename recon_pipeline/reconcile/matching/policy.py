"""What a property asks of the matcher (tiers, threshold, window, split bound), and what was decided before.

A policy is data (``properties.match_policy``, JSON) so that a property whose PMS is known to name the
provider's id in its reference text, or never to record a booking, can order or drop tiers without code.
Each rule's score is fixed here, in one table, so that docs/matching.md, the sentences and the tests read
the same figures.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

# The tiers after the exact id, in their default order (docs/matching.md says what each one pairs).
REFERENCE: Final = "reference"
BOOKING_AMOUNT: Final = "booking_amount"
STRONG_KEYS: Final = "strong_keys"
SPLIT: Final = "split"
CARD_WINDOW: Final = "card_window"
# SPLIT before STRONG_KEYS: a group's charge posted across its bookings would otherwise pair, by its card,
# with the one posting of its own booking as an amount mismatch.
TIERS: Final = (REFERENCE, BOOKING_AMOUNT, SPLIT, STRONG_KEYS, CARD_WINDOW)

EXACT_ID: Final = "exact_id"  # the diff's own match on (provider_record_id, kind): not the matcher's
PERSON: Final = "person"  # a person confirmed or paired by hand (KnownMatch.rule)
RULES: Final = (EXACT_ID, PERSON, *TIERS)

# Match statuses (MATCH_COLUMNS "status").
MATCHED: Final = "matched"
SUGGESTED: Final = "suggested"
CONFIRMED: Final = "confirmed"

# How sure each way of pairing is, from 0 to 1; a pairing scoring below the policy's threshold is only a
# suggestion. A known key that disagrees (card or approval code both sides know, and differ) caps any
# automatic pairing at CONFLICT_SCORE: a suggestion under the default threshold.
SCORES: Final[dict[str, float]] = {
    EXACT_ID: 1.0,
    PERSON: 1.0,
    REFERENCE: 0.99,  # the entry's reference names the record's id
    "strong_keys/approval": 0.97,  # the issuer's approval code agrees (card agrees or is unknown)
    BOOKING_AMOUNT: 0.95,  # same booking, amount and currency, unique both ways
    "strong_keys/card_booking": 0.9,  # same booking and card (brand + last four), amounts may differ
    SPLIT: 0.9,  # N entries summing exactly to one record, or one entry to N records: of one booking, of one
    # group's bookings, or (one record) of the postings carrying its card and approval code
    CARD_WINDOW: 0.85,  # amount + card within the time window, no booking to compare
    "card_window/amount_only": 0.5,  # amount within the time window, card unknown on a side
}
CONFLICT_SCORE: Final = 0.6

_MAX_SPLIT_BOUND: Final = 12  # 2^12 subsets a side per booking: still a few milliseconds
_POLICY_KEYS: Final = ("tiers", "threshold", "window_minutes", "max_split")


@dataclass(frozen=True)
class MatchPolicy:
    """The matcher's settings for one property; ``parse`` reads them from ``properties.match_policy``."""

    tiers: tuple[str, ...] = TIERS
    threshold: float = 0.8  # score >= threshold: a match; below: a suggestion
    window: timedelta = timedelta(hours=3)  # card_window's time window
    max_split: int = 8  # records a side per booking in the split search

    def __post_init__(self) -> None:
        unknown = [tier for tier in self.tiers if tier not in TIERS]
        if unknown:
            raise ValueError(f"unknown match tiers {unknown}: use some of {', '.join(TIERS)}")
        if len(set(self.tiers)) != len(self.tiers):
            raise ValueError(f"match tiers {list(self.tiers)} name a tier twice")
        if not (isinstance(self.threshold, int | float) and 0 < self.threshold <= 1):
            raise ValueError(
                f"match threshold must be a number above 0 and at most 1, not {self.threshold!r}"
            )
        if self.window < timedelta(0):
            raise ValueError(f"match window must not be negative, not {self.window}")
        if not 2 <= self.max_split <= _MAX_SPLIT_BOUND:
            raise ValueError(f"max_split must be from 2 to {_MAX_SPLIT_BOUND}, not {self.max_split!r}")

    @classmethod
    def parse(cls, text: str | None) -> MatchPolicy:
        """The policy a property's ``match_policy`` JSON states; null or empty text is the default.

        ``{"tiers": [...], "threshold": 0.8, "window_minutes": 180, "max_split": 8}``, every key optional.
        ValueError in one line naming what is wrong, so that a property row is refused when it is stored.
        """
        if text is None or not text.strip():
            return cls()
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"match_policy is not JSON: {error.msg} at character {error.pos}") from None
        if not isinstance(data, dict):
            raise ValueError(f"match_policy must be a JSON object, not {type(data).__name__}")
        unknown = sorted(set(data) - set(_POLICY_KEYS))
        if unknown:
            raise ValueError(
                f"match_policy has unknown keys {unknown}: use some of {', '.join(_POLICY_KEYS)}"
            )
        settings: dict[str, Any] = {}
        if "tiers" in data:
            tiers = data["tiers"]
            if not isinstance(tiers, list) or not all(isinstance(tier, str) for tier in tiers):
                raise ValueError(f"match_policy tiers must be a list of tier names, not {tiers!r}")
            settings["tiers"] = tuple(tiers)
        if "threshold" in data:
            settings["threshold"] = _number(data["threshold"], "threshold")
        if "window_minutes" in data:
            minutes = _number(data["window_minutes"], "window_minutes")
            settings["window"] = timedelta(minutes=minutes) if minutes >= 0 else timedelta(minutes=-1)
        if "max_split" in data:
            bound = data["max_split"]
            if isinstance(bound, bool) or not isinstance(bound, int):
                raise ValueError(f"match_policy max_split must be a whole number, not {bound!r}")
            settings["max_split"] = bound
        return cls(**settings)

    def as_json(self) -> str:
        """The policy as ``parse`` reads it (for the CLI and the docs)."""
        return json.dumps(
            {
                "tiers": list(self.tiers),
                "threshold": self.threshold,
                "window_minutes": self.window / timedelta(minutes=1),
                "max_split": self.max_split,
            }
        )


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"match_policy {name} must be a number, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class KnownMatch:
    """A match decided before this run: a person's, or an earlier night's.

    Confirmed ones are applied first, verbatim, even when a record is not in tonight's pull; a rejected
    one (``confirmed`` False) is a pairing no tier proposes again.
    """

    provider_record_ids: tuple[str, ...]
    ledger_entry_ids: tuple[str, ...]
    kind: str
    rule: str  # "person" (confirmed or paired by hand) or the rule it was found by
    confirmed: bool = True  # False: a person rejected this pairing; never proposed again

    def __post_init__(self) -> None:
        if not self.provider_record_ids or not self.ledger_entry_ids:
            raise ValueError("a known match needs at least one provider record and one ledger entry")

    @property
    def match_key(self) -> str:
        return match_key(self.provider_record_ids, self.ledger_entry_ids)


def match_key(record_ids: Any, entry_ids: Any) -> str:
    """``<sorted record ids joined by +>=<sorted entry ids joined by +>``: the same pairing, whatever the
    run or the rule that found it, has the same key."""
    return (
        "+".join(sorted({str(rid) for rid in record_ids}))
        + "="
        + "+".join(sorted({str(eid) for eid in entry_ids}))
    )


def scoped_key(scope: int, key: str) -> str:
    """A match key within one night of a stacked batch (``batch.py``): a rejection of one night bans its
    pairing there only."""
    return f"{scope}|{key}"
