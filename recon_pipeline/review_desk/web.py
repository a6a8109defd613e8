"""What every page of the review desk shares: the engine, templates, CSRF, the signed-in user, roles.

Each page area (``pages/``) is a ``routes(desk)`` function over a ``Desk``; the app (``app.py``) adds
them up. Security lives here rather than in each page: every POST goes through ``Desk.csrf_protected``,
every page but sign-in through ``Desk.signed_in`` (which finds the session in the database and reloads its
user, so an ended session or a deleted user's no longer works), and every action through ``Desk.requires``
(its role's permission, else 403).

Every handler is a plain function that blocks (SQL, argon2, rendering); these wrappers are the desk's only
``async`` code: they read the form on the event loop and run the rest in a worker thread
(``capacity.Workers``), so one person's slow page never holds up another's; each page's time there counts
against its ``requester``'s share (the session, else the client address), so one person's page after page
slows only that person.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from sqlalchemy import Connection, Engine
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from recon_pipeline.review.render import money
from recon_pipeline.review_desk.access import may
from recon_pipeline.review_desk.audit import record_audit
from recon_pipeline.review_desk.capacity import RETRY_AFTER_S, Workers
from recon_pipeline.review_desk.sessions import SessionLimits, session_user
from recon_pipeline.review_desk.users import ReviewUser, load_user
from recon_pipeline.words import (
    MATCH_STATE_WORDS,
    brand_label,
    category_label,
    category_meaning,
    tender_label,
)

HERE = Path(__file__).parent
SESSION_KEY = "session"  # the cookie's entry holding the session id (``review_sessions``)

Clock = Callable[[], datetime]
Endpoint = Callable[[Request], Awaitable[Response]]  # what Starlette routes to: the wrappers below
Handler = Callable[[Request], Response]  # the desk's own handlers block, and run in a worker thread
UserHandler = Callable[[Request, ReviewUser], Response]
FormHandler = Callable[[Request, FormData], Response]
UserFormHandler = Callable[[Request, ReviewUser, FormData], Response]
BUSY_EXPORTS = "Other downloads are being made: try again in a minute."


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use (the sign-in page makes it before anyone signs in)."""
    token = request.session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


def csrf_refusal(request: Request, form: FormData) -> Response | None:
    """The refusal of a POST whose form's ``csrf_token`` does not match the session's (403), or with a
    NUL in a field (400: PostgreSQL stores no NUL in text, and SQLite would keep what PostgreSQL
    refuses); None for a form to act on."""
    expected = request.session.get("csrf")
    given = form.get("csrf_token")
    if not isinstance(expected, str) or not isinstance(given, str):
        return PlainTextResponse("missing CSRF token", status_code=403)
    if not secrets.compare_digest(expected.encode(), given.encode()):
        return PlainTextResponse("bad CSRF token", status_code=403)
    if any(isinstance(value, str) and "\x00" in value for _name, value in form.multi_items()):
        return PlainTextResponse("a form field holds a NUL character", status_code=400)
    return None


def desk_templates() -> Jinja2Templates:
    """The desk's Jinja2 templates: autoescaped, an undefined name is an error (not an empty cell),
    ``money(minor, currency)`` formats an amount and the words filters name codes."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=shown,
    )
    env.globals["money"] = money  # every amount as the CLI shows it: "12.50 EUR", "¥1,000"
    env.filters["query"] = filled_query
    # Codes as a person reads them (recon_pipeline/words.py); an unknown code shows as it is.
    env.filters["category_label"] = category_label
    env.filters["category_meaning"] = category_meaning
    env.filters["match_state"] = lambda code: MATCH_STATE_WORDS.get(code, code)
    env.filters["tender_label"] = tender_label
    env.filters["brand_label"] = brand_label
    return Jinja2Templates(env=env)


def requester(request: Request) -> str:
    """Whose share of page time a request's work counts against (``capacity.Workers.page``): its session's,
    read from the signed cookie on the event loop; before sign-in, its client address's."""
    session_id = request.session.get(SESSION_KEY)
    if isinstance(session_id, str):
        return f"session:{session_id}"
    return f"client:{request.client.host if request.client else 'unknown'}"


def filled_query(params: Mapping[str, str], page: int | None = None) -> str:
    """A list's filters as a query string for its export and pager links, the blank ones left out;
    ``page`` added for a pager's link."""
    filled: dict[str, str | int] = {name: value for name, value in params.items() if value}
    if page is not None:
        filled["page"] = page
    return urlencode(filled)


