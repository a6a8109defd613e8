"""The overview's charts as SVG drawn on the server (pure): numbers in, markup out, no script and no style
attribute, so the desk's Content-Security-Policy holds and a test reads a chart's figures without a browser.

Every mark carries its figures (``data-column``, ``data-series``, ``data-value``) and a ``<title>`` a
pointer shows; the page puts the same figures in a table under each chart. Colours are the Okabe-Ito
palette (told apart with the common colour blindnesses); text is the page's dark grey on white (AA).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from markupsafe import Markup, escape

PALETTE: Final = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
OTHER_COLOUR: Final = "#8a94a3"
LINE_COLOUR: Final = "#b8002e"
TEXT_COLOUR: Final = "#373c44"  # Pico's text colour: 10.4:1 on white
RULE_COLOUR: Final = "#cfd6df"
HEAT_LOW: Final = (255, 241, 230)  # the lightest cell with money; an empty cell is EMPTY_CELL
HEAT_HIGH: Final = (127, 29, 29)
EMPTY_CELL: Final = "#f3f4f6"
WIDTH: Final = 640
HEIGHT: Final = 260
LEFT, RIGHT, TOP, BOTTOM = 64, 48, 16, 40  # room for the value axis, the rate axis, totals and column labels
TICKS: Final = 4
LABEL_WIDTH: Final = 34  # a column label's room: "12-06" in the chart's type
FONT: Final = 'font-family="system-ui, sans-serif" font-size="11"'

ValueText = Callable[[float], str]


@dataclass(frozen=True)
class Series:
    """One coloured part of every column: ``values`` holds its figure in each column, in column order."""

    key: str
    label: str
    colour: str
    values: tuple[float, ...]


def colour_of(at: int) -> str:
    """The palette's ``at``-th colour; past the palette, the grey that stands for "other"."""
    return PALETTE[at] if at < len(PALETTE) else OTHER_COLOUR


def nice_ceiling(value: float) -> float:
    """The axis's top: the smallest 1, 2, 2.5 or 5 times a power of ten at or above ``value`` (1 for none)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # pragma: no cover - the loop's last step always holds


def _attrs(**values: object) -> str:
    """XML attributes, escaped; a float to one decimal; an underscore in a name is a hyphen
    (``data_value`` → ``data-value``), a trailing one dropped (``class_`` → ``class``)."""
    shown = {name.rstrip("_").replace("_", "-"): value for name, value in values.items()}
    return " ".join(
        f'{name}="{escape(f"{value:.1f}" if isinstance(value, float) else value)}"'
        for name, value in shown.items()
    )


def _element(tag: str, content: str = "", **attributes: object) -> str:
    """One SVG element; ``content`` is markup already escaped."""
    return f"<{tag} {_attrs(**attributes)}>{content}</{tag}>"


def _text(
    x: float, y: float, words: str, anchor: str = "middle", fill: str = TEXT_COLOUR, **more: object
) -> str:
    return _element("text", str(escape(words)), x=x, y=y, text_anchor=anchor, fill=fill, **more)


def _title(*parts: str) -> str:
    """A mark's tooltip: its column, its series, its figure."""
    return f"<title>{escape(', '.join(parts[:-1]))}: {escape(parts[-1])}</title>"


def _number(value: float) -> str:
    """A figure as an attribute holds it: a whole number without ``.0``."""
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")


def _svg(label: str, chart_id: str, width: int, height: int, body: list[str]) -> Markup:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" {_attrs(viewBox=f"0 0 {width} {height}", role="img")} '
        f"{_attrs(aria_labelledby=f'{chart_id}-title', id=chart_id)} {FONT}>"
        f'<title id="{escape(chart_id)}-title">{escape(label)}</title>'
    )
    return Markup(head + "".join(body) + "</svg>")


