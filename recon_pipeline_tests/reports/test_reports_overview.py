"""Cross-night views on the demo seed: the overview's figures (the assets' markdown, and the CSV rendered on
demand for the same moment) are those of a direct SQL aggregation, the orphans list matches what the
world planted, the assets write no file, and the views are requested again after new reports."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import case, func, select, update

from recon_pipeline.categories import AMOUNT_MISMATCH, MISSING_IN_LEDGER, ORPHANED_CAPTURED_PAYMENT
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies
from recon_pipeline.definitions import build_definitions
from recon_pipeline.defs.summary import DAILY_REFRESH_CRON, GROUP, summary_assets
from recon_pipeline.reports.overview import (
    ORPHAN_COLUMNS,
    OVERVIEW_COLUMNS,
    age_bucket,
    by_age_markdown,
    orphans_markdown,
    orphans_with_age,
    unresolved_by_age,
)
from recon_pipeline.reports.paths import OPEN_CSV, ORPHANS_CSV, overview_folder
from recon_pipeline.reports.queries import unresolved_findings, unresolved_orphaned_payments
from recon_pipeline.reports.render import render_overviews
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline
from recon_pipeline_tests.support.report_fixtures import KYOTO, LISBON, NIGHTS, OLD_NIGHT, ReportedNights

c = discrepancies.c


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def set_status(reported: ReportedNights, status: str, *conditions: Any) -> int:
    with reported.engine.begin() as connection:
        return connection.execute(
            update(discrepancies).where(*conditions).values(review_status=status)
        ).rowcount


@pytest.fixture(scope="module")
def overviews(reported_nights: ReportedNights) -> Iterator[tuple[ReportedNights, dict[str, dict[str, Any]]]]:
    """Some findings reviewed by hand first, then both views materialized, and their CSVs rendered on demand
    (``render_overviews``) as of the moment each asset reports; the assets' metadata by asset."""
    kyoto_new = (c.property_id == KYOTO.property_id, c.night == NIGHT.isoformat())
    assert set_status(reported_nights, "acknowledged", *kyoto_new, c.category == MISSING_IN_LEDGER) > 0
    lisbon_old = (c.property_id == LISBON.property_id, c.night == OLD_NIGHT.isoformat())
    assert set_status(reported_nights, "resolved", *lisbon_old, c.category == AMOUNT_MISMATCH) > 0
    first_orphan = select(func.min(c.record_key)).where(*kyoto_new, c.category == ORPHANED_CAPTURED_PAYMENT)
    assert (
        set_status(reported_nights, "resolved", *kyoto_new, c.record_key == first_orphan.scalar_subquery())
        == 1
    )
    result = dg.materialize(
        summary_assets,
        instance=reported_nights.instance,
        resources={"recon_db": reported_nights.resources["recon_db"]},
    )
    assert result.success
    metadata = {
        node: {
            key: value.value
            for key, value in result.asset_materializations_for_node(node)[0].metadata.items()
        }
        for node in ("open_discrepancies_overview", "orphaned_payments_overview")
    }
    assert not (reported_nights.home / "reports" / "_overview").exists()  # the assets write no file
    as_of = datetime.fromisoformat(metadata["orphaned_payments_overview"]["as_of"])
    with reported_nights.engine.connect() as connection:
        render_overviews(connection, as_of, reported_nights.rendered)
    yield reported_nights, metadata


def rendered_csv(reported: ReportedNights, name: str) -> tuple[list[str], list[dict[str, str]]]:
    return read_csv(overview_folder(reported.rendered) / name)


def test_open_overview_equals_a_direct_sql_aggregation(
    overviews: tuple[ReportedNights, dict[str, dict[str, Any]]],
) -> None:
    reported, metadata = overviews
    view = metadata["open_discrepancies_overview"]
    as_of = date.fromisoformat(view["as_of"])
    query = (
        select(
            c.property_id,
            c.night,
            c.category,
            c.currency,
            func.count(),
            func.sum(case((c.review_status == "acknowledged", 1), else_=0)),
            func.sum(func.abs(c.difference_minor)),
        )
        .where(c.review_status.in_(["open", "acknowledged"]))
        .group_by(c.property_id, c.night, c.category, c.currency)
    )
    expected: dict[tuple[str, ...], list[Any]] = {}
    with reported.engine.connect() as connection:
        unresolved = connection.execute(
            select(func.count()).where(c.review_status.in_(["open", "acknowledged"]))
        ).scalar_one()
        for prop, night, category, currency, n, acknowledged, amount in connection.execute(query):
            key = (age_bucket((as_of - date.fromisoformat(night)).days), prop, category, currency)
            row = expected.setdefault(key, [0, 0, 0, night])
            row[0], row[1], row[2], row[3] = (
                row[0] + n,
                row[1] + acknowledged,
                row[2] + amount,
                min(row[3], night),
            )

    assert "report_csv" not in view
    header, rows = rendered_csv(reported, OPEN_CSV)
    assert header == list(OVERVIEW_COLUMNS)
    shown = {
        (r["age_bucket"], r["property_id"], r["category"], r["currency"]): [
            int(r["count"]),
            int(r["acknowledged"]),
            int(r["amount_minor"]),
            r["oldest_night"],
        ]
        for r in rows
    }
    assert len(shown) == len(rows) == view["dagster/row_count"]
    assert shown == expected
    assert view["unresolved_findings"] == unresolved == sum(n for n, *_ in shown.values())
    # What the reviews changed is visible: acknowledged findings counted, resolved ones left out.
    kyoto_missing = [v for k, v in shown.items() if k[1:3] == (KYOTO.property_id, MISSING_IN_LEDGER)]
    assert sum(ack for _n, ack, *_ in kyoto_missing) > 0
    with reported.engine.connect() as connection:
        everything = connection.execute(select(func.count()).select_from(discrepancies)).scalar_one()
    resolved = reported.world.world.expected[(LISBON.property_id, OLD_NIGHT.isoformat(), AMOUNT_MISMATCH)] + 1
    assert everything - unresolved == resolved  # lisbon's old amount mismatches and one orphan
    # The headline table per age bucket: amounts in each currency's own unit.
    for bucket in {key[0] for key in shown}:
        for currency, exponent in (("JPY", 0), ("EUR", 2)):
            total = sum(v[2] for k, v in shown.items() if k[0] == bucket and k[3] == currency)
            assert f"{Decimal(total).scaleb(-exponent):,.{exponent}f} {currency}" in view["by_age"]
    # A currency mismatch has no difference in any currency: no "0.00 EUR".
    lines = view["overview"].splitlines()
    mismatches = [line.split(" | ") for line in lines if "| currency_mismatch |" in line]
    assert mismatches and all(cells[5] == "—" for cells in mismatches)


