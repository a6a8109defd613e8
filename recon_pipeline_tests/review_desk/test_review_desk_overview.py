"""The overview (``/overview``) on the analyst's night: every chart draws the database's figures (read back
from the served SVG and checked against SQL, on SQLite and PostgreSQL), it shows only the user's properties,
and its filters are checked. In Chromium at 1,366 x 768: no page logs a Content-Security-Policy violation
(Pico's icons come from files), keyboard focus is visible, and text and links meet WCAG AA contrast."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select

from recon_pipeline.db.schema import discrepancies, matches, night_takings
from recon_pipeline_tests.review_desk.screenshots import APPROVER, analyst_desk, desk_pages, sign_in
from recon_pipeline_tests.support.analyst_night import NIGHTS, PROPERTY_IDS
from recon_pipeline_tests.support.browser import LAPTOP_VIEWPORT, chromium_page
from recon_pipeline_tests.support.desk_fixtures import ServedDesk, add_user
from recon_pipeline_tests.support.desk_fixtures import sign_in as sign_in_over_http

SVG = "{http://www.w3.org/2000/svg}"
SOLO = "sol"  # an analyst of the first property only
AA = 4.5  # WCAG 2 AA for body-size text

d = discrepancies.c


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedDesk]:
    with analyst_desk(database_url, monkeypatch) as served:
        add_user(SOLO, "analyst", PROPERTY_IDS[0])
        yield served


def overview(desk: ServedDesk, name: str = APPROVER, **params: str) -> httpx.Response:
    with desk.client() as client:
        sign_in_over_http(client, name)
        return client.get("/overview", params=params)


def chart(page: httpx.Response, chart_id: str) -> ET.Element:
    found = re.search(rf'<svg [^>]*id="{chart_id}".*?</svg>', page.text, re.S)
    assert found, f"no chart {chart_id}"
    return ET.fromstring(found.group(0))


def drawn(svg: ET.Element, *keys: str) -> dict[tuple[str, ...], float]:
    """Each mark's figure by the data attributes ``keys`` (a mark without a figure is an axis or a label)."""
    return {
        tuple(mark.get(f"data-{key}", "") for key in keys): float(mark.get("data-value", "0"))
        for mark in svg.iter()
        if mark.tag in (f"{SVG}rect", f"{SVG}circle") and "data-value" in mark.attrib
    }


def open_money(engine: Engine, properties: tuple[str, ...]) -> dict[tuple[str, str, str, str], int]:
    """Open money per (currency, property, night, category), summed in SQL."""
    statement = (
        select(d.currency, d.property_id, d.night, d.category, func.sum(func.abs(d.difference_minor)))
        .where(d.property_id.in_(properties), d.cleared_at.is_(None), d.review_status != "resolved")
        .group_by(d.currency, d.property_id, d.night, d.category)
    )
    with engine.connect() as connection:
        return {tuple(row[:4]): int(row[4]) for row in connection.execute(statement)}  # type: ignore[misc]


@pytest.mark.slow  # seeds the analyst's night of 273 findings and serves it
def test_every_chart_draws_the_databases_figures(desk: ServedDesk) -> None:
    page = overview(desk)
    assert page.status_code == 200, page.text
    money = open_money(desk.engine, PROPERTY_IDS)
    with desk.engine.connect() as connection:
        currency = connection.execute(  # the currency of the most open findings, chosen by default
            select(d.currency)
            .where(d.property_id.in_(PROPERTY_IDS), d.cleared_at.is_(None), d.review_status != "resolved")
            .group_by(d.currency)
            .order_by(func.count().desc(), d.currency)
            .limit(1)
        ).scalar_one()
    assert f"Money at stake per category, {currency}" in page.text

    by_night_category: dict[tuple[str, str], int] = defaultdict(int)
    by_property_night: dict[tuple[str, str], int] = defaultdict(int)
    for (code, property_id, night, category), amount in money.items():
        if code == currency:
            by_night_category[(night, category)] += amount
            by_property_night[(property_id, night)] += amount
    bars = drawn(chart(page, "money-chart"), "column", "series")
    assert {night for night, _series in bars} == set(NIGHTS)
    shown = {series for _night, series in bars} - {"other"}
    assert {key: value for key, value in bars.items() if key[1] != "other"} == {
        key: amount for key, amount in by_night_category.items() if key[1] in shown
    }
    for night in NIGHTS:  # the categories past the palette are summed as "other": nothing is lost
        assert sum(v for (n, _s), v in bars.items() if n == night) == sum(
            v for (n, _c), v in by_night_category.items() if n == night
        )
    heat = drawn(chart(page, "heat-chart"), "row", "column")
    assert heat == {(p, n): by_property_night.get((p, n), 0) for p in PROPERTY_IDS for n in NIGHTS}

    now = datetime.now(UTC)
    with desk.engine.connect() as connection:
        detected = connection.execute(
            select(d.detected_at, d.review_status).where(
                d.property_id.in_(PROPERTY_IDS), d.cleared_at.is_(None), d.review_status != "resolved"
            )
        ).all()
        statuses = connection.execute(
            select(matches.c.night, matches.c.status, func.count())
            .where(matches.c.cleared_at.is_(None))
            .group_by(matches.c.night, matches.c.status)
        ).all()
        latest = connection.execute(
            select(night_takings.c.property_id, night_takings.c.night)
            .order_by(night_takings.c.night.desc(), night_takings.c.property_id)
            .limit(1)
        ).one()
    ages: dict[tuple[str, str], int] = defaultdict(int)
    for detected_at, status in detected:
        age = now - (detected_at if detected_at.tzinfo else detected_at.replace(tzinfo=UTC))
        bucket = next((at for at, days in enumerate((1, 3, 7, 30)) if age < timedelta(days=days)), 4)
        ages[(str(bucket), status)] += 1
    assert drawn(chart(page, "age-chart"), "column", "series") == ages

    counted = drawn(chart(page, "match-chart"), "column", "series")
    assert {k: v for k, v in counted.items() if k[1] != "rate"} == {(n, s): c for n, s, c in statuses}
    for night in NIGHTS:
        rows = {s: c for n, s, c in statuses if n == night}
        if rows:
            settled = rows.get("matched", 0) + rows.get("confirmed", 0)
            assert counted[(night, "rate")] == pytest.approx(settled / sum(rows.values()), abs=1e-4)

    close = page.text[page.text.index('id="close"') :]
    assert f'href="/nights/{latest.property_id}/{latest.night}"' in close
    assert 'id="takings-by-tender"' in close and 'id="cards-by-brand"' in close


