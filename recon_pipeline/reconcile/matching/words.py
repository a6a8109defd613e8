"""The matching rules as an analyst reads them in reports, run metadata and the review desk."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from recon_pipeline.reconcile.matching.policy import (
    BOOKING_AMOUNT,
    CARD_WINDOW,
    EXACT_ID,
    PERSON,
    REFERENCE,
    RULES,
    SPLIT,
    STRONG_KEYS,
)

RULE_WORDS: Final[Mapping[str, str]] = {
    EXACT_ID: "the provider's id",
    PERSON: "a person's decision",
    REFERENCE: "the id in the entry's reference",
    BOOKING_AMOUNT: "booking and amount",
    STRONG_KEYS: "approval code or card",
    SPLIT: "a split folio (sums within a booking or a group)",
    CARD_WINDOW: "card, amount and time",
}
assert set(RULE_WORDS) == set(RULES), "every rule has its words"


def matches_sentence(counts_by_rule: Mapping[str, int]) -> str:
    """``Matched by the provider's id 41, booking and amount 3, split folio 1``: the rules that matched
    something, in the order they are tried; empty when nothing was matched."""
    said = [f"{RULE_WORDS[rule]} {counts_by_rule[rule]}" for rule in RULES if counts_by_rule.get(rule)]
    return f"Matched by {', '.join(said)}" if said else ""
