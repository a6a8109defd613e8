"""Every page of the review desk fits a 1,366 × 768 screen without scrolling sideways, in Debian's Chromium
over the demo's desk (`recon demo --desk-users`: several properties, long ids and reasons, matches, payouts,
adjustments decided and not): each list, each tab of the queue, and the first detail page each list links
to. The measure is the issue's: ``document.documentElement.scrollWidth`` at most the viewport's width."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from recon_pipeline import cli
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments
from recon_pipeline.review.adjustments import APPROVE, REJECT, review_adjustment
from recon_pipeline.review_desk.app import DeskSettings, review_desk_app
from recon_pipeline_tests.support.browser import chromium_page
from recon_pipeline_tests.support.shared_servers import serving

pytestmark = pytest.mark.slow  # a demo night and Chromium

WIDTH, HEIGHT = 1366, 768
PASSWORD = "a demo passphrase of our own"
LISTS = (
    "/nights",
    "/findings",
    "/matches",
    "/payouts",
    "/legend",
    *(f"/adjustments?tab={tab}" for tab in ("decide", "waiting", "posting", "done", "closed", "all")),
)
# Each list's first detail link: the night, finding, match, payout and adjustment pages.
DETAILS = {
    "/nights": 'main table a[href^="/nights/"]',
    "/findings": 'main table a[href^="/findings/"]',
    "/matches": 'main table a[href^="/matches/"]',
    "/payouts": 'main table a[href^="/payouts/"]',
    "/adjustments?tab=done": 'main table a[href^="/adjustments/adj_"]',
    "/adjustments?tab=decide": 'main table a[href^="/adjustments/adj_"]',
}


@pytest.fixture(scope="module")
def demo_desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo's database with two of its adjustments decided (one approved, one rejected), served."""
    home = tmp_path_factory.mktemp("demo-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("RECON_DATABASE_URL", raising=False)
        patch.setenv("RECON_HOME", str(home))
        patch.setenv("RECON_NEW_USER_PASSWORD", PASSWORD)
        assert cli.main(["demo", "--desk-users"]) == 0
    engine = make_engine(f"sqlite:///{Path(home) / 'recon.sqlite'}")
    decide_two(engine)
    try:
        with serving(review_desk_app(engine, DeskSettings("s" * 40))) as server:
            yield server.base_url
    finally:
        engine.dispose()


def decide_two(engine: Engine) -> None:
    with engine.begin() as connection:
        proposed = connection.execute(
            select(adjustments.c.adjustment_id, adjustments.c.amount_minor)
            .where(adjustments.c.status == "proposed")
            .order_by(adjustments.c.amount_minor)
            .limit(2)
        ).all()
        now = datetime.now(UTC)
        for (adjustment_id, amount), action in zip(proposed, (APPROVE, REJECT), strict=True):
            review_adjustment(connection, adjustment_id, action, "demo-approver", "checked", amount, now)


def test_every_page_fits_1366_by_768_without_scrolling_sideways(demo_desk: str) -> None:
    too_wide: dict[str, int] = {}
    with chromium_page("review-desk-width") as watched:
        page = watched.page
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        page.goto(f"{demo_desk}/signin")
        page.get_by_label("Name").fill("demo-approver")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state()
        visited: list[str] = []
        for path in LISTS:
            page.goto(f"{demo_desk}{path}")
            visited.append(path)
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > WIDTH:
                too_wide[path] = width
            if path in DETAILS:
                link = page.locator(DETAILS[path]).first
                if link.count():
                    detail = str(link.get_attribute("href"))
                    page.goto(f"{demo_desk}{detail}")
                    visited.append(detail)
                    width = page.evaluate("document.documentElement.scrollWidth")
                    if width > WIDTH:
                        too_wide[detail] = width
        assert not watched.page_errors
    assert len(visited) >= len(LISTS) + 5, visited  # each list led to its detail page
    assert too_wide == {}