@pytest.mark.slow
def test_the_overview_shows_only_the_users_properties_and_checks_its_filters(desk: ServedDesk) -> None:
    mine, others = PROPERTY_IDS[0], PROPERTY_IDS[1:]
    page = overview(desk, SOLO)
    assert page.status_code == 200
    assert {row for row, _night in drawn(chart(page, "heat-chart"), "row", "column")} == {mine}
    assert not any(other in page.text for other in others)
    refused = [
        overview(desk, SOLO, property=others[0]),
        overview(desk, nights="0"),
        overview(desk, nights="many"),
        overview(desk, currency="EURO"),
    ]
    assert [response.status_code for response in refused] == [400, 400, 400, 400]
    assert "unknown property" in refused[0].text
    assert all("nights must be a whole number from 1 to 62" in r.text for r in refused[1:3])
    assert "&#39;EURO&#39; is not a three-letter code" in refused[3].text
    one_night = overview(desk, nights="1", property=PROPERTY_IDS[1])
    assert {night for _row, night in drawn(chart(one_night, "heat-chart"), "row", "column")} == {NIGHTS[-1]}
    with desk.client() as client:
        assert client.get("/overview").headers["location"] == "/signin"


def contrast(foreground: list[float], background: list[float]) -> float:
    """WCAG 2's contrast ratio of two sRGB colours (0-255 channels)."""

    def luminance(rgb: list[float]) -> float:
        linear = [
            c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb[:3]
        ]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


# Each sampled element's text colour and the first opaque background behind it, as [r, g, b] lists.
COLOURS_JS = """selector => [...document.querySelectorAll(selector)].slice(0, 3).map(element => {
  const rgb = text => text.match(/[\\d.]+/g).map(Number);
  let behind = element, background = [255, 255, 255];
  while (behind) {
    const colour = rgb(getComputedStyle(behind).backgroundColor);
    if (colour.length < 4 || colour[3] > 0) { background = colour; break; }
    behind = behind.parentElement;
  }
  return [rgb(getComputedStyle(element).color), background];
})"""
SAMPLED = ("main p", "main a", "header nav a", "thead th", "tbody td", "main label", "figcaption")


@pytest.mark.slow  # drives Chromium
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_in_chromium_no_page_breaks_the_policy_focus_shows_and_text_meets_aa(
    desk: ServedDesk, request: pytest.FixtureRequest
) -> None:
    low: dict[str, float] = {}
    with chromium_page(request.node.name, viewport=LAPTOP_VIEWPORT) as watched:
        page = watched.page
        sign_in(page, desk.base_url, APPROVER)
        for name, path in desk_pages(desk.engine).items():
            response = page.goto(f"{desk.base_url}{path}")
            assert response is not None and response.status == 200, path
            for selector in SAMPLED:
                for foreground, background in page.evaluate(COLOURS_JS, selector):
                    ratio = contrast(foreground, background)
                    if ratio < AA:
                        low[f"{name} {selector}"] = round(ratio, 2)
        assert watched.console_errors == [] and watched.page_errors == []  # a CSP violation logs an error
        icons = [url for url in watched.requested_urls if "/static/vendor/pico/icons/" in url]
        assert icons, "Pico's icons are served as files"

        page.goto(f"{desk.base_url}/overview")
        charts = page.locator("figure.chart > svg")
        assert charts.count() == 4
        assert all(charts.nth(at).bounding_box()["width"] > 300 for at in range(4))  # type: ignore[index]
        focus: dict[str, Any] = {}
        for _press in range(5):
            page.keyboard.press("Tab")
            focus = page.evaluate(
                """() => { const e = document.activeElement, s = getComputedStyle(e);
                return {tag: e.tagName, style: s.outlineStyle, width: parseFloat(s.outlineWidth),
                        colour: s.outlineColor.match(/[\\d.]+/g).map(Number)}; }"""
            )
            if focus["tag"] == "A":
                break
    assert low == {}, f"below AA ({AA}:1): {low}"
    assert focus["tag"] == "A" and focus["style"] == "solid" and focus["width"] >= 2
    assert contrast(focus["colour"], [255, 255, 255]) >= 3  # a focus ring must stand out (WCAG 1.4.11)
