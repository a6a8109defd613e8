"""The review desk's screenshots for ``docs/review-desk.md``: each page at 1,366 x 768 (an analyst's laptop)
on the analyst's night (``support/analyst_night.py``), served on loopback from a throwaway SQLite file and
signed in through the sign-in form, as a person would.

    python -m recon_pipeline_tests.review_desk.screenshots docs/desk

writes ``docs/desk/<page>.png`` (the viewport only: what a person sees without scrolling). The test of
``save_screenshots`` runs the same code into a temporary folder."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Page
from sqlalchemy import Engine, func, select

from recon_pipeline import categories as c
from recon_pipeline.db.schema import discrepancies, matches
from recon_pipeline_tests.support.analyst_night import (
    NIGHTS,
    PROPERTY_IDS,
    seed_analyst_night,
    seeded_adjustment,
)
from recon_pipeline_tests.support.browser import LAPTOP_VIEWPORT, chromium_page
from recon_pipeline_tests.support.desk_fixtures import PASSWORD, ServedDesk, add_user, served_desk

ANALYST, APPROVER = "ana", "alice"
SHOWN_PROPERTY = PROPERTY_IDS[0]
SHOWN_PAYOUT = "po_1QRomeUntraced"  # says why it is not traced


@contextmanager
def analyst_desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedDesk]:
    """The desk serving the analyst's night, with analyst ``ANALYST`` and approver ``APPROVER`` (both may
    see the night's three properties; ``PASSWORD``)."""
    with served_desk(database_url, monkeypatch) as desk:
        with desk.engine.begin() as connection:
            seed_analyst_night(connection)
        add_user(ANALYST, "analyst", ",".join(PROPERTY_IDS))
        add_user(APPROVER, "approver", ",".join(PROPERTY_IDS))
        yield desk


def sign_in(page: Page, base_url: str, name: str) -> None:
    """Through the sign-in form; lands on the findings list."""
    page.goto(f"{base_url}/signin")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/findings")


def desk_pages(engine: Engine) -> dict[str, str]:
    """Each page worth showing, by its screenshot's name: its path on the desk."""
    with engine.connect() as connection:
        finding_id = connection.execute(
            select(discrepancies.c.discrepancy_id)
            .where(
                discrepancies.c.property_id == SHOWN_PROPERTY,
                discrepancies.c.category == c.AMOUNT_MISMATCH,
            )
            .order_by(discrepancies.c.discrepancy_id)
            .limit(1)
        ).scalar_one()
        match_id = connection.execute(select(func.min(matches.c.match_id))).scalar_one()
    return {
        "overview": "/overview",
        "nights": "/nights",
        "night": f"/nights/{SHOWN_PROPERTY}/{NIGHTS[0]}",
        "findings": "/findings",
        "finding": f"/findings/{finding_id}",
        "legend": "/legend",
        "matches": "/matches",
        "match": f"/matches/{match_id}",
        "adjustments": "/adjustments",
        "adjustment": f"/adjustments/{seeded_adjustment('rome_waiting')}",  # one approval of two
        "payouts": "/payouts",
        "payout": f"/payouts/{SHOWN_PAYOUT}",
    }


def save_screenshots(desk: ServedDesk, folder: Path, names: Sequence[str] | None = None) -> list[Path]:
    """``<folder>/<name>.png`` of each page (all of ``desk_pages`` unless ``names``), signed in as the
    approver (who sees every button); the files written."""
    pages = desk_pages(desk.engine)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with chromium_page("review-desk-screenshots", viewport=LAPTOP_VIEWPORT) as watched:
        sign_in(watched.page, desk.base_url, APPROVER)
        for name in names or pages:
            response = watched.page.goto(f"{desk.base_url}{pages[name]}")
            if response is None or response.status != 200:  # a shot of an error page shows nothing
                raise RuntimeError(f"{pages[name]} answered {response and response.status}")
            path = folder / f"{name}.png"
            watched.page.screenshot(path=str(path))
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where the PNGs go, e.g. docs/desk")
    folder = parser.parse_args(argv).folder
    with (
        tempfile.TemporaryDirectory(prefix="desk-screenshots-") as scratch,
        pytest.MonkeyPatch.context() as monkeypatch,
        analyst_desk(f"sqlite:///{Path(scratch) / 'recon.sqlite'}", monkeypatch) as desk,
    ):
        for path in save_screenshots(desk, folder):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
