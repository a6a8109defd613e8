"""SLO checks: the morning-close deadline per timezone, and the age of the oldest pending event."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import dagster as dg
import pytest
from sqlalchemy import insert, update

from recon_pipeline.db.engine import init_db, make_engine
from recon_pipeline.db.schema import payment_event_processing, properties
from recon_pipeline.defs.partitions import PROPERTY_DIMENSION, PropertyNight
from recon_pipeline.demo.properties import DEMO_PROPERTIES
from recon_pipeline.events.parse import ProviderEvent
from recon_pipeline.events.store import store_event
from recon_pipeline.ledger.queries import PropertyRow
from recon_pipeline.nightly import due_nights

LISBON = PropertyRow("lisbon", "L", "Europe/Lisbon", "EUR", "00:00", None)
TOKYO = PropertyRow("tokyo", "T", "Asia/Tokyo", "JPY", "00:00", None)
NINE = time(9, 0)


@pytest.mark.parametrize(
    ("now", "lisbon", "tokyo"),
    [
        # 08:59 in Lisbon: Dec 1 is not due yet, Nov 30 is. 17:59 in Tokyo: Dec 1 is due.
        (datetime(2026, 12, 2, 8, 59, tzinfo=UTC), date(2026, 11, 30), date(2026, 12, 1)),
        (datetime(2026, 12, 2, 9, 0, tzinfo=UTC), date(2026, 12, 1), date(2026, 12, 1)),
        # Summer time: 09:00 in Lisbon is 08:00 UTC.
        (datetime(2026, 7, 2, 8, 0, tzinfo=UTC), date(2026, 7, 1), date(2026, 7, 1)),
        (datetime(2026, 7, 2, 7, 59, tzinfo=UTC), date(2026, 6, 30), date(2026, 7, 1)),
        # 23:59 UTC is 08:59 next day in Tokyo.
        (datetime(2026, 12, 2, 23, 59, tzinfo=UTC), date(2026, 12, 1), date(2026, 12, 1)),
    ],
)
def test_which_night_is_due_by_the_morning_close(now: datetime, lisbon: date, tokyo: date) -> None:
    assert due_nights([LISBON, TOKYO], now, NINE) == [("lisbon", lisbon), ("tokyo", tokyo)]


def run_checks(
    database_url: str, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> dict[str, bool]:
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    from recon_pipeline.definitions import build_definitions

    result = build_definitions().resolve_job_def("slo_checks").execute_in_process(instance=instance)
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def test_checks_fail_until_due_nights_are_reconciled_and_events_processed(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(sqlite_url)
    init_db(engine)
    now = datetime.now(UTC)
    with engine.begin() as connection:
        connection.execute(insert(properties), [p.row() for p in DEMO_PROPERTIES])
        event = ProviderEvent("evt_old", "payment_intent.succeeded", 1, "pi_1", None)
        store_event(connection, "stripe", event, "{}", now - timedelta(hours=1))
    rows = list(DEMO_PROPERTIES)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(PROPERTY_DIMENSION, [p.property_id for p in DEMO_PROPERTIES])
        assert run_checks(sqlite_url, instance, monkeypatch) == {
            "previous_night_reconciled": False,
            "oldest_pending_event_age": False,
        }
        for property_id, night in due_nights(rows, datetime.now(UTC), NINE):
            key = PropertyNight(property_id, night.isoformat()).partition_key
            instance.report_runless_asset_event(
                dg.AssetMaterialization("discrepancy_report", partition=str(key))
            )
        with engine.begin() as connection:
            connection.execute(update(payment_event_processing).values(status="processed"))
        assert run_checks(sqlite_url, instance, monkeypatch) == {
            "previous_night_reconciled": True,
            "oldest_pending_event_age": True,
        }
