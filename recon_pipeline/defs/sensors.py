"""Sensors that keep Dagster in step with the PMS tables."""

import dagster as dg

from recon_pipeline.defs.partitions import PROPERTY_DIMENSION
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.ledger.queries import list_properties, split_valid_properties


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def property_partitions_sensor(
    context: dg.SensorEvaluationContext, recon_db: ReconDatabase
) -> dg.SensorResult:
    """Add every valid property of the ``properties`` table as a partition of the property dimension.

    Each row is validated alone (``PropertyRow.validated``): a bad one is skipped with an error naming
    it in the tick's log, every other property is still added, and the bad one is added once fixed."""
    with recon_db.engine().connect() as connection:
        valid, invalid = split_valid_properties(list_properties(connection))
    for error in invalid:
        context.log.error(f"skipped: {error}")
    known = set(context.instance.get_dynamic_partitions(PROPERTY_DIMENSION))
    to_add = [row.property_id for row in valid if row.property_id not in known]
    requests = [dg.AddDynamicPartitionsRequest(PROPERTY_DIMENSION, to_add)] if to_add else []
    skipped = "".join(f"; skipped: {error}" for error in invalid)
    return dg.SensorResult(
        dynamic_partitions_requests=requests, skip_reason=None if to_add else f"no new properties{skipped}"
    )
