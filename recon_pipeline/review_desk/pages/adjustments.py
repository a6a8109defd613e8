"""The adjustments queue, an adjustment's detail, and deciding them: select → confirm → decide.

Approving and rejecting go through a confirmation page that shows each adjustment's amount; the decision
carries that amount back (a hidden ``amount_seen_<id>`` per adjustment), so one whose amount moved since
is refused rather than approved blind. Each adjustment is decided in its own transaction with its audit
row: a refusal of one (amount changed, the same approver twice, no longer proposed) is shown beside it
and does not stop the others.

The queue opens on the ``decide`` tab unless a tab or a state is asked for (``?state=`` alone looks in
every tab); it sorts by any column (``?sort=``), searches (``?q=``) and totals the amounts per currency over
every page. An approver withdraws their own approval from the adjustment's page until posting begins
(``review.adjustments.withdraw_approval``), audited in the same transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from recon_pipeline.errors import ReviewError
from recon_pipeline.reconcile.lifecycle import APPROVED, PROPOSED
from recon_pipeline.review.adjustments import (
    APPROVE,
    REJECT,
    WITHDRAW_APPROVAL,
    live_approvers,
    parse_adjustment_id,
    review_adjustment,
    withdraw_approval,
)
from recon_pipeline.review.adjustments import review_history as adjustment_history
from recon_pipeline.review.rules import validate_note
from recon_pipeline.review_desk import adjustments
from recon_pipeline.review_desk.access import DECIDE_ADJUSTMENTS, may
from recon_pipeline.review_desk.audit import record_audit
from recon_pipeline.review_desk.finding_records import adjustment_corrects
from recon_pipeline.review_desk.findings import PAGE_SIZE
from recon_pipeline.review_desk.listing import Sort, parse_sort, totals
from recon_pipeline.review_desk.pages.filters import optional_param, users_property
from recon_pipeline.review_desk.pages.findings import parse_id
from recon_pipeline.review_desk.paging import Page, count_rows, parse_page
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk, filled_query
from recon_pipeline.storage.adjustments import AdjustmentFilter
from recon_pipeline.words import KIND_WORDS, QUEUE_STATE_WORDS

FILTERS: Final = ("tab", "state", "property", "night_from", "night_to", "q", "sort")
ACTIONS: Final = (APPROVE, REJECT)
COMMENT_FIELD: Final = "the Comment"


def routes(desk: Desk) -> list[Route]:
    def queue(request: Request, user: ReviewUser) -> Response:
        params = request.query_params
        choices = _choices(params, user)
        try:
            query = parse_adjustment_query(params, user)
            sort = parse_adjustment_sort(params)
            number = parse_page(params)
        except ValueError as error:
            return desk.page(
                request,
                "adjustments.html",
                user,
                400,
                rows=[],
                page=None,
                totals=[],
                error=str(error),
                **choices,
            )
        with desk.engine.connect() as connection:
            statement = adjustments.queue_statement(query, user.properties, PAGE_SIZE, sort=sort)
            page = Page(number, PAGE_SIZE, count_rows(connection, statement))
            rows = adjustments.list_queue(connection, statement.offset(page.offset))
            sums = totals(connection, statement, "amount_minor")
        choices.update(sort=sort, tab=query.tab)
        return desk.page(
            request, "adjustments.html", user, rows=rows, page=page, totals=sums, error=None, **choices
        )

    def detail(request: Request, user: ReviewUser) -> Response:
        with desk.engine.connect() as connection:
            found = _allowed(connection, [request.path_params["adjustment_id"]], user)
            if found is None:
                return desk.not_found(request, user)
            row = found[0]
            history = adjustment_history(connection, row["adjustment_id"])
            finding_id = adjustments.corrected_finding_id(connection, row)
            corrects = adjustment_corrects(connection, row)
        may_decide = may(user.role, DECIDE_ADJUSTMENTS)
        return desk.page(
            request,
            "adjustment.html",
            user,
            row=row,
            history=adjustments.history_words(history, row["approvals_needed"]),
            finding_id=finding_id,
            corrects=corrects,
            may_decide=may_decide and row["state"] == PROPOSED,
            may_withdraw=may_decide
            and row["state"] in (PROPOSED, APPROVED)
            and user.name in live_approvers(history),
            state_words=QUEUE_STATE_WORDS,
            kind_words=KIND_WORDS,
        )

    def withdraw(request: Request, user: ReviewUser, form: FormData) -> Response:
        try:
            comment = validate_note(str(form.get("comment") or ""), COMMENT_FIELD)
        except ValueError as error:
            return _bad_request(desk, request, user, str(error))
        with desk.engine.connect() as connection:
            found = _allowed(connection, [request.path_params["adjustment_id"]], user)
        if found is None:
            return desk.not_found(request, user)
        adjustment_id, amount = found[0]["adjustment_id"], int(found[0]["amount_minor"])
        try:
            with desk.engine.begin() as connection:
                outcome = withdraw_approval(connection, adjustment_id, user.name, comment, datetime.now(UTC))
                record_audit(connection, user.name, WITHDRAW_APPROVAL, adjustment_id, amount, outcome.summary)
        except ReviewError as error:
            return desk.page(request, "adjustments_error.html", user, 409, error=str(error))
        return RedirectResponse(f"/adjustments/{adjustment_id}", status_code=303)

    def confirm(request: Request, user: ReviewUser, form: FormData) -> Response:
        try:
            action, ids = _selection(form)
        except ValueError as error:
            return _bad_request(desk, request, user, str(error))
        with desk.engine.connect() as connection:
            rows = _allowed(connection, ids, user)
        if rows is None:
            return desk.not_found(request, user)
        return desk.page(request, "adjustments_confirm.html", user, action=action, rows=rows)

    def decide(request: Request, user: ReviewUser, form: FormData) -> Response:
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
        Route(
            "/adjustments/{adjustment_id}/withdraw-approval",
            desk.requires(DECIDE_ADJUSTMENTS, withdraw),
            methods=["POST"],
        ),
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
    """The queue's tab and filters, validated; a property outside the user's is refused like an unknown
    one. No tab and no state: the ``decide`` tab; a state alone is looked for in every tab."""
    state = optional_param(params, "state")
    default_tab = adjustments.DECIDE if state is None else adjustments.ALL
    return adjustments.AdjustmentQuery(
        tab=optional_param(params, "tab") or default_tab,
        state=state,
        where=AdjustmentFilter(property_id=users_property(params, user)),
        night_from=optional_param(params, "night_from"),
        night_to=optional_param(params, "night_to"),
        search=optional_param(params, "q"),
    )


def parse_adjustment_sort(params: Any) -> Sort:
    """The queue's ``sort`` (newest night first by default); ValueError naming a bad one."""
    return parse_sort(params, adjustments.SORT_COLUMNS, adjustments.DEFAULT_SORT)


def _choices(params: Any, user: ReviewUser) -> dict[str, Any]:
    """The template's filter choices; each tab's link keeps the filters, search and order but not the
    state or the page."""
    kept = {name: params.get(name, "") for name in FILTERS if name not in ("tab", "state")}
    return {
        "params": {name: params.get(name, "") for name in FILTERS},
        "properties": user.properties,
        "states": adjustments.QUEUE_STATES,
        "state_words": QUEUE_STATE_WORDS,
        "kind_words": KIND_WORDS,
        "tabs": {name: filled_query({**kept, "tab": name}) for name in adjustments.TAB_WORDS},
        "tab_words": adjustments.TAB_WORDS,
        "tab": adjustments.DECIDE,
        "sort": parse_sort({}, adjustments.SORT_COLUMNS, adjustments.DEFAULT_SORT),
        "sort_columns": adjustments.SORT_COLUMNS,
        "may_decide": may(user.role, DECIDE_ADJUSTMENTS),
    }
