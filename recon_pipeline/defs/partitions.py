"""Partitions: property (dynamic, filled from the properties table) × night (daily).

The night dimension is a calendar date; each property turns it into its own UTC window
(``recon_pipeline.nights``). Its first date is ``RECON_FIRST_NIGHT`` (default 2026-01-01): Dagster
advises under ~100,000 partitions per asset, and properties × nights grows by 365 per property a year,
so move the start forward as history is retired.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from recon_pipeline.config import night_from_env
from recon_pipeline.keys import parse_night, validate_property_id

PROPERTY_DIMENSION = "property"
NIGHT_DIMENSION = "night"
DEFAULT_FIRST_NIGHT = "2026-01-01"


def first_night() -> str:
    """The first night partition, validated (a ConfigError naming RECON_FIRST_NIGHT)."""
    return night_from_env("RECON_FIRST_NIGHT", DEFAULT_FIRST_NIGHT)


property_partitions = dg.DynamicPartitionsDefinition(name=PROPERTY_DIMENSION)
# end_offset=1: a property east of UTC closes its night before UTC's day ends.
night_dates = dg.DailyPartitionsDefinition(start_date=first_night(), end_offset=1)
property_night_partitions = dg.MultiPartitionsDefinition(
    {PROPERTY_DIMENSION: property_partitions, NIGHT_DIMENSION: night_dates}
)


@dataclass(frozen=True)
class PropertyNight:
    """The two halves of a partition key, validated."""

    property_id: str
    night: str

    @property
    def partition_key(self) -> dg.MultiPartitionKey:
        return dg.MultiPartitionKey({PROPERTY_DIMENSION: self.property_id, NIGHT_DIMENSION: self.night})


def property_night(partition_key: str) -> PropertyNight:
    """Parse a partition key (``MultiPartitionKey`` or its ``night|property`` string form)."""
    keys = property_night_partitions.get_partition_key_from_str(str(partition_key)).keys_by_dimension
    night = keys[NIGHT_DIMENSION]
    parse_night(night)
    return PropertyNight(validate_property_id(keys[PROPERTY_DIMENSION]), night)
