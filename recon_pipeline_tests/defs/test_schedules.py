"""The nightly schedule across timezones, cutoffs and DST weeks, with Dagster's build_schedule_context."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import dagster as dg
import pytest
from sqlalchemy import insert

from recon_pipeline.batches.nightly import nightly_batches, nightly_requests
from recon_pipeline.batches.plan import DEFAULT_BATCH_SIZE, plan_batches
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import properties
from recon_pipeline.defs.batches import batch_properties
from recon_pipeline.defs.resources import ReconDatabase
from recon_pipeline.defs.schedules import nightly_reconciliation_schedule
from recon_pipeline.properties import PropertyRow
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES

FIRST = date(2026, 1, 1)
LISBON = PropertyRow("lisbon", "L", "Europe/Lisbon", "EUR", "00:00", None)
DENVER = PropertyRow("denver", "D", "America/Denver", "USD", "03:00", None)
TOKYO = PropertyRow("tokyo", "T", "Asia/Tokyo", "JPY", "00:00", "acct_t")


def closed(prop: PropertyRow, now: datetime) -> date:
    return next(r.night for r in nightly_requests([prop], now, 0, FIRST))


@pytest.mark.parametrize(
    ("prop", "now", "night"),
    [
        # Denver falls back on Nov 1: 03:00 MST is 10:00 UTC; 03:00 MDT the day before was 09:00 UTC.
        (DENVER, datetime(2026, 11, 1, 9, 45, tzinfo=UTC), date(2026, 10, 30)),
        (DENVER, datetime(2026, 11, 1, 10, 0, tzinfo=UTC), date(2026, 10, 31)),
        (DENVER, datetime(2026, 10, 31, 9, 0, tzinfo=UTC), date(2026, 10, 30)),
        # Denver springs forward on Mar 8: 03:00 MDT is 09:00 UTC.
        (DENVER, datetime(2026, 3, 8, 8, 59, tzinfo=UTC), date(2026, 3, 6)),
        (DENVER, datetime(2026, 3, 8, 9, 0, tzinfo=UTC), date(2026, 3, 7)),
        # Lisbon springs forward on Mar 29: midnight WEST is 23:00 UTC.
        (LISBON, datetime(2026, 3, 29, 22, 59, tzinfo=UTC), date(2026, 3, 28)),
        (LISBON, datetime(2026, 3, 29, 23, 0, tzinfo=UTC), date(2026, 3, 29)),
        (LISBON, datetime(2026, 10, 25, 23, 59, tzinfo=UTC), date(2026, 10, 24)),
        (LISBON, datetime(2026, 10, 26, 0, 0, tzinfo=UTC), date(2026, 10, 25)),
        # Tokyo closes its night at 15:00 UTC, before UTC's day ends.
        (TOKYO, datetime(2026, 11, 30, 15, 0, tzinfo=UTC), date(2026, 11, 30)),
        (TOKYO, datetime(2026, 11, 30, 14, 59, tzinfo=UTC), date(2026, 11, 29)),
    ],
)
def test_the_night_just_closed_in_each_timezone(prop: PropertyRow, now: datetime, night: date) -> None:
    assert closed(prop, now) == night


def test_lookback_re_requests_prior_nights_with_distinct_keys() -> None:
    now = datetime(2026, 11, 30, 16, 0, tzinfo=UTC)
    requests = nightly_requests([TOKYO], now, 3, FIRST)
    assert [r.night for r in requests] == [date(2026, 11, 30) - timedelta(days=d) for d in range(4)]
    assert [r.lookback for r in requests] == [0, 1, 2, 3]
    assert {r.closed for r in requests} == {date(2026, 11, 30)}
    today = nightly_batches([TOKYO], now, 3, FIRST, DEFAULT_BATCH_SIZE)
    assert sorted(n.batch.night for n in today) == sorted(r.night for r in requests)
    assert len({n.run_key for n in today}) == 4
    tomorrow = nightly_batches([TOKYO], now + timedelta(days=1), 3, FIRST, DEFAULT_BATCH_SIZE)
    assert {n.run_key for n in today}.isdisjoint({n.run_key for n in tomorrow})
    assert nightly_batches([TOKYO], now + timedelta(minutes=45), 3, FIRST, DEFAULT_BATCH_SIZE) == today


def test_lookback_stops_at_the_first_night() -> None:
    requests = nightly_requests([TOKYO], datetime(2026, 1, 2, 16, 0, tzinfo=UTC), 3, FIRST)
    assert [r.night for r in requests] == [date(2026, 1, 2), date(2026, 1, 1)]


def evaluate(instance: dg.DagsterInstance, database_url: str, when: datetime) -> list[dg.RunRequest]:
    context = dg.build_schedule_context(
        instance=instance,
        scheduled_execution_time=when,
        resources={"recon_db": ReconDatabase(database_url=database_url)},
    )
    result = nightly_reconciliation_schedule(context)
    assert isinstance(result, list)
    return result


# Two more Lisbon properties: one on the platform account with lisbon-riverside (never split from it),
# one on its own account.
LISBON_ANNEX = PropertyRow("lisbon-annex", "Lisbon Annex", "Europe/Lisbon", "EUR", "00:00", None)
LISBON_DOCKS = PropertyRow("lisbon-docks", "Lisbon Docks", "Europe/Lisbon", "EUR", "00:00", "acct_docks")


def test_schedule_requests_every_property_night_in_batch_runs(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each requested night is the night's partition with its batch in run config and tags, cut as
    ``plan_batches`` cuts it (RECON_BATCH_SIZE=1: the shared platform account still stays whole)."""
    monkeypatch.setenv("RECON_NIGHTLY_LOOKBACK", "2")
    monkeypatch.setenv("RECON_BATCH_SIZE", "1")
    rows = [*DEMO_PROPERTIES, LISBON_ANNEX, LISBON_DOCKS]
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(insert(properties), [p.row() for p in rows])
    # Denver's DST night closes at this tick: all three properties' latest closed night is Oct 31.
    when = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
    nights = [date(2026, 10, 31) - timedelta(days=back) for back in range(3)]
    with dg.instance_for_test() as instance:
        requests = evaluate(instance, sqlite_url, when)
        assert sorted(
            (str(r.partition_key), tuple(batch_properties(r.run_config))) for r in requests
        ) == sorted(
            (night.isoformat(), batch)
            for night in nights
            for batch in [
                ("denver-lodge",),
                ("kyoto-gion",),
                ("lisbon-annex", "lisbon-riverside"),
                ("lisbon-docks",),
            ]
        )
        for night in nights:  # the same work as planning the night directly
            assert [
                tuple(batch_properties(r.run_config))
                for r in requests
                if r.partition_key == night.isoformat()
            ] == [batch.property_ids for batch in plan_batches(rows, night, 1, one_window_each=True)]
        for request in requests:
            assert request.run_key is not None and request.run_key.startswith("nightly:2026-10-31:")
            night = date.fromisoformat(str(request.partition_key))
            assert request.tags == {
                "recon/night": night.isoformat(),
                "recon/batch": request.run_key.removeprefix("nightly:2026-10-31:"),
                "recon/properties": str(len(batch_properties(request.run_config))),
                "recon/trigger": "nightly",
                "recon/lookback": str((date(2026, 10, 31) - night).days),
            }
        again = evaluate(instance, sqlite_url, when + timedelta(minutes=15))
        assert [r.run_key for r in again] == [r.run_key for r in requests]
        assert len({r.run_key for r in requests}) == len(requests)
