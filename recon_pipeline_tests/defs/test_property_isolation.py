"""One bad ``properties`` row fails that property alone, with an error naming it: in the nightly
schedule's tick, the SLO check, and a run of a batch that names it (the batch's other properties are
reconciled and committed first; none gets another's findings)."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import Engine, Table, insert, select, update

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments, discrepancies, properties
from recon_pipeline.defs.batches import PROPERTIES_TAG, batch_properties
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.defs.schedules import nightly_reconciliation_schedule
from recon_pipeline.nights import last_closed_night
from recon_pipeline.properties import InvalidPropertyError, PropertyRow
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.storage.night_outcomes import (
    FAILED,
    SUCCEEDED,
    PropertyOutcome,
    load_outcomes,
    record_outcomes,
)
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, asset_metadata, seeded

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
        (
            PropertyRow("p", "P", "UTC", "EUR", "00:00", None, -1),
            "fx_tolerance_bps must be whole basis points",
        ),
        (PropertyRow("p", "P", "UTC", "EUR", "00:00", None, 10_001), "from 0 to 10000, not 10001"),
        # SQLite keeps whatever the PMS put in an INTEGER column
        (PropertyRow("p", "P", "UTC", "EUR", "00:00", None, "5"), "from 0 to 10000, not '5'"),  # type: ignore[arg-type]
    ],
)
def test_a_properties_row_is_validated_in_one_place(row: PropertyRow, problem: str) -> None:
    with pytest.raises(InvalidPropertyError) as raised:
        row.validated()
    assert str(raised.value).startswith(f"property '{row.property_id}' is invalid: ")
    assert problem in str(raised.value) and raised.value.property_id == row.property_id


def test_a_valid_row_has_its_currency_upper_cased() -> None:
    assert PropertyRow("p", "P", "Europe/Lisbon", "eur", "04:30", None).validated().currency == "EUR"


def test_a_row_without_an_fx_tolerance_has_a_tolerance_of_zero() -> None:
    assert PropertyRow("p", "P", "UTC", "EUR", "00:00", None).validated().fx_tolerance == 0
    assert PropertyRow("p", "P", "UTC", "EUR", "00:00", None, 10_000).validated().fx_tolerance == 10_000


def tick(database_url: str, instance: dg.DagsterInstance) -> tuple[list[dg.RunRequest], list[str]]:
    """The nightly schedule's tick at TICK: its run requests, and the errors it logged."""
    context = dg.build_schedule_context(
        instance=instance,
        scheduled_execution_time=TICK,
        resources={"recon_db": ReconDatabase(database_url=database_url)},
    )
    errors = logged_errors(context)
    result = nightly_reconciliation_schedule(context)
    assert isinstance(result, list)
    return result, errors


def requested(result: list[dg.RunRequest]) -> set[tuple[str, str]]:
    """(night, property) of every property a tick's batch runs name."""
    pairs = set()
    for request in result:
        members = batch_properties(request.run_config)
        assert request.tags[PROPERTIES_TAG] == str(len(members)) and members
        pairs |= {(str(request.partition_key), property_id) for property_id in members}
    return pairs


def test_the_nightly_tick_skips_a_bad_property_by_name_requests_every_other_and_the_fixed_one(
    database_url: str,
) -> None:
    """The bad rows are in no batch and each is named in the tick's log; once a row is fixed, the next
    tick puts it in a batch (what the property-partition sensor used to add)."""
    rows = [*DEMO_PROPERTIES, *BAD_PROPERTIES]
    engine = seeded_properties(database_url, rows)
    with dg.instance_for_test() as instance:
        result, errors = tick(database_url, instance)
        assert {p for _night, p in requested(result)} == {p.property_id for p in DEMO_PROPERTIES}
        assert ("2026-10-31", "denver-lodge") in requested(result)  # its night closed at TICK
        assert_each_named(errors, BAD_PROPERTIES)
        with engine.begin() as connection:
            connection.execute(
                update(properties).where(properties.c.property_id == "mars-base").values(timezone="UTC")
            )
        fixed, still = tick(database_url, instance)
    assert {p for _night, p in requested(fixed)} == {p.property_id for p in DEMO_PROPERTIES} | {"mars-base"}
    assert_each_named(still, BAD_PROPERTIES[1:])
    engine.dispose()


def test_a_tick_with_only_bad_properties_skips_naming_them(database_url: str) -> None:
    seeded_properties(database_url, [MARS])
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=TICK,
            resources={"recon_db": ReconDatabase(database_url=database_url)},
        )
        result = nightly_reconciliation_schedule(context)
    assert isinstance(result, dg.SkipReason)
    assert "'mars-base'" in str(result.skip_message) and "'Mars/Olympus'" in str(result.skip_message)


