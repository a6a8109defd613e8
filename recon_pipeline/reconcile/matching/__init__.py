"""Matching beyond the provider's id, before the diff (pure: no database, Dagster or provider)."""

from __future__ import annotations

from recon_pipeline.reconcile.matching.columns import MATCH_COLUMNS
from recon_pipeline.reconcile.matching.known import KnownMatch

__all__ = ["MATCH_COLUMNS", "KnownMatch"]
