"""Giving a finding to someone and writing a note on it, from its page: ``POST /findings/{id}/assign``
and ``POST /findings/{id}/note``.

Each is one transaction: the finding is read narrowed to the user's properties (another property's is the
same 404 as an unknown id), changed, and audited. Neither changes the review status. Both go back to the
finding's page with the list's query the form carried (``back``), so its filters and position survive.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Connection, RowMapping
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from recon_pipeline.errors import ReviewError
from recon_pipeline.review.rules import validate_note
from recon_pipeline.review_desk import finding_work, findings
from recon_pipeline.review_desk.access import REVIEW_FINDINGS
from recon_pipeline.review_desk.pages.findings import finding_page, parse_id
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.views import clean_query
from recon_pipeline.review_desk.web import Desk

NOTE_FIELD = "the note"


def routes(desk: Desk) -> list[Route]:
    def assign(request: Request, user: ReviewUser, form: FormData) -> Response:
        assignee = str(form.get("assignee") or "").strip() or None

        def give(connection: Connection, row: RowMapping) -> str:
            return finding_work.assign_finding(connection, user.name, row, assignee, _now())

        return _change(desk, request, user, form, give)

    def note(request: Request, user: ReviewUser, form: FormData) -> Response:
        text = str(form.get("note") or "")

        def write(connection: Connection, row: RowMapping) -> str:
            return finding_work.note_finding(
                connection, user.name, row, validate_note(text, NOTE_FIELD), _now()
            )

        return _change(desk, request, user, form, write)

    return [
        Route("/findings/{finding_id}/assign", desk.requires(REVIEW_FINDINGS, assign), methods=["POST"]),
        Route("/findings/{finding_id}/note", desk.requires(REVIEW_FINDINGS, note), methods=["POST"]),
    ]


def _change(
    desk: Desk,
    request: Request,
    user: ReviewUser,
    form: FormData,
    work: Callable[[Connection, RowMapping], str],
) -> Response:
    """``work`` on the finding of the URL, narrowed to the user's properties, in one transaction; back to
    its page (with the list's query), or the page with the refusal (400) when ``work`` refused."""
    finding_id = parse_id(request.path_params["finding_id"])
    refusal: str | None = None
    with desk.engine.begin() as connection:
        row = None
        if finding_id is not None:
            row = findings.get_finding(connection, finding_id, user.properties)
        if row is None:
            return desk.not_found(request, user)
        try:
            work(connection, row)
        except ReviewError as error:  # raised before anything was written
            refusal = str(error)
    if refusal is not None:
        return finding_page(desk, request, user, row, 400, refusal)
    back = clean_query(str(form.get("back") or ""))
    return RedirectResponse(f"/findings/{finding_id}" + (f"?{back}" if back else ""), status_code=303)


def _now() -> datetime:
    return datetime.now(UTC)
