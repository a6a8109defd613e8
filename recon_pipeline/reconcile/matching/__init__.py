"""The matcher: pairs provider records with ledger entries that do not name them, before the diff.

Pure (no database, Dagster or provider): frames in, frames out. docs/matching.md describes the tiers, the
rules every tier obeys, the scores and the threshold, suggestions and ambiguities, and decided matches.
"""

from recon_pipeline.reconcile.matching.engine import NightToMatch, match_night, match_nights
from recon_pipeline.reconcile.matching.outcome import (
    MATCH_COLUMNS,
    MATCH_DTYPES,
    MatchOutcome,
    empty_matches,
    match_frame,
)
from recon_pipeline.reconcile.matching.policy import (
    CONFIRMED,
    EXACT_ID,
    MATCHED,
    PERSON,
    RULES,
    SCORES,
    SUGGESTED,
    TIERS,
    KnownMatch,
    MatchPolicy,
    match_key,
)
from recon_pipeline.reconcile.matching.sides import with_groups

__all__ = [
    "CONFIRMED",
    "EXACT_ID",
    "MATCHED",
    "MATCH_COLUMNS",
    "MATCH_DTYPES",
    "PERSON",
    "RULES",
    "SCORES",
    "SUGGESTED",
    "TIERS",
    "KnownMatch",
    "MatchOutcome",
    "MatchPolicy",
    "NightToMatch",
    "empty_matches",
    "match_frame",
    "match_key",
    "match_night",
    "match_nights",
    "with_groups",
]
