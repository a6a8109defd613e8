"""Working the desk's lists on a real server over SQLite and PostgreSQL: sorting by a column, searching by
booking, provider id, ledger reference or amount (major units), per-currency totals over every page that
equal the database's sums, a reversed range refused in one message, and a finding's page that keeps its
list (back, previous, next) through a review."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, insert, select

from recon_pipeline.db.schema import discrepancies, ledger_entries, matches, payouts
from recon_pipeline.review_desk.findings import PAGE_SIZE
from recon_pipeline_tests.support.desk_fixtures import (
    NIGHT,
    NOW,
    add_user,
    finding,
    finding_ids,
    post_form,
    served_desk,
    sign_in,
)
from recon_pipeline_tests.support.desk_rows import payout_row
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.match_rows import match_row

EARLIER = "2026-11-20"
FILLERS = PAGE_SIZE + 10  # p1's small findings of EARLIER: the list has two pages
SIX_DAYS_AGO = datetime.now(UTC) - timedelta(days=6, hours=1)
# p1's findings of NIGHT by record key: (difference, currency, more facts)
SPECIAL: dict[str, tuple[int, str, dict[str, Any]]] = {
    "big": (12_050, "EUR", {"booking_id": "bk_42", "provider_record_id": "ch_big"}),
    "refund": (-12_050, "EUR", {"booking_id": "bk_42"}),
    "mid": (15_000, "EUR", {"ledger_entry_id": "le_ref", "detected_at": SIX_DAYS_AGO}),
    "yen": (121, "JPY", {}),
    "yen-small": (120, "JPY", {}),
    "fx": (0, "EUR", {"category": "currency_mismatch", "ledger_currency": "GBP"}),
}


@dataclass
class Desk:
    engine: Engine
    base_url: str
    ids: dict[str, int]

    @contextmanager
    def client(self, name: str = "ana") -> Iterator[httpx.Client]:
        with loopback_client(base_url=self.base_url) as client:
            assert sign_in(client, name).status_code == 303
            yield client


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    """p1: the ``SPECIAL`` findings of NIGHT and ``FILLERS`` of EARLIER (1 to FILLERS cents); p2: a
    finding of booking bk_42 that ana (analyst of p1) never sees; payouts and matches of both."""
    with served_desk(database_url, monkeypatch) as served:
        with served.engine.begin() as connection:
            connection.execute(
                insert(discrepancies),
                [finding("p1", f"f-{i:03d}", i + 1, night=EARLIER) for i in range(FILLERS)]
                + [finding("p2", "other", 12_050, booking_id="bk_42")],
            )
            for key, (difference, currency, facts) in SPECIAL.items():
                connection.execute(
                    insert(discrepancies), finding("p1", key, difference, currency=currency, **facts)
                )
            connection.execute(
                insert(ledger_entries),
                {
                    "entry_id": "le_ref",
                    "property_id": "p1",
                    "kind": "payment",
                    "amount_minor": 15_000,
                    "currency": "EUR",
                    "posted_at": NOW,
                    "reference": "INV-7",
                },
            )
            connection.execute(
                insert(payouts),
                [
                    payout_row("po_a", "p1", amount_minor=5_000),
                    payout_row("po_b", "p1", amount_minor=12_050),
                    payout_row("po_c", "p1", amount_minor=7_000, currency="GBP"),
                    payout_row("po_x", "p2", amount_minor=99_999),
                ],
            )
            connection.execute(
                insert(matches),
                [
                    {
                        **match_row(["ch_1"], ["le_1"], amount=3_000),
                        "property_id": "p1",
                        "night": NIGHT,
                        "detected_at": NOW,
                    },
                    {
                        **match_row(["ch_2"], ["le_2"], amount=12_050),
                        "property_id": "p1",
                        "night": NIGHT,
                        "detected_at": NOW,
                    },
                    {
                        **match_row(["ch_9"], ["le_9"], amount=1),
                        "property_id": "p2",
                        "night": NIGHT,
                        "detected_at": NOW,
                    },
                ],
            )
            ids = finding_ids(connection)
        add_user("ana", "analyst", "p1")
        yield Desk(served.engine, served.base_url, ids)


def body(page: httpx.Response) -> str:
    """The list table's body (its footer and everything else left out)."""
    assert page.status_code == 200, page.text
    return page.text.split("<tbody>", 1)[1].split("</tbody>", 1)[0]


def row_ids(page: httpx.Response) -> list[str]:
    return re.findall(r'<tr data-id="([^"]+)">', body(page))


def listed_keys(desk: Desk, page: httpx.Response) -> list[str]:
    by_id = {str(i): key for key, i in desk.ids.items()}
    return [by_id[i] for i in row_ids(page)]


def amounts(page: httpx.Response) -> list[int]:
    return [int(minor) for minor in re.findall(r'class="amount" data-minor="(-?\d+)"', body(page))]


