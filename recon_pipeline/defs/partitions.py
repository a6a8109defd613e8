"""Partitions: one per night (daily). A run of a night reconciles a batch of properties, named in its
run config (``recon_pipeline/defs/batches.py``), so runs and partitions do not grow with the number of
properties: 2,000 properties × 365 nights is 365 partitions, not 730,000 (Dagster advises under ~100,000
per asset), and a night is a few dozen runs, not one per property.

The night is a calendar date; each property turns it into its own UTC window (``recon_pipeline.nights``).
Its first date is ``RECON_FIRST_NIGHT`` (default 2026-01-01); its last is the last night closed anywhere:
a night ends at the earliest at midnight on the first calendar to turn (UTC+14, Kiritimati), so the
partitions follow that calendar and end at its yesterday. No night is offered (in the UI's pickers, to
``recon reconcile-night``) before some property could have closed it.
"""

from __future__ import annotations

import dagster as dg

from recon_pipeline.config import night_from_env
from recon_pipeline.keys import parse_night

DEFAULT_FIRST_NIGHT = "2026-01-01"


def first_night() -> str:
    """The first night partition, validated (a ConfigError naming RECON_FIRST_NIGHT)."""
    return night_from_env("RECON_FIRST_NIGHT", DEFAULT_FIRST_NIGHT)


# The first calendar to reach a date's end: no property's night (cutoff 00:00 or later) closes sooner.
EARLIEST_CALENDAR = "Pacific/Kiritimati"
night_partitions = dg.DailyPartitionsDefinition(start_date=first_night(), timezone=EARLIEST_CALENDAR)


def partition_night(partition_key: str) -> str:
    """The night of a partition key, validated ('YYYY-MM-DD')."""
    night = str(partition_key)
    parse_night(night)
    return night
