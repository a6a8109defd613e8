"""Saved views of the lists: ``POST /views`` saves the list's query under a name, ``POST /views/{id}/delete``
deletes one; both CSRF-checked, for the signed-in user's own views only, and back to the list.

The lists show the user's views through the templates' ``saved_views(list_name)`` (``_saved_views.html``),
which these routes give the templates, so a list's route passes nothing for them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jinja2
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from recon_pipeline.review_desk import views
from recon_pipeline.review_desk.access import VIEW
from recon_pipeline.review_desk.pages.findings import parse_id
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk


def routes(desk: Desk) -> list[Route]:
    @jinja2.pass_context
    def users_views(context: Any, list_name: str) -> list[views.SavedView]:
        """The signed-in user's views of ``list_name`` (none without a user)."""
        user = context.get("user")
        if user is None:
            return []
        with desk.engine.connect() as connection:
            return views.saved_views(connection, user.name, list_name)

    desk.templates.env.globals["saved_views"] = users_views

    def save(request: Request, user: ReviewUser, form: FormData) -> Response:
        query = str(form.get("query") or "")
        try:
            with desk.engine.begin() as connection:
                view = views.save_view(
                    connection,
                    user.name,
                    str(form.get("list_name") or ""),
                    str(form.get("name") or ""),
                    query,
                    datetime.now(UTC),
                )
        except ValueError as error:
            return desk.page(request, "views_error.html", user, 400, error=str(error))
        return _back_to(view.list_name, view.query)

    def remove(request: Request, user: ReviewUser, form: FormData) -> Response:
        view_id = parse_id(request.path_params["view_id"])
        deleted = None
        if view_id is not None:
            with desk.engine.begin() as connection:
                deleted = views.delete_view(connection, user.name, view_id)
        if deleted is None:
            return desk.not_found(request, user)
        return _back_to(deleted.list_name, views.clean_query(str(form.get("back") or "")))

    return [
        Route("/views", desk.requires(VIEW, save), methods=["POST"]),
        Route("/views/{view_id}/delete", desk.requires(VIEW, remove), methods=["POST"]),
    ]


def _back_to(list_name: str, query: str) -> Response:
    return RedirectResponse(f"/{list_name}" + (f"?{query}" if query else ""), status_code=303)
