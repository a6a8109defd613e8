"""The self-contained HTML report of one property-night: tables rendered here, charts drawn by inline JS.

The page loads nothing: CSS and JS are inline and a Content-Security-Policy forbids every fetch, so it
opens the same from a mail attachment, a file share or an air-gapped laptop. The figures are embedded
once as JSON in ``<script type="application/json" id="report-data">``; at load the script draws one
``rect.bar[data-category]`` per category with findings into ``svg#chart-by-category`` and one
``rect.bar[data-night]`` per night with findings (the last 30 nights, ending at this one) into
``svg#chart-by-night``. Both SVGs are empty in the source, so a drawn bar proves the script ran.
Bar lengths are amounts in the property's currency; each bar's label names every currency.

Everything on the page comes from the database (``discrepancies``, ``adjustments``, ``properties``,
``matches``, ``night_takings``), so any host renders it on demand, any time after the night's run
committed. The night's takings (``reconcile/takings.py``) are kept: the page shows them per tender and the
cards per brand on both sides, PMS against provider, with the difference. The run's other reference
figures (provider and ledger totals, matched amount and count, timing differences) live only in the run
and its Dagster metadata, never in the database: the page leaves them out rather than show figures it
cannot read back.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import pandas as pd

from recon_pipeline.categories import ALL_CATEGORIES, CURRENCY_MISMATCH
from recon_pipeline.keys import parse_night
from recon_pipeline.money import format_minor
from recon_pipeline.nights import night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.reconcile.matching.words import RULE_WORDS, matches_sentence
from recon_pipeline.reconcile.report import (
    BRAND_HEADER,
    TENDER_HEADER,
    brand_cells,
    category_summary,
    finding_amounts,
    summed_difference,
    tender_cells,
    top_findings,
)
from recon_pipeline.reconcile.takings import NightTakings

NIGHTS_SHOWN = 30
TOP_SHOWN = 20
MATCHES_SHOWN = 200  # a PMS-style night matches most of its movements: the desk lists them all


@dataclass(frozen=True)
class ReportPage:
    """What the page shows: the property-night's rows of ``discrepancies`` and its recent nights."""

    property_row: PropertyRow
    night: str
    findings: pd.DataFrame  # the night's outstanding rows of ``discrepancies``, with ``adjustment``
    cleared: int  # the night's rows a later run no longer saw (in the exports, not on the page)
    recent: pd.DataFrame  # night, category, currency, difference_minor of the last NIGHTS_SHOWN nights
    files: Sequence[str]  # names of the exports beside the page, linked from it
    matches: pd.DataFrame | None = None  # the night's current rows of ``matches``; None: none read
    takings: NightTakings | None = None  # the night's ``night_takings``; None: none read


def first_night_shown(night: str) -> date:
    """The oldest night of the by-night chart."""
    return parse_night(night) - timedelta(days=NIGHTS_SHOWN - 1)


def report_data(page: ReportPage) -> dict[str, Any]:
    """The figures the charts draw, as plain JSON values; labels are formatted here, not in JS."""
    currency = page.property_row.currency
    first = first_night_shown(page.night)
    nights = [(first + timedelta(days=offset)).isoformat() for offset in range(NIGHTS_SHOWN)]
    return {
        "property_id": page.property_row.property_id,
        "night": page.night,
        "currency": currency,
        "categories": _bars("category", ALL_CATEGORIES, page.findings, currency),
        "nights": _bars("night", nights, page.recent, currency),
    }


def render_report_html(page: ReportPage) -> str:
    """The whole page as one string; every value from the data is escaped."""
    row = page.property_row
    title = f"Reconciliation of {row.property_id}, night {page.night}"
    return _PAGE.format(
        title=_e(title),
        css=_CSS,
        heading=_e(title),
        subtitle=_e(_subtitle(row, page.night)),
        counts=_e(f"{len(page.findings)} outstanding findings, {page.cleared} cleared by a later run"),
        currency=_e(row.currency),
        nights_shown=NIGHTS_SHOWN,
        categories=_category_table(page.findings, row.currency),
        top=_top_table(page.findings),
        top_shown=TOP_SHOWN,
        files=_files_paragraph(page.files),
        matches=_matches_section(page.matches),
        takings=_takings_section(page.takings),
        data=_json_for_script(report_data(page)),
        script=_SCRIPT,
    )


