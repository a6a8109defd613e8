"""SLO checks: which night is judged per timezone and cutoff, one bad property failing alone, and the age of
the oldest pending event."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import dagster as dg
import pytest
from sqlalchemy import Engine, insert, update

from recon_pipeline.batches.nightly import late_night, previous_nights
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import payment_event_processing, properties
from recon_pipeline.events.store import store_event
from recon_pipeline.nights import last_closed_night
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.events import ProviderEvent
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.storage.night_outcomes import FAILED, SUCCEEDED, PropertyOutcome, record_outcomes

LISBON = PropertyRow("lisbon", "L", "Europe/Lisbon", "EUR", "00:00", None)
TOKYO = PropertyRow("tokyo", "T", "Asia/Tokyo", "JPY", "00:00", None)
LATE_CUTOFF = PropertyRow("late", "Late cutoff", "UTC", "EUR", "10:00", None)
NINE = time(9, 0)


def late(prop: PropertyRow, now: datetime, reconciled: set[date]) -> date | None:
    [previous] = previous_nights([prop], now, NINE)
    return late_night(previous, now, reconciled.__contains__)


@pytest.mark.parametrize(
    ("prop", "now", "reconciled", "late_on"),
    [
        # 08:59 in Lisbon: Dec 1 closed at midnight, its deadline is 09:00; Nov 30 must be done.
        (LISBON, datetime(2026, 12, 2, 8, 59, tzinfo=UTC), {date(2026, 11, 30)}, None),
        (LISBON, datetime(2026, 12, 2, 8, 59, tzinfo=UTC), set(), date(2026, 11, 30)),
        # Right after a run of the night just closed (what `recon demo` does): on time, not red.
        (LISBON, datetime(2026, 12, 2, 5, 25, tzinfo=UTC), {date(2026, 12, 1)}, None),
        (LISBON, datetime(2026, 12, 2, 9, 0, tzinfo=UTC), {date(2026, 11, 30)}, date(2026, 12, 1)),
        # Summer time: 09:00 in Lisbon is 08:00 UTC.
        (LISBON, datetime(2026, 7, 2, 8, 0, tzinfo=UTC), {date(2026, 6, 30)}, date(2026, 7, 1)),
        (LISBON, datetime(2026, 7, 2, 7, 59, tzinfo=UTC), {date(2026, 6, 30)}, None),
        # 23:59 UTC is 08:59 next day in Tokyo: Dec 2 closed, not due for a minute; Dec 1 is.
        (TOKYO, datetime(2026, 12, 2, 23, 59, tzinfo=UTC), {date(2026, 12, 1)}, None),
        (TOKYO, datetime(2026, 12, 3, 0, 0, tzinfo=UTC), {date(2026, 12, 1)}, date(2026, 12, 2)),
        # A cutoff after the close: Dec 1 ends Dec 2 10:00 and is due the next morning, Dec 3 09:00.
        (LATE_CUTOFF, datetime(2026, 12, 2, 10, 0, tzinfo=UTC), {date(2026, 11, 30)}, None),
        (LATE_CUTOFF, datetime(2026, 12, 3, 8, 59, tzinfo=UTC), {date(2026, 11, 30)}, None),
        (LATE_CUTOFF, datetime(2026, 12, 3, 9, 0, tzinfo=UTC), {date(2026, 11, 30)}, date(2026, 12, 1)),
    ],
)
def test_the_night_judged_is_the_one_the_schedule_closed_last(
    prop: PropertyRow, now: datetime, reconciled: set[date], late_on: date | None
) -> None:
    assert late(prop, now, reconciled) == late_on


def run_checks(
    database_url: str, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> dict[str, bool]:
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    from recon_pipeline.definitions import build_definitions

    result = build_definitions().resolve_job_def("slo_checks").execute_in_process(instance=instance)
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


@pytest.mark.slow  # Dagster runs
def test_checks_fail_until_due_nights_are_reconciled_and_events_processed(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    now = datetime.now(UTC)
    with engine.begin() as connection:
        connection.execute(insert(properties), [p.row() for p in DEMO_PROPERTIES])
        event = ProviderEvent("evt_old", "payment_intent.succeeded", 1, "pi_1", None)
        store_event(connection, "stripe", event, "{}", now - timedelta(hours=1))
    rows = list(DEMO_PROPERTIES)
    with dg.instance_for_test() as instance:
        assert run_checks(sqlite_url, instance, monkeypatch) == {
            "previous_night_reconciled": False,
            "oldest_pending_event_age": False,
            "oldest_open_posting_age": True,  # the outbox is empty
        }
        for prop in rows:  # a failed reconciliation of the night is not one
            night = last_closed_night(datetime.now(UTC), prop.timezone, prop.night_cutoff)
            reconciled(engine, prop.property_id, night, FAILED)
        assert run_checks(sqlite_url, instance, monkeypatch)["previous_night_reconciled"] is False
        for prop in rows:
            night = last_closed_night(datetime.now(UTC), prop.timezone, prop.night_cutoff)
            reconciled(engine, prop.property_id, night)
        with engine.begin() as connection:
            connection.execute(update(payment_event_processing).values(status="processed"))
        assert run_checks(sqlite_url, instance, monkeypatch) == {
            "previous_night_reconciled": True,
            "oldest_pending_event_age": True,
            "oldest_open_posting_age": True,
        }


def reconciled(engine: Engine, property_id: str, night: date, status: str = SUCCEEDED) -> None:
    """The property-night's latest reconciliation, as a batch run records it (``night_reconciliations``)."""
    now = datetime.now(UTC)
    error = None if status == SUCCEEDED else f"property {property_id} night {night}: RuntimeError: boom"
    with engine.begin() as connection:
        record_outcomes(
            connection,
            [PropertyOutcome(property_id, night.isoformat(), "run-1", None, status, now, now, error)],
        )


def noon_zone(now: datetime) -> str:
    """A fixed-offset IANA zone where ``now`` is about noon, so an hour either side stays on one date."""
    offset = 12 - now.hour
    return "Etc/GMT" if offset == 0 else f"Etc/GMT{'-' if offset > 0 else '+'}{abs(offset)}"


@pytest.mark.slow  # a Dagster run
def test_a_run_of_the_night_just_closed_passes_before_the_morning_close(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's situation: the night closed an hour ago, its run succeeded, the close is an hour away."""
    now = datetime.now(UTC)
    zone = noon_zone(now)
    local = now.astimezone(ZoneInfo(zone))
    cutoff, close = (
        (local - timedelta(hours=1)).strftime("%H:%M"),
        (local + timedelta(hours=1)).strftime("%H:%M"),
    )
    monkeypatch.setenv("RECON_MORNING_CLOSE", close)
    prop = PropertyRow("noon-inn", "Noon Inn", zone, "EUR", cutoff, None)
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(insert(properties), [prop.row()])
    with dg.instance_for_test() as instance:
        reconciled(engine, prop.property_id, last_closed_night(now, zone, cutoff))
        assert run_checks(database_url, instance, monkeypatch)["previous_night_reconciled"] is True
