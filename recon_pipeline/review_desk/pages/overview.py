"""The overview (``/overview``): charts of what is at stake over the latest nights of the user's
properties, how old the open findings are, where the money is (property × night), how well the matcher
did, and the latest night's close; every chart's figures in a table under it. Narrowed to the user's
properties like every page (a ``property`` filter may only name one of them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recon_pipeline.money import minor_unit_exponent
from recon_pipeline.review_desk import charts, overview
from recon_pipeline.review_desk.pages.filters import optional_param, users_property
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk
from recon_pipeline.words import MATCH_STATE_WORDS, REVIEW_STATE_WORDS, category_label

FILTERS = ("nights", "currency", "property")
SHOWN_CATEGORIES = 7  # the money chart's parts; the rest are summed as "other"
OTHER = "other"
STATUS_COLOURS = {"matched": "#0072b2", "confirmed": "#009e73", "suggested": "#e69f00", "rejected": "#8a94a3"}


def routes(desk: Desk) -> list[Route]:
    async def overview_page(request: Request, user: ReviewUser) -> Response:
        params = request.query_params
        shown = {name: params.get(name, "") for name in FILTERS}
        try:
            query = parse_overview_query(params, user)
        except ValueError as error:
            return desk.page(
                request,
                "overview.html",
                user,
                400,
                params=shown,
                error=str(error),
                figures=None,
                properties=user.properties,
                max_nights=overview.MAX_NIGHTS,
            )
        with desk.engine.connect() as connection:
            figures = overview_figures(connection, query, user.properties, desk.clock())
        return desk.page(
            request,
            "overview.html",
            user,
            params=shown,
            error=None,
            figures=figures,
            properties=user.properties,
            max_nights=overview.MAX_NIGHTS,
        )

    return [Route("/overview", desk.signed_in(overview_page), methods=["GET"])]


def parse_overview_query(params: Any, user: ReviewUser) -> overview.OverviewQuery:
    """The overview's filters, validated; a property outside the user's is refused like an unknown one."""
    raw = optional_param(params, "nights")
    if raw is not None and not (raw.isascii() and raw.isdigit() and len(raw) <= 3):
        raise ValueError(f"nights must be a whole number from 1 to {overview.MAX_NIGHTS}")
    currency = optional_param(params, "currency")
    return overview.OverviewQuery(
        int(raw) if raw is not None else overview.DEFAULT_NIGHTS,
        currency.upper() if currency is not None else None,
        users_property(params, user),
    )


def overview_figures(
    connection: Any, query: overview.OverviewQuery, properties: tuple[str, ...], now: Any
) -> dict[str, Any]:
    """Everything the overview shows, charts drawn."""
    allowed = (query.property_id,) if query.property_id is not None else properties
    nights = overview.latest_nights(connection, allowed, query.nights)
    currencies = overview.open_currencies(connection, allowed, nights)
    currency = query.currency or (currencies[0] if currencies else None)
    rows = overview.open_money(connection, allowed, nights, currency) if currency else []
    columns = [(night, night[5:]) for night in nights]
    money_text = _money_text(currency)
    money_series = _category_series(overview.by_category(rows), nights)
    heat = overview.by_property_night(rows)
    heat_rows = overview.worst_first(heat, allowed)
    ages = overview.open_by_age(connection, allowed, now)
    age_columns = [(str(at), bucket.label) for at, bucket in enumerate(ages)]
    age_series = [
        charts.Series("open", REVIEW_STATE_WORDS["open"], "#d55e00", tuple(b.open for b in ages)),
        charts.Series(
            "acknowledged", REVIEW_STATE_WORDS["acknowledged"], "#0072b2", tuple(b.acknowledged for b in ages)
        ),
    ]
    matched = overview.night_matches(connection, allowed, nights)
    match_series = [
        charts.Series(
            status,
            MATCH_STATE_WORDS[status],
            STATUS_COLOURS[status],
            tuple(night.counts.get(status, 0) for night in matched),
        )
        for status in overview.MATCH_STATUSES
    ]
    rate = charts.Series("rate", "Match rate", charts.LINE_COLOUR, tuple(night.rate for night in matched))
    close_key = overview.latest_close(connection, allowed)
    close = overview.night_close(connection, close_key, properties)
    return {
        "nights": nights,
        "currency": currency,
        "currencies": currencies,
        "money": {
            "chart": charts.stacked_bars(
                "money-chart",
                f"Open money per category and night, {currency}",
                columns,
                money_series,
                money_text,
            ),
            "series": money_series,
            "columns": columns,
        },
        "heat": {
            "chart": charts.heat_map(
                "heat-chart",
                f"Open money per property and night, {currency}",
                heat_rows,
                columns,
                heat,
                money_text,
            ),
            "rows": heat_rows,
            "values": heat,
        },
        "ages": {
            "chart": charts.stacked_bars(
                "age-chart", "Open findings by age", age_columns, age_series, charts.compact
            ),
            "series": age_series,
            "buckets": ages,
        },
        "matches": {
            "chart": charts.stacked_bars(
                "match-chart",
                "Matcher rows per night by status, and the match rate",
                columns,
                match_series,
                charts.compact,
                rate,
            ),
            "series": [*match_series, rate],
            "nights": matched,
        },
        "close": {"key": close_key, "tenders": close.tenders(), "brands": close.brands()},
    }


def _money_text(currency: str | None) -> Callable[[float], str]:
    """An amount in minor units as an axis shows it: major units, compact."""
    exponent = minor_unit_exponent(currency) if currency else 0
    return lambda minor: charts.compact(minor / 10**exponent)


def _category_series(sums: dict[str, dict[str, int]], nights: Sequence[str]) -> list[charts.Series]:
    """The money chart's parts: the ``SHOWN_CATEGORIES`` categories with the most money, then the rest."""
    shown = list(sums.items())[:SHOWN_CATEGORIES]
    rest = list(sums.values())[SHOWN_CATEGORIES:]
    series = [
        charts.Series(
            category,
            category_label(category),
            charts.colour_of(at),
            tuple(per_night.get(night, 0) for night in nights),
        )
        for at, (category, per_night) in enumerate(shown)
    ]
    if rest:
        series.append(
            charts.Series(
                OTHER,
                "Other categories",
                charts.OTHER_COLOUR,
                tuple(sum(one.get(night, 0) for one in rest) for night in nights),
            )
        )
    return series
