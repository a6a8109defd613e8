"""Paging the review desk's lists on a real server (127.0.0.1) over SQLite and PostgreSQL: pages that
neither overlap nor skip a row, the count of matching rows (never another property's), Previous/Next links
that keep the filters, and a bad ``page`` refused in one line."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta

import httpx
import pytest
from sqlalchemy import Engine, insert

from recon_pipeline.db.schema import adjustments, discrepancies, payouts
from recon_pipeline_tests.support.desk_fixtures import (
    NIGHT,
    add_user,
    finding,
    finding_ids,
    served_desk,
    sign_in,
)
from recon_pipeline_tests.support.desk_rows import adjustment, payout_row
from recon_pipeline_tests.support.loopback import loopback_client

P1_FINDINGS = 450
P1_NIGHTS = 150  # p1's findings spread over this many nights, three a night
P2_FINDINGS = 30
FIRST_NIGHT = (date.fromisoformat(NIGHT) - timedelta(days=P1_NIGHTS - 1)).isoformat()
FINDING_LINK = re.compile(r'href="/findings/(\d+)(?:\?[^"]*)?"')
NIGHT_LINK = re.compile(r'href="/nights/([^/"]+)/(\d{4}-\d\d-\d\d)"')


def night_before(days: int) -> str:
    return (date.fromisoformat(NIGHT) - timedelta(days=days)).isoformat()


@dataclass
class Desk:
    engine: Engine
    base_url: str
    ids: dict[str, int]  # finding id by record key

    @contextmanager
    def client(self, name: str = "ana") -> Iterator[httpx.Client]:
        with loopback_client(base_url=self.base_url) as client:
            assert sign_in(client, name).status_code == 303
            yield client


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    """p1: 450 findings (three a night over 150 nights, difference 10 × i); p2: 30 findings. ana sees p1,
    root sees both."""
    with served_desk(database_url, monkeypatch) as served:
        with served.engine.begin() as connection:
            connection.execute(
                insert(discrepancies),
                [
                    finding("p1", f"r-{i:03d}", 10 * i, night=night_before(i % P1_NIGHTS))
                    for i in range(P1_FINDINGS)
                ]
                + [finding("p2", f"s-{i:03d}", 10 * i, night=night_before(i)) for i in range(P2_FINDINGS)],
            )
            ids = finding_ids(connection)
        add_user("ana", "analyst", "p1")
        add_user("root", "admin", "p1,p2")
        yield Desk(served.engine, served.base_url, ids)


def pager_text(page: httpx.Response) -> str:
    match = re.search(r'<span class="rows">([^<]*)</span>', page.text)
    assert match, page.text
    return match.group(1)


def pager_link(page: httpx.Response, rel: str) -> str | None:
    match = re.search(rf'rel="{rel}" href="([^"]+)"', page.text)
    return None if match is None else html.unescape(match.group(1))


def test_findings_pages_hold_every_row_once_in_order_and_say_how_many(desk: Desk) -> None:
    expected = [
        desk.ids[f"r-{i:03d}"]
        for i in sorted(range(P1_FINDINGS), key=lambda i: (i % P1_NIGHTS, f"r-{i:03d}"))
    ]
    with desk.client() as client:
        pages = [client.get("/findings", params={"page": str(n)}) for n in (1, 2, 3)]
        first = client.get("/findings")
        beyond = client.get("/findings", params={"page": "4"})
    assert [page.status_code for page in pages] == [200, 200, 200]
    shown = [[int(found) for found in FINDING_LINK.findall(page.text)] for page in pages]
    assert [len(rows) for rows in shown] == [200, 200, 50]
    assert shown[0] + shown[1] + shown[2] == expected
    assert [pager_text(page) for page in pages] == [
        "rows 1-200 of 450",
        "rows 201-400 of 450",
        "rows 401-450 of 450",
    ]
    assert [int(found) for found in FINDING_LINK.findall(first.text)] == shown[0]
    assert pager_link(first, "prev") is None and pager_link(pages[2], "next") is None
    assert beyond.status_code == 200 and FINDING_LINK.findall(beyond.text) == []
    assert pager_text(beyond) == "no rows on page 4 of 3 (450 rows)"
    assert pager_link(beyond, "prev") == "/findings?page=3"


def test_previous_and_next_keep_the_filters(desk: Desk) -> None:
    with desk.client() as client:
        first = client.get("/findings", params={"amount_at_least": "5.00", "cleared": "no"})
        assert pager_text(first) == "rows 1-200 of 400"  # differences 500 to 4,490: i from 50
        following = pager_link(first, "next")
        assert following == "/findings?cleared=no&amount_at_least=5.00&page=2"
        second = client.get(following)
        assert pager_text(second) == "rows 201-400 of 400" and pager_link(second, "next") is None
        assert pager_link(second, "prev") == "/findings?cleared=no&amount_at_least=5.00&page=1"
        seen = set(FINDING_LINK.findall(first.text)) | set(FINDING_LINK.findall(second.text))
        assert seen == {str(desk.ids[f"r-{i:03d}"]) for i in range(50, P1_FINDINGS)}
        exported = client.get("/findings/export.csv", params={"amount_at_least": "5.00", "page": "2"})
        lines = exported.text.strip().splitlines()
        assert exported.status_code == 200 and len(lines) == 1 + 400 + 2  # header, rows, empty line, total


@pytest.mark.parametrize("path", ["/findings", "/adjustments", "/payouts", "/nights"])
def test_a_page_that_is_not_a_positive_whole_number_is_refused_in_one_line(desk: Desk, path: str) -> None:
    with desk.client() as client:
        for raw in ("0", "x", "-1", "1.5", "100001", "9" * 30):
            refused = client.get(path, params={"page": raw})
            assert refused.status_code == 400, raw
            error = re.search(r'<p class="error" role="alert">([^<]*)</p>', refused.text)
            assert error and f"page {raw!r}" in html.unescape(error.group(1)), refused.text
        assert client.get(path, params={"page": "100000"}).status_code == 200


def test_another_propertys_rows_are_never_counted(desk: Desk) -> None:
    with desk.client("root") as client:
        assert pager_text(client.get("/findings")) == "rows 1-200 of 480"
        assert pager_text(client.get("/findings", params={"property": "p2"})) == "rows 1-30 of 30"
    with desk.client() as client:
        assert pager_text(client.get("/findings")) == "rows 1-200 of 450"
        assert pager_text(client.get("/findings", params={"property": "p1", "page": "3"})) == (
            "rows 401-450 of 450"
        )


def test_the_nights_overview_pages_over_property_nights(desk: Desk) -> None:
    chosen = {"night_from": FIRST_NIGHT, "night_to": NIGHT}
    with desk.client() as client:
        first = client.get("/nights", params=chosen)
        second = client.get(pager_link(first, "next") or "no next link")
    assert pager_text(first) == "rows 1-100 of 150" and pager_text(second) == "rows 101-150 of 150"
    assert pager_link(second, "prev") == f"/nights?night_from={FIRST_NIGHT}&night_to={NIGHT}&page=1"
    shown = NIGHT_LINK.findall(first.text) + NIGHT_LINK.findall(second.text)
    assert shown == [("p1", night_before(days)) for days in range(P1_NIGHTS)]
    with desk.client("root") as client:
        both = client.get("/nights", params={**chosen, "page": "2"})
    assert pager_text(both) == "rows 101-180 of 180"  # p2's 30 nights are the latest: on page 1
    assert {property_id for property_id, _ in NIGHT_LINK.findall(both.text)} == {"p1"}


def test_the_adjustments_queue_and_the_payouts_page(desk: Desk) -> None:
    with desk.engine.begin() as connection:
        connection.execute(
            insert(adjustments),
            [adjustment(f"adj_{i:024x}", "p1", "proposed", 100 + i) for i in range(201)]
            + [adjustment(f"adj_{1000 + i:024x}", "p2", "proposed", 100) for i in range(5)],
        )
        connection.execute(
            insert(payouts),
            [payout_row(f"po_{i:03d}", "p1") for i in range(201)] + [payout_row("po_p2", "p2")],
        )
    with desk.client() as client:
        queue = [client.get("/adjustments", params={"state": "proposed", "page": n}) for n in ("1", "2")]
        listed = [client.get("/payouts", params={"page": n}) for n in ("1", "2")]
    assert [pager_text(page) for page in queue] == ["rows 1-200 of 201", "rows 201-201 of 201"]
    adjusted = [re.findall(r'href="/adjustments/(adj_[0-9a-f]+)"', page.text) for page in queue]
    assert sorted(adjusted[0] + adjusted[1]) == [f"adj_{i:024x}" for i in range(201)]
    assert pager_link(queue[0], "next") == "/adjustments?state=proposed&page=2"
    assert [pager_text(page) for page in listed] == ["rows 1-200 of 201", "rows 201-201 of 201"]
    paid = [re.findall(r'href="/payouts/(po_[^"]+)"', page.text) for page in listed]
    assert paid[0] + paid[1] == [f"po_{i:03d}" for i in range(201)]