def footer(page: httpx.Response) -> list[tuple[str, int, int]]:
    """The totals rows: (currency, rows, amount in minor units)."""
    foot = page.text.split("<tfoot>", 1)[1].split("</tfoot>", 1)[0]
    found = re.findall(
        r'<tr class="total" data-currency="(\w+)" data-rows="(\d+)">.*?data-minor="(-?\d+)"', foot, re.S
    )
    return [(currency, int(rows), int(minor)) for currency, rows, minor in found]


def error_of(page: httpx.Response) -> str:
    assert page.status_code == 400
    (message,) = re.findall(r'<p class="error" role="alert">([^<]*)</p>', page.text)
    return html.unescape(message)


def test_findings_sort_by_any_column_either_way(desk: Desk) -> None:
    on_night = {"night_from": NIGHT, "night_to": NIGHT, "currency": "EUR"}
    with desk.client() as client:
        ascending = client.get("/findings", params={**on_night, "sort": "difference"})
        assert amounts(ascending) == [-12_050, 0, 12_050, 15_000]
        assert '<th aria-sort="ascending"><a href="/findings?' in ascending.text
        header = re.search(r'<th aria-sort="ascending"><a href="([^"]+)">Difference</a>', ascending.text)
        assert header is not None and "sort=-difference" in html.unescape(header.group(1))
        descending = client.get("/findings", params={**on_night, "sort": "-difference"})
        assert amounts(descending) == [15_000, 12_050, 0, -12_050]
        by_record = client.get("/findings", params={**on_night, "sort": "record"})
        assert listed_keys(desk, by_record) == ["big", "fx", "mid", "refund"]
        oldest_first = client.get("/findings", params={**on_night, "sort": "-age"})
        assert listed_keys(desk, oldest_first)[0] == "mid"
        assert "sort 'amount' is not a column of this list" in error_of(
            client.get("/findings", params={"sort": "amount"})
        )


def test_findings_search_by_booking_ids_reference_and_amount(desk: Desk) -> None:
    def found(**params: str) -> set[str]:
        return set(listed_keys(desk, client.get("/findings", params=params)))

    with desk.client() as client:
        assert found(q="bk_42") == {"big", "refund"} == found(booking="bk_42")  # p2's never
        assert found(q="ch_big") == {"big"}
        assert found(q="le_ref") == {"mid"} == found(q="INV-7")  # the ledger entry's reference
        assert found(q="f-20") == {f"f-{i:03d}" for i in range(200, FILLERS)}  # a part of a record key
        assert found(q="120.50") == {"big", "refund"}  # either sign; 120.5 JPY is no amount
        assert found(q="120..200") == {"big", "refund", "mid", "yen", "yen-small"}  # in each row's currency
        assert found(q="120..200", currency="JPY") == {"yen", "yen-small"}
        assert error_of(client.get("/findings", params={"q": "200..100"})) == (
            "search amount from 200 is more than search amount to 100"
        )


def test_amount_at_least_is_in_major_units_of_each_rows_currency(desk: Desk) -> None:
    def found(**params: str) -> set[str]:
        return set(listed_keys(desk, client.get("/findings", params=params)))

    with desk.client() as client:
        assert found(amount_at_least="120.50") == {"big", "refund", "mid", "yen"}  # 121 yen, not 120
        assert found(amount_at_least="121", currency="JPY") == {"yen"}
        assert found(amount_at_least="150", currency="eur") == {"mid"}
        assert "amount at least '1.5' has more decimals than JPY has (0)" in error_of(
            client.get("/findings", params={"amount_at_least": "1.5", "currency": "JPY"})
        )
        assert "amount at least '100 EUR' is not an amount in major units" in error_of(
            client.get("/findings", params={"amount_at_least": "100 EUR"})
        )


def test_a_reversed_night_range_is_one_clear_message(desk: Desk) -> None:
    with desk.client() as client:
        for path in ("/findings", "/nights"):
            reversed_range = client.get(path, params={"night_from": "2026-12-03", "night_to": "2026-12-01"})
            assert error_of(reversed_range) == "night from 2026-12-03 is after night to 2026-12-01"
        reversed_arrival = client.get("/payouts", params={"arrival_from": NIGHT, "arrival_to": EARLIER})
        assert error_of(reversed_arrival) == f"arrival from {NIGHT} is after arrival to {EARLIER}"


def test_findings_show_words_age_and_both_currencies(desk: Desk) -> None:
    with desk.client() as client:
        page = client.get("/findings", params={"night_from": NIGHT})
    rows = dict(re.findall(r'<tr data-id="(\d+)">(.*?)</tr>', body(page), re.S))
    fx = rows[str(desk.ids["fx"])]
    assert "EUR ≠ GBP" in fx and "0.00 EUR" not in fx
    assert '<a class="category" href="/legend#currency_mismatch" title="Both sides have the money' in fx
    assert ">Currency differs</a>" in fx and "<td>Open</td>" in fx
    assert "open 6 days" in rows[str(desk.ids["mid"])]
    assert 'aria-label="Select finding' in fx and 'action="/findings/bulk/confirm"' in page.text


