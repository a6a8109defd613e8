"""The adjustments queue, an adjustment's detail, and deciding them: select → confirm → decide.

Approving and rejecting go through a confirmation page that shows each adjustment's amount; the decision
carries that amount back (a hidden ``amount_seen_<id>`` per adjustment), so one whose amount moved since
is refused rather than approved blind. Each adjustment is decided in its own transaction with its audit
row: a refusal of one (amount changed, the same approver twice, no longer proposed) is shown beside it
and does not stop the others.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recon_pipeline.errors import ReviewError
from recon_pipeline.review.adjustments import APPROVE, REJECT, parse_adjustment_id, review_adjustment
from recon_pipeline.review.adjustments import review_history as adjustment_history
from recon_pipeline.review.rules import validate_note
from recon_pipeline.review_desk import adjustments
from recon_pipeline.review_desk.access import DECIDE_ADJUSTMENTS, may
from recon_pipeline.review_desk.audit import record_audit
from recon_pipeline.review_desk.finding_records import adjustment_corrects
from recon_pipeline.review_desk.findings import PAGE_SIZE
from recon_pipeline.review_desk.pages.filters import optional_param, users_property
from recon_pipeline.review_desk.pages.findings import parse_id
from recon_pipeline.review_desk.paging import Page, count_rows, parse_page
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk

FILTERS: Final = ("state", "property", "night_from", "night_to")
ACTIONS: Final = (APPROVE, REJECT)
COMMENT_FIELD: Final = "the Comment"


def routes(desk: Desk) -> list[Route]:
    async def queue(request: Request, user: ReviewUser) -> Response:
        params = request.query_params
        choices = _choices(params, user)
        try:
            query = parse_adjustment_query(params, user)
            number = parse_page(params)
        except ValueError as error:
            return desk.page(
                request, "adjustments.html", user, 400, rows=[], page=None, error=str(error), **choices
            )
        with desk.engine.connect() as connection:
            statement = adjustments.queue_statement(query, user.properties, PAGE_SIZE)
            page = Page(number, PAGE_SIZE, count_rows(connection, statement))
            rows = adjustments.list_queue(connection, query, user.properties, page.offset)
        return desk.page(request, "adjustments.html", user, rows=rows, page=page, error=None, **choices)

    async def detail(request: Request, user: ReviewUser) -> Response:
        with desk.engine.connect() as connection:
            found = _allowed(connection, [request.path_params["adjustment_id"]], user)
            if found is None:
                return desk.not_found(request, user)
            row = found[0]
            history = adjustment_history(connection, row["adjustment_id"])
            finding_id = adjustments.corrected_finding_id(connection, row)
            corrects = adjustment_corrects(connection, row)
        return desk.page(
            request,
            "adjustment.html",
            user,
            row=row,
            history=history,
            finding_id=finding_id,
            corrects=corrects,
            may_decide=may(user.role, DECIDE_ADJUSTMENTS),
        )

    async def confirm(request: Request, user: ReviewUser, form: FormData) -> Response:
        try:
            action, ids = _selection(form)
        except ValueError as error:
            return _bad_request(desk, request, user, str(error))
        with desk.engine.connect() as connection:
            rows = _allowed(connection, ids, user)
        if rows is None:
            return desk.not_found(request, user)
        return desk.page(request, "adjustments_confirm.html", user, action=action, rows=rows)

    async def decide(request: Request, user: ReviewUser, form: FormData) -> Response:
        try:
            action, ids = _selection(form)
            comment = validate_note(str(form.get("comment") or ""), COMMENT_FIELD)
            seen = {adjustment_id: _amount_seen(form, adjustment_id) for adjustment_id in ids}
        except ValueError as error:
            return _bad_request(desk, request, user, str(error))
        with desk.engine.connect() as connection:
            if _allowed(connection, ids, user) is None:
                return desk.not_found(request, user)
        results = [
            _decide_one(desk, user, action, adjustment_id, comment, seen[adjustment_id])
            for adjustment_id in ids
        ]
        return desk.page(request, "adjustments_decided.html", user, action=action, results=results)

    return [
        Route("/adjustments", desk.signed_in(queue), methods=["GET"]),
        Route("/adjustments/confirm", desk.requires(DECIDE_ADJUSTMENTS, confirm), methods=["POST"]),
        Route("/adjustments/decide", desk.requires(DECIDE_ADJUSTMENTS, decide), methods=["POST"]),
        Route("/adjustments/{adjustment_id}", desk.signed_in(detail), methods=["GET"]),
    ]


def _decide_one(
    desk: Desk, user: ReviewUser, action: str, adjustment_id: str, comment: str, amount_seen: int
) -> dict[str, Any]:
    """One adjustment's decision and its audit row in one transaction; a refusal is its result, not an
    error of the whole request."""
    try:
        with desk.engine.begin() as connection:
            outcome = review_adjustment(
                connection, adjustment_id, action, user.name, comment, amount_seen, datetime.now(UTC)
            )
            record_audit(connection, user.name, action, adjustment_id, amount_seen, outcome.summary)
    except ReviewError as error:
        return {"adjustment_id": adjustment_id, "refused": True, "message": str(error)}
    return {"adjustment_id": adjustment_id, "refused": False, "message": outcome.summary}


def _allowed(connection: Connection, raw_ids: list[str], user: ReviewUser) -> list[dict[str, Any]] | None:
    """The adjustments named, if every one is well formed, exists and is of the user's properties; None
    otherwise (the caller's 404: another property's adjustment looks like an unknown one)."""
    try:
        ids = [parse_adjustment_id(raw) for raw in raw_ids]
    except ValueError:
        return None
    rows = adjustments.get_adjustments(connection, ids, user.properties)
    return rows if len(rows) == len(set(ids)) else None


def _selection(form: FormData) -> tuple[str, list[str]]:
    """The action and the adjustment ids (each once) that the confirm and decide forms carry; ValueError
    with what is missing."""
    action = form.get("action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise ValueError("choose Approve or Reject")
    ids = list(dict.fromkeys(str(value) for value in form.getlist("adjustment_id")))
    if not ids:
        raise ValueError("select at least one adjustment")
    return action, ids


def _amount_seen(form: FormData, adjustment_id: str) -> int:
    """The amount (minor units, signed) the confirmation page showed for the adjustment."""
    raw = str(form.get(f"amount_seen_{adjustment_id}") or "").strip()
    digits = raw[1:] if raw.startswith("-") else raw
    if parse_id(digits) is None:
        raise ValueError(f"the amount seen of {adjustment_id} is missing or not whole minor units")
    return int(raw)


def _bad_request(desk: Desk, request: Request, user: ReviewUser, message: str) -> Response:
    return desk.page(request, "adjustments_error.html", user, 400, error=message)


def parse_adjustment_query(params: Any, user: ReviewUser) -> adjustments.AdjustmentQuery:
    """The queue's filters, validated; a property outside the user's is refused like an unknown one."""
    return adjustments.AdjustmentQuery(
        state=optional_param(params, "state"),
        property_id=users_property(params, user),
        night_from=optional_param(params, "night_from"),
        night_to=optional_param(params, "night_to"),
    )


def _choices(params: Any, user: ReviewUser) -> dict[str, Any]:
    return {
        "params": {name: params.get(name, "") for name in FILTERS},
        "properties": user.properties,
        "states": adjustments.QUEUE_STATES,
        "may_decide": may(user.role, DECIDE_ADJUSTMENTS),
    }
