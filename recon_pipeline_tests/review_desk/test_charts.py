"""The overview's charts (``review_desk/charts.py``), read as XML without a browser: every mark carries the
figure it draws, bars stack to their column's total on a round axis, the rate line skips a night with
nothing to rate, the heat map darkens with money, and labels are escaped text."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from recon_pipeline.review_desk.charts import (
    EMPTY_CELL,
    HEAT_HIGH,
    Series,
    compact,
    heat_colour,
    heat_map,
    nice_ceiling,
    stacked_bars,
)

SVG = "{http://www.w3.org/2000/svg}"
COLUMNS = [("2026-12-01", "12-01"), ("2026-12-02", "12-02"), ("2026-12-03", "12-03")]


def parsed(markup: str) -> ET.Element:
    return ET.fromstring(str(markup))


def marks(svg: ET.Element, tag: str) -> list[ET.Element]:
    return [element for element in svg.iter(f"{SVG}{tag}") if "data-value" in element.attrib]


@pytest.mark.fast
def test_stacked_bars_carry_each_figure_and_stack_to_the_columns_total() -> None:
    series = [
        Series("amount_mismatch", "Amount differs", "#0072b2", (1500, 0, 250)),
        Series("missing_in_ledger", "Missing in the ledger", "#e69f00", (500, 700, 0)),
    ]
    svg = parsed(stacked_bars("money", "Open money", COLUMNS, series, compact))
    bars = marks(svg, "rect")
    assert {(r.get("data-column"), r.get("data-series"), r.get("data-value")) for r in bars} == {
        ("2026-12-01", "amount_mismatch", "1500"),
        ("2026-12-01", "missing_in_ledger", "500"),
        ("2026-12-03", "amount_mismatch", "250"),
        ("2026-12-02", "missing_in_ledger", "700"),
    }  # a zero draws no bar
    totals = {t.get("data-column"): (t.get("data-value"), t.text) for t in marks(svg, "text")}
    assert totals == {
        "2026-12-01": ("2000", "2.0k"),
        "2026-12-02": ("700", "700"),
        "2026-12-03": ("250", "250"),
    }
    # heights in proportion: the axis tops at 2,000 (the largest total, already round)
    height = {(r.get("data-column"), r.get("data-series")): float(r.get("height", "0")) for r in bars}
    assert height[("2026-12-01", "amount_mismatch")] == pytest.approx(
        3 * height[("2026-12-01", "missing_in_ledger")], abs=0.2
    )
    first = [r for r in bars if r.get("data-column") == "2026-12-01"]
    lower, upper = sorted(first, key=lambda r: -float(r.get("y", "0")))
    assert float(upper.get("y", "0")) + float(upper.get("height", "0")) == pytest.approx(
        float(lower.get("y", "0")), abs=0.11
    )
    assert [t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "column"] == [
        "12-01",
        "12-02",
        "12-03",
    ]
    assert svg.get("role") == "img" and svg.findtext(f"{SVG}title") == "Open money"
    assert all("style" not in element.attrib for element in svg.iter())  # the CSP allows no inline style


@pytest.mark.fast
def test_a_rate_line_skips_a_night_without_a_rate_and_a_short_series_is_refused() -> None:
    counts = [Series("matched", "Matched", "#0072b2", (3, 0, 4))]
    rate = Series("rate", "Match rate", "#b8002e", (0.75, math.nan, 1.0))
    svg = parsed(stacked_bars("matching", "Matching", COLUMNS, counts, compact, rate))
    points = {c.get("data-column"): c.get("data-value") for c in marks(svg, "circle")}
    assert points == {"2026-12-01": "0.75", "2026-12-03": "1"}
    assert [t.text for t in svg.iter(f"{SVG}text") if t.get("fill") == "#b8002e"] == [
        "0 %",
        "25 %",
        "50 %",
        "75 %",
        "100 %",
    ]
    with pytest.raises(ValueError, match="series matched has 2 values for 3 columns"):
        stacked_bars("x", "x", COLUMNS, [Series("matched", "Matched", "#000000", (1, 2))], compact)


@pytest.mark.fast
def test_the_heat_map_darkens_with_money_and_escapes_its_labels() -> None:
    values = {("rome", "2026-12-01"): 100, ("rome", "2026-12-02"): 400, ("<b>x</b>", "2026-12-01"): 50}
    markup = heat_map("heat", "Where the money is", ["rome", "<b>x</b>"], COLUMNS[:2], values, compact)
    assert "<b>" not in markup and "&lt;b&gt;x&lt;/b&gt;" in markup
    svg = parsed(markup)
    cells = {
        (r.get("data-row"), r.get("data-column")): (r.get("data-value"), r.get("fill"))
        for r in marks(svg, "rect")
    }
    assert cells[("rome", "2026-12-02")] == ("400", "#" + "".join(f"{c:02x}" for c in HEAT_HIGH))
    assert cells[("<b>x</b>", "2026-12-02")] == ("0", EMPTY_CELL)
    assert cells[("rome", "2026-12-01")][1] == heat_colour(100, 400) != heat_colour(50, 400)
    assert [t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "row"] == ["rome", "<b>x</b>"]


@pytest.mark.fast
@pytest.mark.parametrize(
    ("value", "ceiling"), [(0, 1), (7, 10), (10, 10), (11, 20), (2001, 2500), (0.3, 0.5), (26_000, 50_000)]
)
def test_the_axis_tops_at_a_round_figure(value: float, ceiling: float) -> None:
    assert nice_ceiling(value) == pytest.approx(ceiling)


@pytest.mark.fast
@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0"), (950, "950"), (1234, "1.2k"), (34_000, "34k"), (1_500_000, "1.5M"), (2.5, "2.5")],
)
def test_compact_figures(value: float, text: str) -> None:
    assert compact(value) == text