@pytest.mark.slow  # Dagster runs
def test_the_slo_check_fails_naming_a_bad_property_and_still_judges_the_others(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = seeded_properties(database_url, [*DEMO_PROPERTIES, *BAD_PROPERTIES])
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    from recon_pipeline.definitions import build_definitions

    late, *on_time = DEMO_PROPERTIES
    now = datetime.now(UTC)
    with engine.begin() as connection:
        record_outcomes(
            connection,
            [
                PropertyOutcome(
                    prop.property_id,
                    last_closed_night(now, prop.timezone, prop.night_cutoff).isoformat(),
                    "a-run",
                    None,
                    SUCCEEDED,
                    now,
                    now,
                )
                for prop in on_time
            ],
        )
    engine.dispose()
    with dg.instance_for_test() as instance:
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


def batch_failure(result: dg.ExecuteInProcessResult) -> str:
    """The one step failure's message (the batch step's), asserted to be one line. A bad row fails every
    attempt, so the step is not retried (a retry would reconcile the whole batch again for nothing)."""
    assert not any(event.is_step_up_for_retry for event in result.all_events)
    [failure] = [event.step_failure_data.error for event in result.all_events if event.is_step_failure]
    assert failure is not None
    message = failure.message.strip()
    assert "\n" not in message
    return message


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
    problem = f"property '{bad}' is invalid: night_cutoff must be 'HH:MM' from 00:00 to 23:59, not '25:99'"
    assert f"1 of 1 properties failed for night {NIGHT.isoformat()}; first: {problem}" in batch_failure(
        result
    )
    with seeded_pipeline.engine.connect() as connection:
        [outcome] = load_outcomes(connection, NIGHT.isoformat()).values()
    assert (outcome.property_id, outcome.status, outcome.error) == (bad, FAILED, problem)
    assert seeded_pipeline.materialize(good).success


def rows_except(pipeline: SeededPipeline, table: Table, property_id: str) -> list[tuple[Any, ...]]:
    """Every row of ``table`` but ``property_id``'s, every column."""
    with pipeline.engine.connect() as connection:
        query = select(table).where(table.c.property_id != property_id).order_by(*table.primary_key.columns)
        return [tuple(row) for row in connection.execute(query)]


def test_a_batch_mixing_a_bad_row_and_good_ones_commits_the_good_then_fails_naming_the_bad(
    sqlite_url: str,
) -> None:
    """A batch of four properties, one of them (``porto-annex``) with a bad row and on the platform
    account with Lisbon, in Lisbon's night window (so the good one's pull is the account's shared window):
    the three good ones are reconciled and committed, each with exactly its own findings; the run fails
    naming the bad one, which gets no finding and no adjustment. Fixed, it reconciles alone and the
    others' rows stay as they were."""
    lisbon = next(p for p in DEMO_PROPERTIES if p.provider_account is None)
    annex = replace(lisbon, property_id="porto-annex", name="Porto Annex")
    with seeded(sqlite_url, properties=(*DEMO_PROPERTIES, annex)) as pipeline:
        good = [p.property_id for p in DEMO_PROPERTIES]
        with pipeline.engine.begin() as connection:
            connection.execute(
                update(properties)
                .where(properties.c.property_id == annex.property_id)
                .values(timezone="Mars")
            )
        result = pipeline.materialize(annex.property_id, *good, raise_on_error=False)
        assert not result.success
        message = batch_failure(result)
        assert f"1 of 4 properties failed for night {NIGHT.isoformat()}" in message
        assert "property 'porto-annex' is invalid: unknown IANA timezone 'Mars'" in message
        for property_id in good:
            assert pipeline.planted(property_id) and pipeline.found(property_id) == pipeline.planted(
                property_id
            )
        assert pipeline.found(annex.property_id) == {}
        with pipeline.engine.connect() as connection:
            outcomes = load_outcomes(connection, NIGHT.isoformat())
            annex_adjustments = connection.execute(
                select(adjustments.c.adjustment_id).where(adjustments.c.property_id == annex.property_id)
            ).all()
        assert annex_adjustments == []
        assert {p: o.status for p, o in outcomes.items()} == {
            **{p: SUCCEEDED for p in good},
            annex.property_id: FAILED,
        }
        for property_id in good:
            outcome = outcomes[property_id]
            assert outcome.run_id == result.run_id and outcome.error is None
            assert outcome.findings == sum(pipeline.planted(property_id).values())
        committed = [
            rows_except(pipeline, table, annex.property_id) for table in (adjustments, discrepancies)
        ]

        with pipeline.engine.begin() as connection:
            connection.execute(
                update(properties)
                .where(properties.c.property_id == annex.property_id)
                .values(timezone=lisbon.timezone)
            )
        fixed = pipeline.materialize(annex.property_id)
        assert fixed.success and asset_metadata(fixed, "discrepancy_report")["properties"] == 1
        assert pipeline.found(annex.property_id) == pipeline.planted(annex.property_id)
        assert [
            rows_except(pipeline, table, annex.property_id) for table in (adjustments, discrepancies)
        ] == (committed)
        with pipeline.engine.connect() as connection:
            assert (
                load_outcomes(connection, NIGHT.isoformat(), [annex.property_id])[annex.property_id].status
                == SUCCEEDED
            )


def test_a_recon_command_on_the_bad_property_fails_in_one_line_naming_it(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from recon_pipeline.cli import main

    seeded_properties(database_url, [DEMO_PROPERTIES[0], MARS])
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    assert main(["findings", "threshold", DEMO_PROPERTIES[0].property_id]) == 0
    capsys.readouterr()
    assert main(["findings", "threshold", "mars-base"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "error: property 'mars-base' is invalid: unknown IANA timezone 'Mars/Olympus'\n"
