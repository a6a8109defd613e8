"""The nights overview (property × night) and a night's page; both narrowed to the user's properties.

The overview's query parameters (property, night_from, night_to) and the night page's path are a contract:
the Dagster asset metadata links to ``/nights?night_from=N&night_to=N`` and ``/nights/{property_id}/{night}``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recon_pipeline.keys import parse_night
from recon_pipeline.review_desk import findings, nights
from recon_pipeline.review_desk.listing import CurrencyTotal, parse_sort, totals
from recon_pipeline.review_desk.pages.filters import optional_param, users_property
from recon_pipeline.review_desk.paging import Page, count_rows, parse_page
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk
from recon_pipeline.storage.findings import FindingFilter

FILTERS = ("property", "night_from", "night_to", "q", "sort")


def routes(desk: Desk) -> list[Route]:
    def overview(request: Request, user: ReviewUser) -> Response:
        params = request.query_params
        choices: dict[str, Any] = {
            "params": {name: params.get(name, "") for name in FILTERS},
            "properties": user.properties,
            "list_name": "nights",
            "sort_columns": nights.SORT_COLUMNS,
        }
        try:
            query = parse_night_query(params, user)
            number = parse_page(params)
        except ValueError as error:
            return desk.page(
                request,
                "nights.html",
                user,
                400,
                rows=[],
                page=None,
                totals=[],
                sort=nights.DEFAULT_SORT,
                error=str(error),
                **choices,
            )
        with desk.engine.connect() as connection:
            chosen = nights.chosen_statement(connection, query, user.properties)
            keys: list[nights.PropertyNight] = []
            page = Page(number, nights.PAGE_SIZE, 0)
            sums: list[CurrencyTotal] = []
            if chosen is not None:
                page = Page(number, nights.PAGE_SIZE, count_rows(connection, chosen))
                keys = nights.keys_of(connection, chosen.limit(page.size).offset(page.offset))
                sums = totals(
                    connection, nights.outstanding_statement(chosen, user.properties), "amount_minor"
                )
            rows = nights.summarise(connection, keys, user.properties)
        return desk.page(
            request,
            "nights.html",
            user,
            rows=_shown(rows),
            page=page,
            totals=sums,
            sort=query.sort,
            error=None,
            **choices,
        )

    def night_page(request: Request, user: ReviewUser) -> Response:
        property_id = request.path_params["property_id"]
        night = request.path_params["night"]
        if property_id not in user.properties or not _is_night(night):
            return desk.not_found(request, user)
        with desk.engine.connect() as connection:
            (summary,) = nights.summarise(connection, [(property_id, night)], user.properties)
            query = findings.FindingQuery(FindingFilter(property_id=property_id), night, night)
            found = findings.list_findings(connection, query, user.properties)
            adjusted = nights.night_adjustments(connection, property_id, night, user.properties)
            takings = nights.night_takings(connection, property_id, night, user.properties)
        return desk.page(
            request,
            "night.html",
            user,
            row=_shown([summary])[0],
            findings=found,
            adjustments=adjusted,
            tenders=takings.tenders(),
            brands=takings.brands(),
            empty=summary.is_empty and not found and not takings.lines,
        )

    return [
        Route("/nights", desk.signed_in(overview), methods=["GET"]),
        Route("/nights/{property_id}/{night}", desk.signed_in(night_page), methods=["GET"]),
    ]


def parse_night_query(params: Any, user: ReviewUser) -> nights.NightQuery:
    """The overview's filters, validated; a property outside the user's is refused like an unknown one."""
    property_id = users_property(params, user)
    return nights.NightQuery(
        property_id,
        optional_param(params, "night_from"),
        optional_param(params, "night_to"),
        optional_param(params, "q"),
        parse_sort(params, nights.SORT_COLUMNS, nights.DEFAULT_SORT.word),
    )


def _is_night(text: str) -> bool:
    try:
        parse_night(text)
    except ValueError:
        return False
    return True


def _shown(rows: list[nights.NightSummary]) -> list[dict[str, Any]]:
    """Each summary with its freshness text, as of now (the page's one reading of the clock)."""
    now = datetime.now(UTC)
    return [{"summary": row, "freshness": nights.freshness(row, now)} for row in rows]