def test_totals_per_currency_cover_every_page_and_equal_the_database(desk: Desk) -> None:
    with desk.engine.connect() as connection:
        d = discrepancies.c
        grouped = (
            select(d.currency, func.count(), func.sum(d.difference_minor))
            .where(d.property_id == "p1")
            .group_by(d.currency)
            .order_by(d.currency)
        )
        expected = [(currency, int(n), int(total)) for currency, n, total in connection.execute(grouped)]
    with desk.client() as client:
        first = client.get("/findings")
        second = client.get("/findings", params={"page": "2"})
        assert len(row_ids(first)) == PAGE_SIZE and row_ids(second)
        assert footer(first) == footer(second) == expected
        assert "Total EUR (" in first.text.split("<tfoot>", 1)[1]
        searched = client.get("/findings", params={"q": "bk_42"})
        assert footer(searched) == [("EUR", 2, 0)] and sum(amounts(searched)) == 0


def test_a_finding_page_keeps_the_list_through_previous_next_and_a_review(desk: Desk) -> None:
    params = {"status": "open", "currency": "EUR", "night_from": NIGHT, "sort": "difference"}
    with desk.client() as client:
        listing = client.get("/findings", params=params)
        ordered = row_ids(listing)  # refund, fx, big, mid
        links = re.findall(r'<a href="(/findings/\d+\?[^"]+)">', body(listing))
        query = html.unescape(links[0]).split("?", 1)[1]
        assert query == "night_from=2026-12-02&status=open&currency=EUR&sort=difference"
        second = client.get(f"/findings/{ordered[1]}?{query}")
        assert f'id="back-to-list" href="/findings?{html.escape(query)}"' in second.text
        assert f'rel="prev" href="/findings/{ordered[0]}?{html.escape(query)}"' in second.text
        assert f'rel="next" href="/findings/{ordered[2]}?{html.escape(query)}"' in second.text
        first = client.get(f"/findings/{ordered[0]}?{query}")
        assert 'rel="prev"' not in first.text and f'rel="next" href="/findings/{ordered[1]}?' in first.text

        reviewed = post_form(
            client,
            f"/findings/{ordered[1]}/review",
            {"action": "acknowledge", "comment": "seen", "back": query},
        )
        assert reviewed.status_code == 303
        assert reviewed.headers["location"] == f"/findings/{ordered[1]}?{query}"
        after = client.get(reviewed.headers["location"])  # acknowledged: off the open-only list
        assert "no longer in this list (3 left)" in after.text
        assert f'rel="prev" href="/findings/{ordered[0]}?' in after.text
        assert f'rel="next" href="/findings/{ordered[2]}?' in after.text
        assert row_ids(client.get("/findings", params=params)) == [ordered[0], *ordered[2:]]


def test_payouts_matches_and_nights_sort_search_and_total(desk: Desk) -> None:
    with desk.client() as client:
        by_amount = client.get("/payouts", params={"sort": "-amount"})
        assert row_ids(by_amount) == ["po_b", "po_c", "po_a"]  # p2's po_x never
        assert footer(by_amount) == [("EUR", 2, 17_050), ("GBP", 1, 7_000)]
        assert row_ids(client.get("/payouts", params={"q": "120.50"})) == ["po_b"]
        assert row_ids(client.get("/payouts", params={"q": "po_a"})) == ["po_a"]

        by_amount = client.get("/matches", params={"sort": "provider_amount"})
        assert amounts(by_amount)[::2] == [3_000, 12_050]
        assert footer(by_amount) == [("EUR", 2, 15_050)]
        assert len(row_ids(client.get("/matches", params={"q": "le_2"}))) == 1
        assert len(row_ids(client.get("/matches", params={"q": "30.00"}))) == 1

        overview = client.get("/nights", params={"sort": "night"})
        assert row_ids(overview) == [f"p1/{EARLIER}", f"p1/{NIGHT}"]
        outstanding = sum(i + 1 for i in range(FILLERS)) + 12_050 * 2 + 15_000
        assert footer(overview) == [("EUR", FILLERS + 4, outstanding), ("JPY", 2, 241)]
        assert row_ids(client.get("/nights", params={"q": "bk_42"})) == [f"p1/{NIGHT}"]


@pytest.mark.parametrize("path", ["/findings", "/adjustments", "/payouts", "/matches", "/nights"])
def test_a_control_character_in_a_search_or_filter_is_refused_not_a_match_for_every_row(
    desk: Desk, path: str
) -> None:
    """SQLite ends a LIKE pattern at a NUL, so ``q=%00`` listed every row; PostgreSQL refuses NUL in
    text. Either way the list says why, and its export too."""
    with desk.client() as client:
        for params in ({"q": "\x00"}, {"q": "bk\x00_42"}, {"q": "bk\n42"}, {"q": "a\x1bb"}):
            page = client.get(path, params=params)
            assert error_of(page) == "search must not hold control characters"  # a 400, no rows
        booking = client.get("/findings", params={"booking": "bk_42\x00"})
        assert error_of(booking) == "booking must not hold control characters"
        exported = client.get(f"{path}/export.csv", params={"q": "\x00"})
    assert (exported.status_code, exported.text) == (400, "search must not hold control characters")
