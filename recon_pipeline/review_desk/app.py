"""The review desk's Starlette app: sign-in, sign-out, findings list and a finding's detail.

Security is in the app's structure rather than in each page: every response carries the security headers
(``SecurityHeaders``), every POST goes through ``csrf_protected``, every page but sign-in goes through
``signed_in`` (which reloads the user, so a deleted user's session no longer works), and every findings
query is narrowed to the user's properties in SQL (``findings``).
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from sqlalchemy import Engine, insert
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from recon_pipeline.db.schema import review_audit
from recon_pipeline.reconcile.categories import ALL_CATEGORIES
from recon_pipeline.review.rules import REVIEW_STATUSES, DiscrepancyFilter
from recon_pipeline.review_desk import findings
from recon_pipeline.review_desk.signin import AttemptLimiter
from recon_pipeline.review_desk.users import ReviewUser, authenticate, load_user

HERE = Path(__file__).parent
SESSION_COOKIE = "recon_review"
SESSION_MAX_AGE_S = 8 * 3600  # one working day: a forgotten browser does not stay signed in for long
MIN_SECRET_LENGTH = 32
SECURITY_HEADERS = (
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class DeskSettings:
    """The session secret and whether cookies are marked Secure (behind TLS)."""

    secret: str
    secure_cookies: bool = False

    @classmethod
    def from_environment(cls) -> DeskSettings:
        """RECON_REVIEW_SECRET (required, at least 32 characters) and RECON_REVIEW_SECURE_COOKIES=1."""
        secret = os.environ.get("RECON_REVIEW_SECRET", "")
        if len(secret) < MIN_SECRET_LENGTH:
            raise ValueError(f"RECON_REVIEW_SECRET must be set to at least {MIN_SECRET_LENGTH} characters")
        return cls(secret, os.environ.get("RECON_REVIEW_SECURE_COOKIES") == "1")


class SecurityHeaders:
    """Adds ``SECURITY_HEADERS`` to every HTTP response, errors and static files included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use (the sign-in page makes it before anyone signs in)."""
    token = request.session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


def csrf_protected(endpoint: Callable[[Request, FormData], Awaitable[Response]]) -> Endpoint:
    """The endpoint for a POST whose form's ``csrf_token`` matches the session's; 403 otherwise."""

    async def checked(request: Request) -> Response:
        form = await request.form()
        expected = request.session.get("csrf")
        given = form.get("csrf_token")
        if not isinstance(expected, str) or not isinstance(given, str):
            return PlainTextResponse("missing CSRF token", status_code=403)
        if not secrets.compare_digest(expected.encode(), given.encode()):
            return PlainTextResponse("bad CSRF token", status_code=403)
        return await endpoint(request, form)

    return checked


def review_desk_app(
    engine: Engine, settings: DeskSettings, limiter: AttemptLimiter | None = None
) -> Starlette:
    """The review desk on ``engine`` (migrated to 0008 or later)."""
    templates = Jinja2Templates(
        env=jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
    )
    attempts = limiter or AttemptLimiter()

    def page(
        request: Request, name: str, user: ReviewUser | None, status: int = 200, **context: Any
    ) -> Response:
        context = {"user": user, "csrf_token": csrf_token(request), **context}
        return templates.TemplateResponse(request, name, context, status_code=status)

    def audit(user: str, action: str, target: str | None = None, amount: int | None = None) -> None:
        with engine.begin() as connection:
            connection.execute(
                insert(review_audit).values(
                    at=datetime.now(UTC),
                    user=user,
                    action=action,
                    target=target,
                    amount_seen=amount,
                    detail=None,
                )
            )

    def current_user(request: Request) -> ReviewUser | None:
        name = request.session.get("user")
        if not isinstance(name, str):
            return None
        with engine.connect() as connection:
            return load_user(connection, name)

    def signed_in(endpoint: Callable[[Request, ReviewUser], Awaitable[Response]]) -> Endpoint:
        async def checked(request: Request) -> Response:
            user = current_user(request)
            if user is None:
                request.session.pop("user", None)
                return RedirectResponse("/signin", status_code=303)
            return await endpoint(request, user)

        return checked

    async def home(request: Request) -> Response:
        return RedirectResponse("/findings", status_code=303)

    async def signin_form(request: Request) -> Response:
        return page(request, "signin.html", None)

    async def signin(request: Request, form: FormData) -> Response:
        name = str(form.get("name", ""))[:64]
        password = str(form.get("password", ""))
        client = request.client.host if request.client else "unknown"
        if not attempts.allow((f"name:{name}", f"client:{client}"), time.monotonic()):
            return page(request, "signin.html", None, 429, error="Too many attempts: wait a minute.")
        with engine.connect() as connection:
            user = authenticate(connection, name, password)
        if user is None:
            return page(request, "signin.html", None, 401, error="Wrong name or password.")
        request.session.clear()  # a fresh session (and CSRF token) on sign-in: no fixation
        request.session["user"] = user.name
        audit(user.name, "sign_in")
        return RedirectResponse("/findings", status_code=303)

    async def signout(request: Request, form: FormData) -> Response:
        name = request.session.get("user")
        request.session.clear()
        if isinstance(name, str):
            audit(name, "sign_out")
        return RedirectResponse("/signin", status_code=303)

    async def findings_list(request: Request, user: ReviewUser) -> Response:
        params = request.query_params
        try:
            query = _finding_query(params, user)
        except ValueError as error:
            return page(
                request, "findings.html", user, 400, rows=[], error=str(error), **_choices(params, user)
            )
        with engine.connect() as connection:
            rows = findings.list_findings(connection, query, user.properties)
        return page(request, "findings.html", user, rows=rows, error=None, **_choices(params, user))

    async def finding_detail(request: Request, user: ReviewUser) -> Response:
        raw = request.path_params["discrepancy_id"]
        row = None
        if raw.isascii() and raw.isdigit() and len(raw) <= 18:
            with engine.connect() as connection:
                row = findings.get_finding(connection, int(raw), user.properties)
        if row is None:
            return page(request, "not_found.html", user, 404)
        audit(user.name, "view_finding", str(row["discrepancy_id"]), int(row["difference_minor"]))
        return page(request, "finding.html", user, row=row)

    routes = [
        Route("/", home),
        Route("/signin", signin_form, methods=["GET"]),
        Route("/signin", csrf_protected(signin), methods=["POST"]),
        Route("/signout", csrf_protected(signout), methods=["POST"]),
        Route("/findings", signed_in(findings_list), methods=["GET"]),
        Route("/findings/{discrepancy_id}", signed_in(finding_detail), methods=["GET"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [
        Middleware(SecurityHeaders),
        Middleware(
            SessionMiddleware,
            secret_key=settings.secret,
            session_cookie=SESSION_COOKIE,
            max_age=SESSION_MAX_AGE_S,
            same_site="lax",
            https_only=settings.secure_cookies,
        ),
    ]
    return Starlette(routes=routes, middleware=middleware)


def _optional(params: Any, name: str) -> str | None:
    value = params.get(name, "").strip()
    return value or None


def _finding_query(params: Any, user: ReviewUser) -> findings.FindingQuery:
    """The page's filters, validated; a property outside the user's is refused like an unknown one."""
    property_id = _optional(params, "property")
    if property_id is not None and property_id not in user.properties:
        raise ValueError(f"unknown property {property_id!r}")
    cleared_text = _optional(params, "cleared")
    if cleared_text not in (None, "yes", "no"):
        raise ValueError("cleared is yes or no")
    amount_text = _optional(params, "amount_at_least")
    if amount_text is not None and not (
        amount_text.isascii() and amount_text.isdigit() and len(amount_text) <= 18
    ):
        raise ValueError("amount at least is a whole number of minor units")
    return findings.FindingQuery(
        DiscrepancyFilter(
            property_id=property_id,
            category=_optional(params, "category"),
            status=_optional(params, "status"),
            cleared=None if cleared_text is None else cleared_text == "yes",
        ),
        night_from=_optional(params, "night_from"),
        night_to=_optional(params, "night_to"),
        amount_at_least=None if amount_text is None else int(amount_text),
    )


def _choices(params: Any, user: ReviewUser) -> dict[str, Any]:
    return {
        "params": {name: params.get(name, "") for name in FILTERS},
        "properties": user.properties,
        "categories": ALL_CATEGORIES,
        "statuses": REVIEW_STATUSES,
    }


FILTERS = ("property", "night_from", "night_to", "category", "status", "cleared", "amount_at_least")
