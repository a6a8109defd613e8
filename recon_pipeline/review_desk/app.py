"""The review desk's Starlette app: the page areas of ``pages/`` behind the security headers and a signed
session cookie that holds a server-side session's id.

Security is in the app's structure rather than in each page: every response carries the security headers
and, but for static files, ``Cache-Control: no-store`` (``SecurityHeaders``, and ``server_error`` for an
unhandled error); a request body over ``MAX_BODY_BYTES`` is refused (413) before anything parses it; CSRF,
the session, sign-in and roles are checked by ``web.Desk`` for every route that needs them; every query is
narrowed to the user's properties in SQL.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from recon_pipeline.review.links import DAGSTER_UI_URL_ENV, web_root_from_env
from recon_pipeline.review_desk.capacity import Capacity, Workers
from recon_pipeline.review_desk.pages import (
    adjustments,
    bulk,
    exports,
    finding_work,
    findings,
    legend,
    matches,
    nights,
    overview,
    payouts,
    signin,
    views,
)
from recon_pipeline.review_desk.sessions import SessionLimits
from recon_pipeline.review_desk.signin import SignInLimit
from recon_pipeline.review_desk.web import HERE, Clock, Desk, desk_templates, utc_now

SESSION_COOKIE = "recon_review"
MIN_SECRET_LENGTH = 32
STATIC = "/static"
NO_STORE = (b"cache-control", b"no-store")  # account data stays out of browser and proxy caches
SECURITY_HEADERS = (
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)
# The largest request body read: the desk's forms are a few kilobytes (a bulk review of 200 findings with
# its comment, a pairing's ids), so a larger body is no form of the desk's.
MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class DeskSettings:
    """The session secret, whether cookies are marked Secure (behind TLS), the Dagster UI's root URL
    that a finding's page links its run and partition to (None: no links), how long a session lasts,
    how many failed sign-ins lock a name or an address for how long, and how many requests are worked on
    at once (``capacity``: page threads and download turns, which the engine's pool is sized to)."""

    secret: str
    secure_cookies: bool = False
    dagster_ui_url: str | None = None
    sessions: SessionLimits = field(default_factory=SessionLimits)
    signin_limit: SignInLimit = field(default_factory=SignInLimit)
    capacity: Capacity = field(default_factory=Capacity)

    @classmethod
    def from_environment(cls) -> DeskSettings:
        """RECON_REVIEW_SECRET (required, at least 32 characters), RECON_REVIEW_SECURE_COOKIES=1,
        RECON_DAGSTER_UI_URL (optional, an http(s) URL), RECON_REVIEW_THREADS and RECON_REVIEW_EXPORTS
        (``Capacity.from_environment``)."""
        secret = os.environ.get("RECON_REVIEW_SECRET", "")
        if len(secret) < MIN_SECRET_LENGTH:
            raise ValueError(f"RECON_REVIEW_SECRET must be set to at least {MIN_SECRET_LENGTH} characters")
        return cls(
            secret,
            os.environ.get("RECON_REVIEW_SECURE_COOKIES") == "1",
            web_root_from_env(DAGSTER_UI_URL_ENV),
            capacity=Capacity.from_environment(),
        )


class SecurityHeaders:
    """Adds ``SECURITY_HEADERS`` to every HTTP response, errors and static files included, and
    ``Cache-Control: no-store`` to every one but a static file's (pages and exports show account data); a
    response that sets its own Content-Security-Policy (the night's report: its inline blocks by hash)
    keeps it, since a second policy would be enforced as well and block what the first allows."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        path: str = scope["path"]
        added = SECURITY_HEADERS if path.startswith(f"{STATIC}/") else (*SECURITY_HEADERS, NO_STORE)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                own = {name.lower() for name, _value in headers}
                message["headers"] = [*headers, *((name, value) for name, value in added if name not in own)]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def server_error(request: Request, error: Exception) -> Response:
    """The answer to an unhandled error (which Starlette then logs): Starlette calls it from outside every
    middleware, ``SecurityHeaders`` included, so it carries that middleware's headers itself."""
    headers = {name.decode(): value.decode() for name, value in (*SECURITY_HEADERS, NO_STORE)}
    return PlainTextResponse("Internal Server Error", status_code=500, headers=headers)


def review_desk_app(engine: Engine, settings: DeskSettings, clock: Clock = utc_now) -> Starlette:
    """The review desk on ``engine`` (migrated to 0010 or later, its pool ``settings.capacity.pool_size``);
    ``clock`` times sessions and sign-in locks (a test moves it)."""
    workers = Workers(settings.capacity)
    desk = Desk(engine, desk_templates(), workers, settings.dagster_ui_url, settings.sessions, clock)
    routes: list[BaseRoute] = [
        *signin.routes(desk, settings.signin_limit),
        *exports.routes(desk),  # before findings: /findings/export.csv is not /findings/{finding_id}
        *bulk.routes(desk),  # before findings: /findings/bulk/review is not /findings/{finding_id}/review
        *findings.routes(desk),
        *finding_work.routes(desk),
        *matches.routes(desk),
        *nights.routes(desk),
        *overview.routes(desk),
        *payouts.routes(desk),
        *adjustments.routes(desk),
        *legend.routes(desk),
        *views.routes(desk),
        Mount(STATIC, StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [
        Middleware(SecurityHeaders),
        Middleware(RequestBodyLimitMiddleware, max_body_size=MAX_BODY_BYTES),  # inside: a 413 has the headers
        Middleware(
            SessionMiddleware,
            secret_key=settings.secret,
            session_cookie=SESSION_COOKIE,
            max_age=int(settings.sessions.lifetime_s),  # the server ends it; the browser forgets it then
            same_site="lax",
            https_only=settings.secure_cookies,
        ),
    ]
    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        """The export processes, each with its own engine on the desk's database, for as long as the
        app serves."""
        with workers.processes(exports.open_database, engine.url.render_as_string(hide_password=False)):
            yield

    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={Exception: server_error},
        lifespan=lifespan,
    )
