"""The property-partitions sensor, evaluated against a real instance and a real database."""

from __future__ import annotations

import dagster as dg
from recon_pipeline.defs.sensors import property_partitions_sensor
from sqlalchemy import insert

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import properties
from recon_pipeline.defs.partitions import PROPERTY_DIMENSION
from recon_pipeline.defs.resources import ReconDatabase


def add_property(database_url: str, property_id: str) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            [
                {
                    "property_id": property_id,
                    "name": property_id,
                    "timezone": "UTC",
                    "currency": "EUR",
                    "night_cutoff": "00:00",
                }
            ],
        )


def evaluate(instance: dg.DagsterInstance, database_url: str) -> dg.SensorResult:
    context = dg.build_sensor_context(
        instance=instance, resources={"recon_db": ReconDatabase(database_url=database_url)}
    )
    result = property_partitions_sensor(context)
    assert isinstance(result, dg.SensorResult)
    for request in result.dynamic_partitions_requests or []:
        assert isinstance(request, dg.AddDynamicPartitionsRequest)
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def test_new_properties_become_partitions_once_and_unsafe_ids_are_skipped(database_url: str) -> None:
    add_property(database_url, "p-lisbon")
    add_property(database_url, "bad|id")
    with dg.instance_for_test() as instance:
        first = evaluate(instance, database_url)
        assert [list(r.partition_keys) for r in first.dynamic_partitions_requests or []] == [["p-lisbon"]]
        assert instance.get_dynamic_partitions(PROPERTY_DIMENSION) == ["p-lisbon"]
        assert not evaluate(instance, database_url).dynamic_partitions_requests
        add_property(database_url, "p-kyoto")
        evaluate(instance, database_url)
        assert sorted(instance.get_dynamic_partitions(PROPERTY_DIMENSION)) == ["p-kyoto", "p-lisbon"]