def shown(value: Any) -> Any:
    """How a template shows a value: a moment to the second in UTC, nothing for a missing one."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        moment = value.astimezone(UTC) if value.tzinfo else value
        return f"{moment:%Y-%m-%d %H:%M:%S} UTC"
    return value


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Desk:
    """The review desk's shared parts, handed to each page area's ``routes``; ``dagster_ui_url``: the
    Dagster UI's root that pages link runs and partitions to (None: no such links); ``sessions``: how long
    a session lasts, by ``clock`` (a test moves it); ``workers``: the threads its handlers run in."""

    engine: Engine
    templates: Jinja2Templates
    workers: Workers
    dagster_ui_url: str | None = None
    sessions: SessionLimits = field(default_factory=SessionLimits)
    clock: Clock = utc_now

    def page(
        self, request: Request, name: str, user: ReviewUser | None, status: int = 200, **context: Any
    ) -> Response:
        """Template ``name`` with the user and the session's CSRF token (every form needs it)."""
        context = {"user": user, "csrf_token": csrf_token(request), **context}
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def not_found(self, request: Request, user: ReviewUser) -> Response:
        """The same 404 for what does not exist and what belongs to another property."""
        return self.page(request, "not_found.html", user, 404)

    def audit(self, user: str, action: str, **fields: Any) -> None:
        """An audit row in its own transaction, for what changes nothing (a sign-in, a view, an export);
        ``fields`` are ``record_audit``'s. An action writes its row in the action's transaction."""
        with self.engine.begin() as connection:
            record_audit(connection, user, action, **fields)

    def session_user(self, connection: Connection, session_id: str) -> str | None:
        """The user name of the live session ``session_id`` (None once it ended)."""
        return session_user(connection, session_id, self.clock(), self.sessions)

    def current_user(self, request: Request) -> ReviewUser | None:
        """The request's user: its session live in the database, the user reloaded (role, properties)."""
        session_id = request.session.get(SESSION_KEY)
        if not isinstance(session_id, str):
            return None
        with self.engine.begin() as connection:
            name = self.session_user(connection, session_id)
            return None if name is None else load_user(connection, name)

    def off_loop(self, handler: Handler) -> Endpoint:
        """``handler`` run in a page thread: a page that needs no sign-in (the sign-in form, home)."""

        async def endpoint(request: Request) -> Response:
            return await self.workers.page(handler, request, requester=requester(request))

        return endpoint

    def signed_in(self, handler: UserHandler) -> Endpoint:
        """``handler`` for a signed-in user, in a page thread; everyone else is sent to the sign-in page."""
        return self.off_loop(self._for_user(handler))

    def download(self, handler: UserHandler) -> Endpoint:
        """``handler`` for a signed-in user, in a download's thread once a turn is free (``Workers.export``);
        a 503 with ``Retry-After`` when none came free in time."""
        checked = self._for_user(handler)

        async def endpoint(request: Request) -> Response:
            response = await self.workers.export(checked, request)
            if response is None:
                return PlainTextResponse(
                    BUSY_EXPORTS, status_code=503, headers={"retry-after": str(RETRY_AFTER_S)}
                )
            return response

        return endpoint

    def csrf_protected(self, handler: FormHandler) -> Endpoint:
        """A POST: its form read on the event loop, refused without the session's CSRF token
        (``csrf_refusal``), else ``handler`` in a page thread."""

        async def endpoint(request: Request) -> Response:
            form = await request.form()
            refusal = csrf_refusal(request, form)
            if refusal is not None:
                return refusal
            return await self.workers.page(handler, request, form, requester=requester(request))

        return endpoint

    def requires(self, permission: str, handler: UserFormHandler) -> Endpoint:
        """A POST action: CSRF-checked, signed in, and the user's role holds ``permission`` (else 403)."""

        def checked(request: Request, form: FormData) -> Response:
            user = self.current_user(request)
            if user is None:
                request.session.pop(SESSION_KEY, None)
                return RedirectResponse("/signin", status_code=303)
            if not may(user.role, permission):
                return self.page(request, "forbidden.html", user, 403, permission=permission)
            return handler(request, user, form)

        return self.csrf_protected(checked)

    def _for_user(self, handler: UserHandler) -> Handler:
        def checked(request: Request) -> Response:
            user = self.current_user(request)
            if user is None:
                request.session.pop(SESSION_KEY, None)
                return RedirectResponse("/signin", status_code=303)
            return handler(request, user)

        return checked
