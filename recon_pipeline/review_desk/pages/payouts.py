"""The payouts list with its filters and a payout's page; both narrowed to the user's holder properties."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recon_pipeline.providers.payouts import PAYOUT_STATUSES
from recon_pipeline.review_desk import payouts
from recon_pipeline.review_desk.listing import parse_sort, totals
from recon_pipeline.review_desk.pages.filters import holds_control_character, optional_param, users_property
from recon_pipeline.review_desk.paging import Page, count_rows, parse_page
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk

FILTERS = ("property", "arrival_from", "arrival_to", "status", "q", "sort")
MAX_PAYOUT_ID_LENGTH = 255


def routes(desk: Desk) -> list[Route]:
    def payouts_list(request: Request, user: ReviewUser) -> Response:
        params = request.query_params
        choices: dict[str, Any] = {
            "params": {name: params.get(name, "") for name in FILTERS},
            "properties": user.properties,
            "statuses": PAYOUT_STATUSES,
            "list_name": "payouts",
            "sort_columns": payouts.SORT_COLUMNS,
        }
        try:
            query = parse_payout_query(params, user)
            number = parse_page(params)
        except ValueError as error:
            return desk.page(
                request,
                "payouts.html",
                user,
                400,
                rows=[],
                page=None,
                totals=[],
                sort=payouts.DEFAULT_SORT,
                error=str(error),
                **choices,
            )
        with desk.engine.connect() as connection:
            statement = payouts.payouts_statement(query, user.properties, payouts.PAGE_SIZE)
            page = Page(number, payouts.PAGE_SIZE, count_rows(connection, statement))
            rows = payouts.list_payouts(connection, query, user.properties, page.offset)
            sums = totals(connection, statement, "amount_minor")
        return desk.page(
            request,
            "payouts.html",
            user,
            rows=rows,
            page=page,
            totals=sums,
            sort=query.sort,
            error=None,
            **choices,
        )

    def payout_page(request: Request, user: ReviewUser) -> Response:
        payout_id = request.path_params["payout_id"]
        row = None
        if len(payout_id) <= MAX_PAYOUT_ID_LENGTH and not holds_control_character(payout_id):
            with desk.engine.connect() as connection:
                row = payouts.get_payout(connection, payout_id, user.properties)
                moved = [] if row is None else payouts.transactions_of(connection, payout_id, user.properties)
                traced = "" if row is None else payouts.traced_reason(connection, row)
        if row is None:
            return desk.not_found(request, user)
        return desk.page(request, "payout.html", user, row=row, transactions=moved, traced=traced)

    return [
        Route("/payouts", desk.signed_in(payouts_list), methods=["GET"]),
        Route("/payouts/{payout_id}", desk.signed_in(payout_page), methods=["GET"]),
    ]


def parse_payout_query(params: Any, user: ReviewUser) -> payouts.PayoutQuery:
    """The page's filters, validated; a property outside the user's is refused like an unknown one."""
    property_id = users_property(params, user)
    return payouts.PayoutQuery(
        property_id,
        optional_param(params, "arrival_from"),
        optional_param(params, "arrival_to"),
        optional_param(params, "status"),
        optional_param(params, "q"),
        parse_sort(params, payouts.SORT_COLUMNS, payouts.DEFAULT_SORT.word),
    )
