"""Sensors that keep Dagster in step with the PMS tables."""

import dagster as dg

from recon_pipeline.defs.partitions import PROPERTY_DIMENSION
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.keys import validate_property_id
from recon_pipeline.ledger.queries import list_properties


def new_property_partitions(known: set[str], in_table: list[str]) -> tuple[list[str], list[str]]:
    """Properties to add as partitions, and ids rejected because they are unsafe as partition keys."""
    to_add, rejected = [], []
    for property_id in in_table:
        if property_id in known:
            continue
        try:
            to_add.append(validate_property_id(property_id))
        except ValueError:
            rejected.append(property_id)
    return to_add, rejected


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def property_partitions_sensor(
    context: dg.SensorEvaluationContext, recon_db: ReconDatabase
) -> dg.SensorResult:
    """Add every property of the ``properties`` table as a partition of the property dimension."""
    with recon_db.engine().connect() as connection:
        in_table = [row.property_id for row in list_properties(connection)]
    known = set(context.instance.get_dynamic_partitions(PROPERTY_DIMENSION))
    to_add, rejected = new_property_partitions(known, in_table)
    for property_id in rejected:
        context.log.warning(f"property_id {property_id!r} is not a safe partition key; skipped")
    requests = [dg.AddDynamicPartitionsRequest(PROPERTY_DIMENSION, to_add)] if to_add else []
    return dg.SensorResult(
        dynamic_partitions_requests=requests, skip_reason=None if to_add else "no new properties"
    )
