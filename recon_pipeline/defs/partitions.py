"""Partitions: one per night (daily). A run of a night reconciles a batch of properties, named in its
run config (``recon_pipeline/defs/batches.py``), so runs and partitions do not grow with the number of
properties: 2,000 properties × 365 nights is 365 partitions, not 730,000 (Dagster advises under ~100,000
per asset), and a night is a few dozen runs, not one per property.

The night is a calendar date; each property turns it into its own UTC window (``recon_pipeline.nights``).
Its first date is ``RECON_FIRST_NIGHT`` (default 2026-01-01).
"""

from __future__ import annotations

import dagster as dg

from recon_pipeline.config import night_from_env
from recon_pipeline.keys import parse_night

DEFAULT_FIRST_NIGHT = "2026-01-01"


def first_night() -> str:
    """The first night partition, validated (a ConfigError naming RECON_FIRST_NIGHT)."""
    return night_from_env("RECON_FIRST_NIGHT", DEFAULT_FIRST_NIGHT)


# end_offset=1: a property east of UTC closes its night before UTC's day ends.
night_partitions = dg.DailyPartitionsDefinition(start_date=first_night(), end_offset=1)


def partition_night(partition_key: str) -> str:
    """The night of a partition key, validated ('YYYY-MM-DD')."""
    night = str(partition_key)
    parse_night(night)
    return night
