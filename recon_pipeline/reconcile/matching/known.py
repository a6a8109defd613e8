"""A match decided before this run (pure): what the matcher is told so that a person's decision, and a
neighbouring night's match, hold in tonight's run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnownMatch:
    """A match decided before this run: a person's, or an earlier night's."""

    provider_record_ids: tuple[str, ...]
    ledger_entry_ids: tuple[str, ...]
    kind: str
    rule: str  # "person" (confirmed or paired by hand) or the rule it was found by
    confirmed: bool = True  # False: a person rejected this pairing; never proposed again