def test_orphans_overview_lists_the_planted_orphans_with_age_and_booking(
    overviews: tuple[ReportedNights, dict[str, dict[str, Any]]],
) -> None:
    reported, metadata = overviews
    view = metadata["orphaned_payments_overview"]
    as_of = datetime.fromisoformat(view["as_of"])
    assert "report_csv" not in view
    header, rows = rendered_csv(reported, ORPHANS_CSV)
    assert header == list(ORPHAN_COLUMNS)
    planted = sum(
        reported.world.world.expected[(p.property_id, n.isoformat(), ORPHANED_CAPTURED_PAYMENT)]
        for p in (LISBON, KYOTO)
        for n in NIGHTS
    )
    assert planted == 8 and len(rows) == planted - 1 == view["dagster/row_count"]  # one was resolved
    orders = {order["provider_payment_id"]: order for order in reported.world.world.payment_orders}
    bookings = {booking["booking_id"]: booking for booking in reported.world.world.bookings}
    for row in rows:
        order = orders[row["payment_id"]]
        assert row["booking_id"] == order["booking_id"]
        assert row["booking_status"] == bookings[order["booking_id"]]["status"] == "confirming"
        assert (int(row["amount_minor"]), row["currency"]) == (order["amount_minor"], order["currency"])
        assert row["captured_at"] == order["captured_at"].isoformat() and row["age_from"] == "captured_at"
        age = (as_of - order["captured_at"]).total_seconds() / 3600
        assert abs(float(row["age_hours"]) - age) <= 0.05 + 1 / 3600  # rounded to 0.1 h; as_of to 1 s
        assert f"`{row['payment_id']}`" in view["orphaned_payments"]
    ages = [float(row["age_hours"]) for row in rows]
    assert ages == sorted(ages, reverse=True)
    assert {row["property_id"] for row in rows} == {LISBON.property_id, KYOTO.property_id}


def test_age_buckets_and_empty_views(sqlite_url: str) -> None:
    assert [age_bucket(days) for days in (-1, 0, 1, 2, 7, 8, 30, 31, 400)] == [
        "0-1 days",
        "0-1 days",
        "0-1 days",
        "2-7 days",
        "2-7 days",
        "8-30 days",
        "8-30 days",
        "31+ days",
        "31+ days",
    ]
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    with engine.connect() as connection:
        findings, orphans = unresolved_findings(connection), unresolved_orphaned_payments(connection)
    engine.dispose()
    overview = unresolved_by_age(findings, NIGHT)
    assert overview.empty and list(overview.columns) == list(OVERVIEW_COLUMNS)
    assert by_age_markdown(overview) == "_No unresolved discrepancies._"
    listed = orphans_with_age(orphans, datetime.now(UTC))
    assert listed.empty and list(listed.columns) == list(ORPHAN_COLUMNS)
    assert orphans_markdown(listed) == "_No orphaned captured payments._"


def test_views_are_requested_after_new_reports_and_daily(
    seeded_pipeline: SeededPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECON_HOME", str(tmp_path))
    views = {asset.key for asset in summary_assets}
    selection = dg.AssetSelection.groups(GROUP)

    def requested(result: dg.EvaluateAutomationConditionsResult) -> set[dg.AssetKey]:
        return {key for key in views if result.get_num_requested(key)}

    def evaluate(previous: dg.EvaluateAutomationConditionsResult | None, **kwargs: Any) -> Any:
        cursor = previous.cursor if previous else None
        return dg.evaluate_automation_conditions(
            defs=build_definitions(),
            instance=seeded_pipeline.instance,
            asset_selection=selection,
            cursor=cursor,
            **kwargs,
        )

    first = evaluate(None)
    assert requested(first) == set()  # nothing reported yet
    assert seeded_pipeline.materialize(KYOTO.property_id).success
    second = evaluate(first)
    assert requested(second) == views  # a discrepancy_report partition was materialized
    third = evaluate(second)
    assert requested(third) == set()  # handled: once per batch of new reports
    now = datetime.now(UTC)
    hour, minute = int(DAILY_REFRESH_CRON.split()[1]), int(DAILY_REFRESH_CRON.split()[0])
    tick = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    tick += timedelta(days=1) if tick <= now else timedelta()
    fourth = evaluate(third, evaluation_time=tick + timedelta(minutes=1))
    assert requested(fourth) == views  # the daily refresh: ages grow without new reports
