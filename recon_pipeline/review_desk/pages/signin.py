"""Sign-in and sign-out: argon2 check, rate limit per name and per client, a fresh session on sign-in."""

from __future__ import annotations

import time

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from recon_pipeline.review_desk.signin import AttemptLimiter
from recon_pipeline.review_desk.users import authenticate
from recon_pipeline.review_desk.web import Desk, csrf_protected


def routes(desk: Desk, attempts: AttemptLimiter) -> list[Route]:
    async def home(request: Request) -> Response:
        return RedirectResponse("/findings", status_code=303)

    async def signin_form(request: Request) -> Response:
        return desk.page(request, "signin.html", None)

    async def signin(request: Request, form: FormData) -> Response:
        name = str(form.get("name", ""))[:64]
        password = str(form.get("password", ""))
        client = request.client.host if request.client else "unknown"
        if not attempts.allow((f"name:{name}", f"client:{client}"), time.monotonic()):
            return desk.page(request, "signin.html", None, 429, error="Too many attempts: wait a minute.")
        with desk.engine.connect() as connection:
            user = authenticate(connection, name, password)
        if user is None:
            return desk.page(request, "signin.html", None, 401, error="Wrong name or password.")
        request.session.clear()  # a fresh session (and CSRF token) on sign-in: no fixation
        request.session["user"] = user.name
        desk.audit(user.name, "sign_in")
        return RedirectResponse("/findings", status_code=303)

    async def signout(request: Request, form: FormData) -> Response:
        name = request.session.get("user")
        request.session.clear()
        if isinstance(name, str):
            desk.audit(name, "sign_out")
        return RedirectResponse("/signin", status_code=303)

    return [
        Route("/", home),
        Route("/signin", signin_form, methods=["GET"]),
        Route("/signin", csrf_protected(signin), methods=["POST"]),
        Route("/signout", csrf_protected(signout), methods=["POST"]),
    ]
