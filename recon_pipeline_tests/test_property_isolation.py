"""One bad ``properties`` row fails that property alone, with an error naming it: in the nightly
schedule's tick, the partitions sensor, the SLO check, and a run of its own partition."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import dagster as dg
import pytest
from recon_pipeline.defs.sensors import property_partitions_sensor
from sqlalchemy import Engine, insert, update

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import properties
from recon_pipeline.defs.partitions import PROPERTY_DIMENSION, PropertyNight
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.defs.schedules import nightly_reconciliation_schedule
from recon_pipeline.demo.properties import DEMO_PROPERTIES
from recon_pipeline.ledger.queries import InvalidPropertyError, PropertyRow
from recon_pipeline.nights import last_closed_night
from recon_pipeline_tests.pipeline_fixtures import SeededPipeline

MARS = PropertyRow("mars-base", "Mars Base", "Mars/Olympus", "EUR", "00:00", None)
BAD_PROPERTIES = [
    MARS,
    PropertyRow("late-typo", "Typo", "Europe/Lisbon", "EUR", "25:99", None),
    PropertyRow("no-clock", "No clock", "UTC", "EUR", "abc", None),
]
# What each error must name besides the property: the offending value.
OFFENDING = {"mars-base": "'Mars/Olympus'", "late-typo": "'25:99'", "no-clock": "'abc'"}
TICK = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def seeded_properties(database_url: str, rows: list[PropertyRow]) -> Engine:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(insert(properties), [p.row() for p in rows])
    return engine


def logged_errors(context: dg.ScheduleEvaluationContext | dg.SensorEvaluationContext) -> list[str]:
    """Errors logged through ``context.log`` (the tick's log in the UI) from now on."""
    errors: list[str] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: errors.append(record.getMessage())  # type: ignore[method-assign]
    context.log.addHandler(handler)
    return errors


def assert_each_named(errors: list[str], bad: list[PropertyRow]) -> None:
    assert len(errors) == len(bad)
    for prop in bad:
        [error] = [e for e in errors if f"'{prop.property_id}'" in e]
        assert OFFENDING[prop.property_id] in error and "\n" not in error


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (MARS, "unknown IANA timezone 'Mars/Olympus'"),
        (PropertyRow("p", "P", "America", "EUR", "00:00", None), "unknown IANA timezone 'America'"),
        (PropertyRow("p", "P", "localtime", "EUR", "00:00", None), "unknown IANA timezone 'localtime'"),
        (PropertyRow("p", "P", "UTC", "EUR", "24:00", None), "night_cutoff must be 'HH:MM'"),
        (PropertyRow("p", "P", "UTC", "EUR", " 9:00", None), "night_cutoff must be 'HH:MM'"),
        (PropertyRow("p", "P", "UTC", "EURO", "00:00", None), "currency must be a three-letter"),
        (PropertyRow("p|q", "P", "UTC", "EUR", "00:00", None), "invalid property_id"),
    ],
)
def test_a_properties_row_is_validated_in_one_place(row: PropertyRow, problem: str) -> None:
    with pytest.raises(InvalidPropertyError) as raised:
        row.validated()
    assert str(raised.value).startswith(f"property '{row.property_id}' is invalid: ")
    assert problem in str(raised.value) and raised.value.property_id == row.property_id


def test_a_valid_row_has_its_currency_upper_cased() -> None:
    assert PropertyRow("p", "P", "Europe/Lisbon", "eur", "04:30", None).validated().currency == "EUR"


def test_the_nightly_tick_skips_a_bad_property_by_name_and_requests_every_other(database_url: str) -> None:
    rows = [*DEMO_PROPERTIES, *BAD_PROPERTIES]
    seeded_properties(database_url, rows)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PROPERTY_DIMENSION, [p.property_id for p in rows])
        context = dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=TICK,
            resources={"recon_db": ReconDatabase(database_url=database_url)},
        )
        errors = logged_errors(context)
        result = nightly_reconciliation_schedule(context)
    assert isinstance(result, list)
    assert {str(r.partition_key).split("|")[1] for r in result} == {p.property_id for p in DEMO_PROPERTIES}
    assert "2026-10-31|denver-lodge" in {str(r.partition_key) for r in result}  # its night closed at TICK
    assert_each_named(errors, BAD_PROPERTIES)


def test_a_tick_with_only_bad_properties_skips_naming_them(database_url: str) -> None:
    seeded_properties(database_url, [MARS])
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PROPERTY_DIMENSION, [MARS.property_id])
        context = dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=TICK,
            resources={"recon_db": ReconDatabase(database_url=database_url)},
        )
        result = nightly_reconciliation_schedule(context)
    assert isinstance(result, dg.SkipReason)
    assert "'mars-base'" in str(result.skip_message) and "'Mars/Olympus'" in str(result.skip_message)


