"""What an analyst sees in the Dagster UI: a night partition of the demo world reconciled (a batch of one
property) into a SQLite-backed instance, the real code server and dagster-webserver on that instance, and
the `discrepancy_report` asset page of the night partition opened in headless Chromium.

The page must render the materialization's `categories` markdown as a table: the same header and rows as
the metadata stored in the instance, and the per-category counts the demo world planted.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import dagster as dg
import pytest

from recon_pipeline.categories import ALL_CATEGORIES
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.batches import batch_run_config
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.support.browser import (
    VIEWPORT_HEIGHT,
    VIEWPORT_WIDTH,
    chromium_page,
    png_dimensions,
)
from recon_pipeline_tests.support.dagster_processes import DagsterDeployment
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline

pytestmark = pytest.mark.slow  # starts Dagster processes and Chromium

REPORT = dg.AssetKey("discrepancy_report")
STARTUP_TIMEOUT_S = 60
PAGE_RENDER_TIMEOUT_MS = 90_000
AMOUNT_HEADER = "sum of abs. difference"
SCREENSHOT = "dagster-ui-discrepancy-report"
MIN_SCREENSHOT_BYTES = 20_000  # a blank page of the viewport's size compresses to a few KB


def parse_markdown_table(text: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a pipe table as ``report.summary_markdown`` writes it (no escaped pipes here)."""
    header, _rule, *rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")] for line in text.strip().splitlines()
    ]
    return header, rows


def report_metadata(instance: dg.DagsterInstance, partition_key: str) -> dict[str, dg.MetadataValue]:
    """The metadata of the partition's latest `discrepancy_report` materialization, from the instance."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=REPORT, asset_partitions=[partition_key]), limit=1
    ).records
    assert records, f"no materialization of {REPORT.to_user_string()} for {partition_key}"
    materialization = records[0].asset_materialization
    assert materialization is not None
    return dict(materialization.metadata)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_asset_page_renders_the_partitions_category_table(
    seeded_pipeline: SeededPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = time.monotonic()
    monkeypatch.setenv("RECON_HOME", str(tmp_path / "recon_home"))  # the asset writes its report files there
    property_id, other_id = DEMO_PROPERTIES[0].property_id, DEMO_PROPERTIES[1].property_id
    # The other property (another currency) last, on another night partition (the night before, with
    # nothing planted): a page showing the asset's latest materialization instead of the partition's
    # would show its rows.
    assert seeded_pipeline.materialize(property_id).success
    other_key = (NIGHT - timedelta(days=1)).isoformat()
    other_run = dg.materialize(
        reconciliation_assets,
        partition_key=other_key,
        instance=seeded_pipeline.instance,
        resources=seeded_pipeline.resources,
        run_config=batch_run_config([other_id]),
    )
    assert other_run.success
    partition_key = NIGHT.isoformat()
    metadata = report_metadata(seeded_pipeline.instance, partition_key)
    expected_header, expected_rows = parse_markdown_table(str(metadata["categories"].value))
    assert AMOUNT_HEADER in expected_header
    assert f"| {property_id} | ok |" in str(metadata["per_property"].value)
    other_metadata = report_metadata(seeded_pipeline.instance, other_key)
    assert parse_markdown_table(str(other_metadata["categories"].value))[1] != expected_rows

    env = {"DAGSTER_HOME": seeded_pipeline.instance.root_directory}  # the SQLite instance just written
    with DagsterDeployment(env, tmp_path / "logs") as deployment, deployment.logs_on_failure():
        deployment.start_code_server(STARTUP_TIMEOUT_S)
        client = deployment.start_webserver(STARTUP_TIMEOUT_S)
        client.wait_for_location(STARTUP_TIMEOUT_S, deployment)
        client.dismiss_community_dialog()
        query = urlencode({"view": "partitions", "partition": partition_key})
        with chromium_page(SCREENSHOT) as browser:
            page = browser.page
            page.goto(f"{deployment.base_url}/assets/{REPORT.to_user_string()}?{query}")
            table = page.locator(".dagster-markdown table").filter(
                has=page.locator("th", has_text=AMOUNT_HEADER)
            )
            # The night's report carries more metadata than a property-night's did (the batch's per-property
            # table, pull counts); on a 2-core machine under load the table was not rendered within 20 s
            # and was within 40 s.
            table.wait_for(timeout=PAGE_RENDER_TIMEOUT_MS)
            header = table.locator("thead th").all_inner_texts()
            rows = [row.locator("td").all_inner_texts() for row in table.locator("tbody tr").all()]
            # Vertically only: the metadata panel scrolls sideways too, which would hide its labels.
            table.evaluate("table => table.scrollIntoView({block: 'center', inline: 'nearest'})")
            screenshot = browser.screenshot(SCREENSHOT)
    print(f"dagster UI browser test wall time: {time.monotonic() - started:.1f} s; screenshot {screenshot}")

    assert [cell.strip() for cell in header] == expected_header
    assert [[cell.strip() for cell in row] for row in rows] == expected_rows
    category_column, count_column = expected_header.index("category"), expected_header.index("findings")
    shown: dict[str, int] = {}
    for row in rows:
        shown[row[category_column]] = shown.get(row[category_column], 0) + int(row[count_column])
    assert list(shown) == list(ALL_CATEGORIES)  # every category, in the contract's order
    assert shown == {category: metadata[f"count/{category}"].value for category in ALL_CATEGORIES}
    planted = seeded_pipeline.planted(property_id)
    assert shown == {category: planted.get(category, 0) for category in ALL_CATEGORIES}
    assert sum(shown.values()) > 0

    assert png_dimensions(screenshot) == (VIEWPORT_WIDTH, VIEWPORT_HEIGHT)
    assert screenshot.stat().st_size > MIN_SCREENSHOT_BYTES
