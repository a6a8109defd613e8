"""The findings list with its filters, and a finding's detail; both narrowed to the user's properties."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recon_pipeline.reconcile.categories import ALL_CATEGORIES
from recon_pipeline.review.rules import REVIEW_STATUSES, DiscrepancyFilter
from recon_pipeline.review_desk import findings
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk

FILTERS = ("property", "night_from", "night_to", "category", "status", "cleared", "amount_at_least")


def routes(desk: Desk) -> list[Route]:
    async def findings_list(request: Request, user: ReviewUser) -> Response:
        params = request.query_params
        try:
            query = parse_finding_query(params, user)
        except ValueError as error:
            return desk.page(
                request, "findings.html", user, 400, rows=[], error=str(error), **_choices(params, user)
            )
        with desk.engine.connect() as connection:
            rows = findings.list_findings(connection, query, user.properties)
        return desk.page(request, "findings.html", user, rows=rows, error=None, **_choices(params, user))

    async def finding_detail(request: Request, user: ReviewUser) -> Response:
        discrepancy_id = parse_id(request.path_params["discrepancy_id"])
        row = None
        if discrepancy_id is not None:
            with desk.engine.connect() as connection:
                row = findings.get_finding(connection, discrepancy_id, user.properties)
        if row is None:
            return desk.not_found(request, user)
        desk.audit(user.name, "view_finding", str(row["discrepancy_id"]), int(row["difference_minor"]))
        return desk.page(request, "finding.html", user, row=row)

    return [
        Route("/findings", desk.signed_in(findings_list), methods=["GET"]),
        Route("/findings/{discrepancy_id}", desk.signed_in(finding_detail), methods=["GET"]),
    ]


def parse_id(raw: str) -> int | None:
    """A row id from a URL or form: digits only, at most 18 of them; None for anything else."""
    if raw.isascii() and raw.isdigit() and len(raw) <= 18:
        return int(raw)
    return None


def optional_param(params: Any, name: str) -> str | None:
    """A query parameter's value without surrounding blanks; None when absent or blank."""
    value = params.get(name, "").strip()
    return value or None


def parse_finding_query(params: Any, user: ReviewUser) -> findings.FindingQuery:
    """The page's filters, validated; a property outside the user's is refused like an unknown one."""
    property_id = optional_param(params, "property")
    if property_id is not None and property_id not in user.properties:
        raise ValueError(f"unknown property {property_id!r}")
    cleared_text = optional_param(params, "cleared")
    if cleared_text not in (None, "yes", "no"):
        raise ValueError("cleared is yes or no")
    amount_text = optional_param(params, "amount_at_least")
    if amount_text is not None and parse_id(amount_text) is None:
        raise ValueError("amount at least is a whole number of minor units")
    return findings.FindingQuery(
        DiscrepancyFilter(
            property_id=property_id,
            category=optional_param(params, "category"),
            status=optional_param(params, "status"),
            cleared=None if cleared_text is None else cleared_text == "yes",
        ),
        night_from=optional_param(params, "night_from"),
        night_to=optional_param(params, "night_to"),
        amount_at_least=None if amount_text is None else int(amount_text),
    )


def _choices(params: Any, user: ReviewUser) -> dict[str, Any]:
    given = {name: params.get(name, "") for name in FILTERS}
    return {
        "params": given,
        "export_query": urlencode({name: value for name, value in given.items() if value}),
        "properties": user.properties,
        "categories": ALL_CATEGORIES,
        "statuses": REVIEW_STATUSES,
    }