def stacked_bars(
    chart_id: str,
    label: str,
    columns: Sequence[tuple[str, str]],
    series: Sequence[Series],
    value_text: ValueText,
    rate: Series | None = None,
) -> Markup:
    """Columns of stacked bars, one part per series, each column's total above it; ``columns``: (key, label
    shown under it). ``rate``: a line of shares (0 to 1; NaN: none) over the bars, on a 0-100 % axis at
    the right."""
    for one in (*series, *((rate,) if rate else ())):
        if len(one.values) != len(columns):
            raise ValueError(f"series {one.key} has {len(one.values)} values for {len(columns)} columns")
    totals = [sum(one.values[at] for one in series) for at in range(len(columns))]
    top = nice_ceiling(max(totals, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    base = TOP + plot_h
    slot = plot_w / max(len(columns), 1)
    bar_w = max(min(slot * 0.7, 48), 2)
    every = math.ceil(len(columns) * LABEL_WIDTH / plot_w) or 1  # a column label every so many columns
    body = _value_axis(top, value_text, plot_w, plot_h)
    if rate is not None:
        body += _rate_axis(plot_w, plot_h)
    for at, (key, shown) in enumerate(columns):
        x = LEFT + at * slot + (slot - bar_w) / 2
        y = float(base)
        for one in series:
            value = one.values[at]
            if value <= 0:
                continue
            h = value / top * plot_h
            y -= h
            body.append(
                _element(
                    "rect",
                    _title(shown, one.label, value_text(value)),
                    **dict(
                        x=x, y=y, width=bar_w, height=h, fill=one.colour, stroke="#ffffff", stroke_width=0.5
                    ),
                    **dict(data_column=key, data_series=one.key, data_value=_number(value)),
                )
            )
        centre = x + bar_w / 2
        if totals[at] > 0:
            total = totals[at]
            body.append(
                _text(
                    centre,
                    y - 3,
                    value_text(total),
                    class_="total",
                    data_column=key,
                    data_value=_number(total),
                )
            )
        if at % every == 0:
            body.append(_text(centre, base + 14, shown, class_="column", data_column=key))
    if rate is not None:
        body += _rate_line(columns, rate, slot, plot_h)
    return _svg(label, chart_id, WIDTH, HEIGHT, body)


def _value_axis(top: float, value_text: ValueText, plot_w: float, plot_h: float) -> list[str]:
    lines = []
    for tick in range(TICKS + 1):
        value = top * tick / TICKS
        y = TOP + plot_h - plot_h * tick / TICKS
        lines.append(_element("line", x1=LEFT, x2=LEFT + plot_w, y1=y, y2=y, stroke=RULE_COLOUR))
        lines.append(_text(LEFT - 6, y + 4, value_text(value), anchor="end", class_="tick"))
    return lines


def _rate_axis(plot_w: float, plot_h: float) -> list[str]:
    x = LEFT + plot_w + 6
    return [
        _text(x, TOP + plot_h - plot_h * tick / TICKS + 4, f"{100 * tick // TICKS} %", "start", LINE_COLOUR)
        for tick in range(TICKS + 1)
    ]


def _rate_line(columns: Sequence[tuple[str, str]], rate: Series, slot: float, plot_h: float) -> list[str]:
    points = [
        (LEFT + at * slot + slot / 2, TOP + plot_h - min(max(value, 0.0), 1.0) * plot_h, key, shown, value)
        for at, ((key, shown), value) in enumerate(zip(columns, rate.values, strict=True))
        if not math.isnan(value)  # a column without a rate (nothing to rate) has no point
    ]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y, *_ in points)
    marks = [_element("polyline", points=path, fill="none", stroke=rate.colour, stroke_width=2)]
    marks += [
        _element(
            "circle",
            _title(shown, rate.label, f"{value:.0%}"),
            **dict(cx=x, cy=y, r=3.5, fill=rate.colour),
            **dict(data_column=key, data_series=rate.key, data_value=_number(value)),
        )
        for x, y, key, shown, value in points
    ]
    return marks


def heat_colour(value: float, top: float) -> str:
    """A cell's colour, light (little) to dark red (``top``: the most of any cell); an empty cell grey."""
    if value <= 0 or top <= 0:
        return EMPTY_CELL
    share = min(value / top, 1.0)
    low, high = HEAT_LOW, HEAT_HIGH
    return "#" + "".join(f"{round(a + (b - a) * share):02x}" for a, b in zip(low, high, strict=True))


def heat_map(
    chart_id: str,
    label: str,
    rows: Sequence[str],
    columns: Sequence[tuple[str, str]],
    values: Mapping[tuple[str, str], float],
    value_text: ValueText,
) -> Markup:
    """A grid of ``rows`` × ``columns`` (key, label), each cell coloured by its value (``values`` by (row,
    column key); a missing one is nothing): the darker, the more."""
    row_h, label_w, cell_w = 24, 120, max(min((WIDTH - 120 - 8) / max(len(columns), 1), 96), 6)
    height = TOP + row_h * len(rows) + BOTTOM
    top = max(values.values(), default=0)
    body = []
    for r, row in enumerate(rows):
        y = TOP + r * row_h
        body.append(_text(label_w - 6, y + row_h / 2 + 4, row, anchor="end", class_="row", data_row=row))
        for c, (key, shown) in enumerate(columns):
            value = values.get((row, key), 0)
            body.append(
                _element(
                    "rect",
                    _title(row, shown, value_text(value)),
                    **dict(x=label_w + c * cell_w, y=y, width=cell_w - 2, height=row_h - 2),
                    **dict(
                        fill=heat_colour(value, top), data_row=row, data_column=key, data_value=_number(value)
                    ),
                )
            )
    for c, (key, shown) in enumerate(columns):
        x = label_w + c * cell_w + (cell_w - 2) / 2
        body.append(_text(x, TOP + row_h * len(rows) + 14, shown, class_="column", data_column=key))
    return _svg(label, chart_id, WIDTH, height, body)


def compact(value: float) -> str:
    """A figure short enough for an axis or a bar's top: ``950``, ``1.2k``, ``34k``, ``1.5M``."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if abs(value) >= size:
            scaled = value / size
            return f"{scaled:.1f}{suffix}" if abs(scaled) < 10 else f"{scaled:.0f}{suffix}"
    return f"{value:.0f}" if float(value).is_integer() or abs(value) >= 10 else f"{value:.1f}"
