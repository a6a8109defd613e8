"""Screenshots of the Dagster UI for ``docs/operating.md`` (*In the Dagster UI*):

    python -m recon_pipeline_tests.defs.dagster_screenshots docs/dagster

The demo's three keyed properties over two nights, seeded into scratch PostgreSQL databases, served by the
simulator; the real code server, dagster-webserver and dagster-daemon; every schedule and sensor stopped.
One property's run of the first night (the night's check then names the two others), then the asset
graph's backfill of both nights (each night's batch runs). Headless Chromium at 1366×768 writes
``automation.png``, ``materialize-all.png``, ``night-check-failed.png``, ``runs.png`` and
``night-check-passed.png``: the viewport, what a person sees without scrolling.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import date
from pathlib import Path

from playwright.sync_api import Page

from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline_tests.support.browser import LAPTOP_VIEWPORT, chromium_page
from recon_pipeline_tests.support.dagster_processes import (
    LOCATION_NAME,
    pg_dagster_world_in,
    queued_batch_runs,
    wait_for_runs,
)

NIGHTS = (date(2026, 11, 28), date(2026, 11, 29))
ASSET_NAMES = [key.path[-1] for asset in reconciliation_assets for key in asset.keys]
TIMEOUT_S = 600
SETTLE_S = 3.0  # after the network is idle: the UI's last renders


def _shoot(page: Page, url: str, path: Path, settle_s: float = SETTLE_S) -> Path:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    time.sleep(settle_s)
    page.screenshot(path=str(path))
    return path


def take(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    shots = []
    with tempfile.TemporaryDirectory(prefix="dagster_shots_") as tmp, pg_dagster_world_in(
        Path(tmp), NIGHTS, 10, DEMO_PROPERTIES, {"run_queue": {"dequeue_interval_seconds": 1}}
    ) as w:
        nights = [night.isoformat() for night in NIGHTS]
        with w.deployment() as deployment, deployment.logs_on_failure():
            deployment.start_code_server(90)
            client = deployment.start_webserver(90)
            client.wait_for_location(90, deployment)
            client.stop_all_instigators()
            client.dismiss_community_dialog()
            deployment.start_daemon()
            base = deployment.base_url
            report = f"{base}/assets/discrepancy_report"
            with chromium_page("dagster-docs", LAPTOP_VIEWPORT) as browser:
                page = browser.page
                # Each row's state and description load after the list.
                shots.append(_shoot(page, f"{base}/automation", folder / "automation.png", 4 * SETTLE_S))

                first = client.launch_partition_run(nights[0], [DEMO_PROPERTIES[0].property_id])
                wait_for_runs(w.instance, [first], TIMEOUT_S, deployment)
                check = f"{report}?view=checks&checkDetail=night_reconciled&partition={nights[0]}"
                shots.append(_shoot(page, check, folder / "night-check-failed.png"))

                page.goto(f"{base}/locations/{LOCATION_NAME}/asset-groups/reconciliation")
                page.wait_for_load_state("networkidle")
                page.get_by_role("button", name="Materialize all").first.click()
                page.get_by_text("Launch backfill").first.wait_for()
                page.get_by_role("button", name="Custom").click()
                page.get_by_role("dialog").locator("input").first.fill(f"[{nights[0]}...{nights[1]}]")
                page.keyboard.press("Enter")
                time.sleep(SETTLE_S)
                page.screenshot(path=str(folder / "materialize-all.png"))
                shots.append(folder / "materialize-all.png")
                page.keyboard.press("Escape")

                backfill = client.launch_asset_backfill(ASSET_NAMES, nights)
                client.wait_for_backfill(backfill, TIMEOUT_S, deployment)
                _night_runs, queued = queued_batch_runs(w.instance, backfill)
                wait_for_runs(w.instance, queued, TIMEOUT_S, deployment)
                shots.append(_shoot(page, f"{base}/runs", folder / "runs.png"))
                shots.append(_shoot(page, check, folder / "night-check-passed.png"))
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where the PNGs go, e.g. docs/dagster")
    for path in take(parser.parse_args().folder):
        print(path)


if __name__ == "__main__":
    main()