def test_the_partitions_sensor_skips_a_bad_row_by_name_and_adds_it_once_fixed(database_url: str) -> None:
    engine = seeded_properties(database_url, [DEMO_PROPERTIES[0], *BAD_PROPERTIES])
    with dg.instance_for_test() as instance:
        resources = {"recon_db": ReconDatabase(database_url=database_url)}
        context = dg.build_sensor_context(instance=instance, resources=resources)
        errors = logged_errors(context)
        result = property_partitions_sensor(context)
        requests = result.dynamic_partitions_requests or []
        assert [list(r.partition_keys) for r in requests] == [[DEMO_PROPERTIES[0].property_id]]
        assert_each_named(errors, BAD_PROPERTIES)
        instance.add_dynamic_partitions(PROPERTY_DIMENSION, [DEMO_PROPERTIES[0].property_id])
        again = property_partitions_sensor(dg.build_sensor_context(instance=instance, resources=resources))
        assert "'mars-base'" in str(again.skip_reason) and "'Mars/Olympus'" in str(again.skip_reason)
        with engine.begin() as connection:
            connection.execute(
                update(properties).where(properties.c.property_id == "mars-base").values(timezone="UTC")
            )
        fixed = property_partitions_sensor(dg.build_sensor_context(instance=instance, resources=resources))
    assert [list(r.partition_keys) for r in fixed.dynamic_partitions_requests or []] == [["mars-base"]]


@pytest.mark.slow  # Dagster runs
def test_the_slo_check_fails_naming_a_bad_property_and_still_judges_the_others(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [*DEMO_PROPERTIES, *BAD_PROPERTIES]
    seeded_properties(database_url, rows)
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    from recon_pipeline.definitions import build_definitions

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PROPERTY_DIMENSION, [p.property_id for p in rows])
        late, *on_time = DEMO_PROPERTIES
        for prop in on_time:
            night = last_closed_night(datetime.now(UTC), prop.timezone, prop.night_cutoff)
            key = PropertyNight(prop.property_id, night.isoformat()).partition_key
            instance.report_runless_asset_event(
                dg.AssetMaterialization("discrepancy_report", partition=str(key))
            )
        job = build_definitions().resolve_job_def("slo_checks")
        result = job.execute_in_process(instance=instance, raise_on_error=False)
    [evaluation] = [
        e for e in result.get_asset_check_evaluations() if e.check_name == "previous_night_reconciled"
    ]
    metadata = {key: value.value for key, value in evaluation.metadata.items()}
    assert not evaluation.passed
    assert metadata["properties_judged"] == len(DEMO_PROPERTIES)
    assert str(metadata["late"]).startswith(f"- {late.property_id} ") and "\n" not in str(metadata["late"])
    assert_each_named(str(metadata["invalid_properties"]).split("\n"), BAD_PROPERTIES)


def test_a_run_of_the_bad_property_fails_in_one_line_naming_it_and_the_others_still_reconcile(
    seeded_pipeline: SeededPipeline,
) -> None:
    bad, good = DEMO_PROPERTIES[0].property_id, DEMO_PROPERTIES[1].property_id
    with seeded_pipeline.engine.begin() as connection:
        connection.execute(
            update(properties).where(properties.c.property_id == bad).values(night_cutoff="25:99")
        )
    result = seeded_pipeline.materialize(bad, raise_on_error=False)
    assert not result.success
    failures = [event.step_failure_data.error for event in result.all_events if event.is_step_failure]
    assert failures
    for error in failures:
        while error is not None and error.cause is not None:
            error = error.cause
        assert error is not None
        assert error.message.strip() == (
            f"recon_pipeline.ledger.queries.InvalidPropertyError: property '{bad}' is invalid: "
            "night_cutoff must be 'HH:MM' from 00:00 to 23:59, not '25:99'"
        )
    assert seeded_pipeline.materialize(good).success


def test_a_recon_command_on_the_bad_property_fails_in_one_line_naming_it(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from recon_pipeline.cli import main

    seeded_properties(database_url, [DEMO_PROPERTIES[0], MARS])
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    assert main(["discrepancies", "threshold", DEMO_PROPERTIES[0].property_id]) == 0
    capsys.readouterr()
    assert main(["discrepancies", "threshold", "mars-base"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "error: property 'mars-base' is invalid: unknown IANA timezone 'Mars/Olympus'\n"
