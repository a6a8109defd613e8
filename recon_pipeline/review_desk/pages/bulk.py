"""Acknowledging or resolving many findings at once from the list: select → confirm → review.

``POST /findings/bulk/confirm`` shows the selected findings (each's category, record and difference) and
asks for one comment; ``POST /findings/bulk/review`` reviews them. The confirmation page carries back the
difference it showed for each (``difference_seen_<id>``), so a finding whose difference moved since is
refused rather than reviewed blind. Each finding is reviewed in its own transaction with its audit row
(``finding_work.review_finding``, as on its page): a refusal of one (a changed difference, a transition
its state forbids) is shown beside it and does not stop the others. A selection naming another
property's finding is the same 404 as an unknown id.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import select
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recon_pipeline.db.schema import discrepancies
from recon_pipeline.errors import ReviewError
from recon_pipeline.review.render import difference_text
from recon_pipeline.review.rules import validate_note
from recon_pipeline.review_desk.access import REVIEW_FINDINGS
from recon_pipeline.review_desk.finding_work import review_finding
from recon_pipeline.review_desk.pages.findings import parse_id, signed_int
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.views import clean_query
from recon_pipeline.review_desk.web import Desk
from recon_pipeline.storage.conditions import one_of
from recon_pipeline.storage.findings import ACKNOWLEDGE, RESOLVE
from recon_pipeline.words import category_label, category_meaning

MAX_SELECTED: Final = 200  # a page of the list; more at once is no longer a reviewed selection
DONE: Final = {ACKNOWLEDGE: "Acknowledged", RESOLVE: "Resolved"}
COMMENT_FIELD: Final = "the comment"


def routes(desk: Desk) -> list[Route]:
    def confirm(request: Request, user: ReviewUser, form: FormData) -> Response:
        back = clean_query(str(form.get("back") or ""))
        try:
            action, ids = _selection(form)
        except ValueError as error:
            return _refused(desk, request, user, str(error), back)
        rows = _allowed(desk, ids, user)
        if rows is None:
            return desk.not_found(request, user)
        return desk.page(
            request,
            "findings_confirm.html",
            user,
            action=action,
            rows=[_shown(row) for row in rows],
            back=back,
            error=None,
        )

    def review(request: Request, user: ReviewUser, form: FormData) -> Response:
        back = clean_query(str(form.get("back") or ""))
        try:
            action, ids = _selection(form)
            comment = validate_note(str(form.get("comment") or ""), COMMENT_FIELD)
            seen = {finding_id: _difference_seen(form, finding_id) for finding_id in ids}
        except ValueError as error:
            return _refused(desk, request, user, str(error), back)
        rows = _allowed(desk, ids, user)
        if rows is None:
            return desk.not_found(request, user)
        now = datetime.now(UTC)
        results = [
            _review_one(desk, user, action, row, comment, seen[row["discrepancy_id"]], now) for row in rows
        ]
        done = sum(not result["refused"] for result in results)
        return desk.page(
            request,
            "findings_reviewed.html",
            user,
            title=f"{DONE[action]} {done} finding{'' if done == 1 else 's'}",
            refused=len(results) - done,
            results=results,
            back=back,
        )

    return [
        Route("/findings/bulk/confirm", desk.requires(REVIEW_FINDINGS, confirm), methods=["POST"]),
        Route("/findings/bulk/review", desk.requires(REVIEW_FINDINGS, review), methods=["POST"]),
    ]


def _review_one(
    desk: Desk, user: ReviewUser, action: str, row: dict[str, Any], comment: str, seen: int, now: datetime
) -> dict[str, Any]:
    """One finding's review and its audit row in one transaction; a refusal is its result, not an error of
    the whole request."""
    try:
        with desk.engine.begin() as connection:
            change = review_finding(connection, user.name, row["discrepancy_id"], action, comment, seen, now)
    except ReviewError as error:
        return {**row, "refused": True, "message": str(error)}
    return {**row, "refused": False, "message": change}


def _allowed(desk: Desk, ids: list[int], user: ReviewUser) -> list[dict[str, Any]] | None:
    """The findings named, in the order named, if each exists and is of the user's properties; None
    otherwise (the caller's 404)."""
    query = select(discrepancies).where(
        discrepancies.c.discrepancy_id.in_(ids), one_of(discrepancies.c.property_id, user.properties)
    )
    with desk.engine.connect() as connection:
        found = {row["discrepancy_id"]: _shown(row) for row in connection.execute(query).mappings()}
    if len(found) != len(ids):
        return None
    return [found[finding_id] for finding_id in ids]


def _shown(row: Any) -> dict[str, Any]:
    """A finding as the confirmation and result pages show it: its columns, its category in words and
    its difference as text (both currencies for a currency mismatch)."""
    return {
        **row,
        "category_label": category_label(row["category"]),
        "category_meaning": category_meaning(row["category"]),
        "difference": difference_text(row),
    }


def _selection(form: FormData) -> tuple[str, list[int]]:
    """The action and the finding ids (each once, at most ``MAX_SELECTED``); ValueError with what is wrong."""
    action = form.get("action")
    if not isinstance(action, str) or action not in DONE:
        raise ValueError("choose Acknowledge selected or Resolve selected")
    ids: dict[int, None] = {}
    for value in form.getlist("discrepancy_id"):
        finding_id = parse_id(str(value))
        if finding_id is None:
            raise ValueError(f"{str(value)[:40]!r} is not a finding's id")
        ids[finding_id] = None
    if not ids:
        raise ValueError("select at least one finding")
    if len(ids) > MAX_SELECTED:
        raise ValueError(f"select at most {MAX_SELECTED} findings at once (you selected {len(ids)})")
    return action, list(ids)


def _difference_seen(form: FormData, finding_id: int) -> int:
    """The difference (minor units, signed) the confirmation page showed for the finding."""
    seen = signed_int(str(form.get(f"difference_seen_{finding_id}") or "").strip())
    if seen is None:
        raise ValueError(
            f"the difference seen of finding {finding_id} is missing or not whole minor units"
        )
    return seen


def _refused(desk: Desk, request: Request, user: ReviewUser, message: str, back: str) -> Response:
    return desk.page(
        request, "findings_confirm.html", user, 400, action=None, rows=[], back=back, error=message
    )