def served_content_security_policy() -> str:
    """The page's Content-Security-Policy header for a server that serves it (the review desk).

    The page's own ``<meta>`` policy allows inline CSS and JS wholesale, which a file opened from disk
    needs; a served page names its one ``<style>`` and one ``<script>`` by their SHA-256 instead, so no
    other inline code could run even if some text escaped its cell, and denies framing (which a ``<meta>``
    policy cannot). The JSON ``<script type="application/json">`` is data, never run, so it needs none."""
    return (
        f"default-src 'none'; style-src {_sha256_source(_CSS)}; script-src {_sha256_source(_SCRIPT)}; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def _sha256_source(inline: str) -> str:
    digest = base64.b64encode(hashlib.sha256(inline.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


def _bars(column: str, keys: Sequence[str], findings: pd.DataFrame, currency: str) -> list[dict[str, Any]]:
    """One bar per key of ``column`` (its findings' count, length and label), in one pass over plain values:
    filtering the frame once per bar cost more than the rest of the page (39 bars per report)."""
    counts: dict[str, int] = {}
    sums: dict[str, dict[str, int]] = {}  # key → currency → sum of |difference|
    rows = zip(
        findings[column].tolist(),
        findings["category"].tolist(),
        findings["currency"].tolist(),
        findings["difference_minor"].tolist(),
        strict=True,
    )
    for key, category, code, difference in rows:
        counts[key] = counts.get(key, 0) + 1
        if category != CURRENCY_MISMATCH:  # counts, but adds no amount (none exists)
            by_currency = sums.setdefault(key, {})
            by_currency[str(code)] = by_currency.get(str(code), 0) + abs(int(difference))
    return [{column: key, **_bar(counts.get(key, 0), sums.get(key, {}), currency)} for key in keys]


def _bar(count: int, by_currency: dict[str, int], currency: str) -> dict[str, Any]:
    """Count, length (the amount in the property's currency) and label (every currency) of one bar."""
    amounts = " + ".join(format_minor(total, code) for code, total in sorted(by_currency.items()))
    return {
        "count": count,
        "amount_minor": by_currency.get(currency, 0),
        "label": f"{count} finding{'' if count == 1 else 's'}" + (f" · {amounts}" if amounts else ""),
    }


def _subtitle(row: PropertyRow, night: str) -> str:
    window = night_window(parse_night(night), row.timezone, row.night_cutoff)
    return (
        f"{row.name} · {row.timezone}, cutoff {row.night_cutoff} · "
        f"UTC {window.start:%Y-%m-%d %H:%M} to {window.end:%Y-%m-%d %H:%M} · currency {row.currency}"
    )


def _files_paragraph(names: Sequence[str]) -> str:
    """Links to the exports rendered beside the page; nothing when it was rendered alone."""
    if not names:
        return ""
    links = " ".join(f'<a href="{_e(name)}">{_e(name)}</a>' for name in names)
    return f'<p class="files">Every discrepancy with every column: {links}</p>'


def _category_table(findings: pd.DataFrame, property_currency: str) -> str:
    """Every category; one without findings shows 0 in the property's currency, a currency mismatch no
    sum (its sides are in different currencies)."""
    rows = []
    for category, currency, count, amount in category_summary(findings).itertuples(index=False):
        code = currency or property_currency
        rows.append(
            _tr(
                [category, code, str(count), summed_difference(category, amount, code)],
                {"data-category": category, "data-currency": code},
            )
        )
    return _table("category-table", ["category", "currency", "findings", "sum of abs. difference"], rows)


def _top_table(findings: pd.DataFrame) -> str:
    rows = [
        _tr(
            [
                finding["category"],
                finding["record_key"],
                _text(finding["booking_id"]),
                *finding_amounts(finding),
                _text(finding["review_status"]),
                _text(finding["adjustment"]),
                _text(finding["detail"]),
            ]
        )
        for finding in top_findings(findings, TOP_SHOWN).to_dict("records")
    ]
    header = [
        *("category", "record", "booking", "provider", "ledger", "difference", "review", "adjustment"),
        "detail",
    ]
    return _table("top-discrepancies", header, rows)


def _matches_section(matches: pd.DataFrame | None) -> str:
    """The night's matches beyond the provider's id: how many each rule made, in words, what waits for a
    person, and each match (rule, records, entries, amounts, detail). Matches by the provider's id are the
    run's figure, not stored, so the page leaves them out (see the module's docstring)."""
    if matches is None:
        return ""
    statuses = matches["status"].astype("object").tolist()
    rules = matches["rule"].astype("object").tolist()
    counts: dict[str, int] = {}
    for rule, status in zip(rules, statuses, strict=True):
        if status in ("matched", "confirmed"):
            counted = "person" if status == "confirmed" else str(rule)
            counts[counted] = counts.get(counted, 0) + 1
    said = [matches_sentence(counts) or "Nothing matched beyond the provider's id"]
    for status, words in (("suggested", "waiting for a person"), ("rejected", "rejected by a person")):
        waiting = statuses.count(status)
        if waiting:
            said.append(f"{waiting} suggestion{'' if waiting == 1 else 's'} {words}")
    rows = [
        _tr(
            [
                RULE_WORDS.get(str(match["rule"]), str(match["rule"])),
                str(match["status"]),
                ""
                if match["score"] is None or bool(pd.isna(match["score"]))
                else f"{float(match['score']):.2f}",
                _text(match["provider_record_ids"]),
                _text(match["ledger_entry_ids"]),
                _amount(match["provider_amount_minor"], match["currency"]),
                _amount(match["ledger_amount_minor"], match["currency"]),
                _text(match["detail"]),
            ],
            {"data-rule": str(match["rule"]), "data-status": str(match["status"])},
        )
        for match in matches.head(MATCHES_SHOWN).to_dict("records")
    ]
    more = len(matches) - len(rows)
    header = ["rule", "status", "score", "provider records", "ledger entries", "provider", "ledger", "detail"]
    return (
        f'<h2>Matches</h2>\n<p id="matches-by-rule">{_e("; ".join(said))}.</p>\n'
        + _table("matches", header, rows)
        + (f'\n<p class="note">and {more} more in the review desk</p>' if more > 0 else "")
    )


def _takings_section(takings: NightTakings | None) -> str:
    """The night's takings per tender (count and sum per currency) and its cards per brand, the PMS's
    against the provider's with the difference (provider − PMS); a note for a night whose run kept none."""
    if takings is None:
        return ""
    tenders = [
        _tr(tender_cells(t), {"data-tender": t.name, "data-currency": t.currency}) for t in takings.tenders()
    ]
    if not tenders:
        return '<h2>Takings</h2>\n<p class="note">No takings kept for this night.</p>'
    brands = [
        _tr(brand_cells(b), {"data-brand": b.brand, "data-currency": b.currency}) for b in takings.brands()
    ]
    return (
        "<h2>Takings by tender</h2>\n"
        + _table("takings-by-tender", TENDER_HEADER, tenders)
        + "\n<h2>Cards by brand</h2>\n"
        + "<p class=\"note\">Card and unrecorded tenders: the PMS's entries against the provider's settled "
        + "payments and refunds; the difference is the provider's less the PMS's.</p>\n"
        + _table("cards-by-brand", BRAND_HEADER, brands)
    )


def _amount(minor: object, currency: object) -> str:
    if minor is None or bool(pd.isna(minor)):
        return ""
    if currency is None or bool(pd.isna(currency)):
        return f"{int(minor):,}"  # type: ignore[call-overload]
    return format_minor(int(minor), str(currency))  # type: ignore[call-overload]


def _table(table_id: str, header: Sequence[str], rows: Sequence[str]) -> str:
    head = "".join(f"<th>{_e(name)}</th>" for name in header)
    body = "\n".join(rows) or f'<tr><td colspan="{len(header)}">none</td></tr>'
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>'


def _tr(cells: Sequence[str], attributes: dict[str, str] | None = None) -> str:
    attrs = "".join(f' {name}="{_e(value)}"' for name, value in (attributes or {}).items())
    return f"<tr{attrs}>" + "".join(f"<td>{_e(cell)}</td>" for cell in cells) + "</tr>"


def _text(value: object) -> str:
    return "" if value is None or bool(pd.isna(value)) else str(value)


def _e(value: str) -> str:
    return html.escape(value, quote=True)


def _json_for_script(data: dict[str, Any]) -> str:
    """JSON that cannot end its <script> element early: ``</`` → ``<\\/`` and ``<!--`` → ``\\u003c!--``."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "\\u003c!--")


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" \
content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<h1>{heading}</h1>
<p class="subtitle">{subtitle}</p>
<p>{counts}</p>
<h2>Discrepancies by category</h2>
<p class="note">Bar length: sum of |difference| in {currency}; labels list every currency.</p>
<svg id="chart-by-category" viewBox="0 0 760 230" role="img" \
aria-label="discrepancy amounts by category"></svg>
{categories}
<h2>Discrepancies per night, last {nights_shown} nights</h2>
<p class="note">Bar height: sum of |difference| in {currency} of every finding of the night; \
the number above a bar counts its findings.</p>
<svg id="chart-by-night" viewBox="0 0 760 240" role="img" aria-label="discrepancy amounts per night"></svg>
<h2>Largest discrepancies (up to {top_shown})</h2>
{top}
{takings}
{matches}
{files}
<script type="application/json" id="report-data">{data}</script>
<script>{script}</script>
</body>
</html>
"""

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 980px; color: #1d2430; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.15em; margin-top: 1.8em; }
.subtitle, .note { color: #5b6472; } .note { font-size: .9em; margin: .2em 0; }
table { border-collapse: collapse; margin: .6em 0; width: 100%; }
th, td { border-bottom: 1px solid #dde1e7; padding: .3em .5em; text-align: left; vertical-align: top; }
td { font-variant-numeric: tabular-nums; }
#top-discrepancies td:nth-child(-n+2) { word-break: break-all; }
#top-discrepancies td:nth-child(n+4):nth-child(-n+6) { white-space: nowrap; text-align: right; }
#matches td:nth-child(4), #matches td:nth-child(5) { word-break: break-all; }
#matches td:nth-child(6), #matches td:nth-child(7) { white-space: nowrap; text-align: right; }
#takings-by-tender td:nth-child(n+3), #cards-by-brand td:nth-child(n+3) {
  white-space: nowrap; text-align: right; }
svg { width: 100%; height: auto; background: #f7f8fa; border-radius: 4px; }
rect.bar { fill: #3b6fb6; } rect.bar[data-current="true"] { fill: #c2410c; }
text { font: 11px system-ui, sans-serif; fill: #1d2430; } text.axis { fill: #5b6472; }
"""

# Draws the bars from #report-data. The SVG namespace is read from the element itself, so the page holds
# no URL at all.
_SCRIPT = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  function add(svg, name, attrs, text) {
    var node = document.createElementNS(svg.namespaceURI, name);
    Object.keys(attrs).forEach(function (key) { node.setAttribute(key, String(attrs[key])); });
    if (text !== undefined) { node.textContent = text; }
    svg.appendChild(node);
    return node;
  }
  function largest(bars) {
    return Math.max(1, Math.max.apply(null, bars.map(function (bar) { return bar.amount_minor; })));
  }
  function byCategory(svg, bars) {
    var box = svg.viewBox.baseVal, left = 190, right = 230, row = box.height / bars.length;
    var scale = (box.width - left - right) / largest(bars);
    bars.forEach(function (bar, index) {
      var y = index * row;
      add(svg, "text", {x: 6, y: y + row / 2 + 4}, bar.category);
      if (bar.count === 0) { return; }
      var width = Math.max(2, bar.amount_minor * scale);
      var rect = add(svg, "rect", {"class": "bar", "data-category": bar.category,
        x: left, y: y + row * 0.2, width: width, height: row * 0.6});
      add(rect, "title", {}, bar.category + ": " + bar.label);
      add(svg, "text", {x: left + width + 6, y: y + row / 2 + 4}, bar.label);
    });
  }
  function byNight(svg, bars, current) {
    var box = svg.viewBox.baseVal, top = 18, bottom = 30, side = 16;
    var slot = (box.width - 2 * side) / bars.length, base = box.height - bottom;
    var scale = (base - top) / largest(bars);
    bars.forEach(function (bar, index) {
      var middle = side + (index + 0.5) * slot;
      if ((bars.length - 1 - index) % 5 === 0) {
        add(svg, "text", {"class": "axis", x: middle, y: base + 18, "text-anchor": "middle"},
          bar.night.slice(5));
      }
      if (bar.count === 0) { return; }
      var height = Math.max(2, bar.amount_minor * scale);
      var rect = add(svg, "rect", {"class": "bar", "data-night": bar.night,
        "data-current": String(bar.night === current), x: middle - slot * 0.35, y: base - height,
        width: slot * 0.7, height: height});
      add(rect, "title", {}, bar.night + ": " + bar.label);
      add(svg, "text", {x: middle, y: base - height - 4, "text-anchor": "middle"}, String(bar.count));
    });
  }
  byCategory(document.getElementById("chart-by-category"), data.categories);
  byNight(document.getElementById("chart-by-night"), data.nights, data.night);
})();
"""
