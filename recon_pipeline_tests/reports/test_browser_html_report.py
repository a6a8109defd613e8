"""The HTML report as a person opens it: two nights of one property reconciled through Dagster with the
code location's resources, the night's `report.html` rendered on demand (`recon report night`) from the
database, then opened from disk in headless Chromium.

The report's SVGs are empty in the file, so a drawn bar proves its inline script ran: one bar per
category with findings and one per night with findings (both as in the `discrepancies` table), each
with a real size and a length proportional to its amount, the category table beside them, no console
error and no request for anything but the file itself.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import Engine, select

from recon_pipeline import cli
from recon_pipeline.categories import ALL_CATEGORIES
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies
from recon_pipeline.definitions import build_definitions
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.batches import batch_run_config
from recon_pipeline.reports.paths import FILE_NAMES, HTML, night_folder
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.run import found_by_category
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline_tests.support.browser import (
    VIEWPORT_HEIGHT,
    VIEWPORT_WIDTH,
    chromium_page,
    png_dimensions,
)
from recon_pipeline_tests.support.dagster_processes import build_nights_world, recon_env, seed_database
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT

pytestmark = pytest.mark.slow  # drives Chromium

NIGHTS = (NIGHT - timedelta(days=1), NIGHT)
BOOKINGS_PER_NIGHT = 20
PROPERTY = DEMO_PROPERTIES[0]
SCREENSHOT = "html-report"
CLAMPED_PX = 10.0  # bars at most this long may be the script's minimum length
MIN_SCREENSHOT_BYTES = 20_000  # a blank page of the viewport's size compresses to a few KB


def nights_with_findings(engine: Engine, property_id: str) -> list[str]:
    """Nights of the property that hold at least one row of ``discrepancies``, ascending."""
    query = (
        select(discrepancies.c.night)
        .where(discrepancies.c.property_id == property_id)
        .distinct()
        .order_by(discrepancies.c.night)
    )
    with engine.connect() as connection:
        return [str(night) for night in connection.execute(query).scalars()]


def assert_proportional(lengths: Mapping[str, float], amounts: Mapping[str, int]) -> None:
    """Bars longer than the script's minimum (2 of 760 viewBox units, under 3 px here) are amount × one
    scale; the longest bar is the largest amount."""
    scales = [lengths[key] / amounts[key] for key in lengths if lengths[key] > CLAMPED_PX]
    assert scales, f"no bar longer than {CLAMPED_PX} px: {lengths}"
    assert all(math.isclose(scale, scales[0], rel_tol=0.02) for scale in scales), (lengths, amounts)
    largest = max(lengths, key=lambda key: amounts[key])
    assert math.isclose(lengths[largest], max(lengths.values())), (lengths, amounts)


@pytest.fixture
def report_path(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Both nights of PROPERTY reconciled with the code location's resources (configured from the
    environment, as deployed); the HTML report of NIGHT, rendered afterwards by the command line."""
    world = build_nights_world(NIGHTS, BOOKINGS_PER_NIGHT, (PROPERTY,))
    seed_database(sqlite_url, world)
    monkeypatch.setenv("RECON_HOME", str(tmp_path / "recon_home"))
    with ServerThread(build_app(world.world.store)) as simulator, dg.instance_for_test() as instance:
        for name, value in recon_env(sqlite_url, simulator.base_url, NIGHTS[0]).items():
            monkeypatch.setenv(name, value)
        resources = build_definitions().resources  # the code location's, resolved from the environment
        results = [
            dg.materialize(
                reconciliation_assets,
                partition_key=key,
                run_config=batch_run_config(world.property_ids),
                instance=instance,
                resources=resources,
            )
            for key in world.partition_keys()
        ]
    assert all(result.success for result in results)
    out, night = tmp_path / "rendered", NIGHT.isoformat()
    assert cli.main(["report", "night", night, "--property", PROPERTY.property_id, "--out", str(out)]) == 0
    return night_folder(PROPERTY.property_id, night, out) / FILE_NAMES[HTML]


def test_html_report_draws_its_charts_offline(report_path: Path, sqlite_url: str) -> None:
    started = time.monotonic()
    night = NIGHT.isoformat()
    source = report_path.read_text(encoding="utf-8")
    assert "<rect" not in source  # every bar below was drawn in the browser
    engine = make_engine(sqlite_url)
    found = found_by_category(engine, PROPERTY.property_id, night)
    expected_nights = nights_with_findings(engine, PROPERTY.property_id)
    engine.dispose()
    assert len(expected_nights) == len(NIGHTS) and found

    with chromium_page(SCREENSHOT) as browser:
        page = browser.page
        page.goto(report_path.as_uri())
        data: dict[str, Any] = json.loads(page.locator("script#report-data").text_content() or "")
        category_bars = page.locator("svg#chart-by-category rect.bar")
        night_bars = page.locator("svg#chart-by-night rect.bar")
        category_bars.first.wait_for()  # bounded by the page's default timeout
        category_boxes = {
            str(bar.get_attribute("data-category")): bar.bounding_box() for bar in category_bars.all()
        }
        night_boxes = {str(bar.get_attribute("data-night")): bar.bounding_box() for bar in night_bars.all()}
        current = night_bars.and_(page.locator('[data-current="true"]')).get_attribute("data-night")
        header = page.locator("table#category-table thead th").all_inner_texts()
        findings_column = [name.strip() for name in header].index("findings")
        table_rows = page.locator("table#category-table tbody tr")
        table: dict[str, int] = {}  # one row per (category, currency): sum per category
        for row in table_rows.all():
            category = str(row.get_attribute("data-category"))
            table[category] = table.get(category, 0) + int(
                row.locator("td").nth(findings_column).inner_text()
            )
        screenshot = browser.screenshot(SCREENSHOT, full_page=True)
    print(f"HTML report browser test: {time.monotonic() - started:.1f} s; screenshot {screenshot}")

    # One bar per category with findings: the same set in the database and in the embedded data.
    assert set(category_boxes) == set(found)
    assert {entry["category"]: entry["count"] for entry in data["categories"] if entry["count"]} == found
    assert set(category_boxes) == {entry["category"] for entry in data["categories"] if entry["count"]}
    # One bar per night with findings, in night order, the report's own night marked.
    assert list(night_boxes) == expected_nights
    assert expected_nights == [entry["night"] for entry in data["nights"] if entry["count"]]
    assert current == night
    boxes = [*category_boxes.values(), *night_boxes.values()]
    assert all(box is not None and box["width"] > 0 and box["height"] > 0 for box in boxes), boxes
    lefts = [box["x"] for box in night_boxes.values() if box is not None]
    assert lefts == sorted(lefts) and len(set(lefts)) == len(lefts)
    amounts = {entry["category"]: entry["amount_minor"] for entry in data["categories"]}
    assert_proportional({k: box["width"] for k, box in category_boxes.items() if box}, amounts)
    night_amounts = {entry["night"]: entry["amount_minor"] for entry in data["nights"]}
    assert_proportional({k: box["height"] for k, box in night_boxes.items() if box}, night_amounts)
    # The server-rendered table: every category, counts as in the database.
    assert list(table) == list(ALL_CATEGORIES)
    assert {category: n for category, n in table.items() if n} == found

    assert browser.console_errors == [] and browser.page_errors == []
    assert browser.requested_urls == [report_path.as_uri()], browser.requested_urls
    width, height = png_dimensions(screenshot)
    assert width == VIEWPORT_WIDTH and height >= VIEWPORT_HEIGHT  # the whole page, longer than the viewport
    assert screenshot.stat().st_size > MIN_SCREENSHOT_BYTES
