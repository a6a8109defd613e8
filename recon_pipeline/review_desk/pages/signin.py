"""Sign-in and sign-out: argon2 check, failed sign-ins limited per name and per client, a fresh
server-side session on sign-in that sign-out ends."""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from recon_pipeline.review_desk.audit import record_audit
from recon_pipeline.review_desk.sessions import end_session, start_session
from recon_pipeline.review_desk.signin import (
    SignInLimit,
    attempt_keys,
    forget_failures,
    locked_keys,
    name_key,
    record_failure,
)
from recon_pipeline.review_desk.users import authenticate
from recon_pipeline.review_desk.web import SESSION_KEY, Desk


def routes(desk: Desk, limit: SignInLimit) -> list[Route]:
    def home(request: Request) -> Response:
        return RedirectResponse("/findings", status_code=303)

    def signin_form(request: Request) -> Response:
        return desk.page(request, "signin.html", None)

    def signin(request: Request, form: FormData) -> Response:
        name = str(form.get("name", ""))[:64]
        password = str(form.get("password", ""))
        # The peer's address: a proxy's X-Forwarded-For only when `recon review serve` trusts that proxy.
        keys = attempt_keys(name, request.client.host if request.client else "unknown")
        with desk.engine.connect() as connection:
            locked = locked_keys(connection, keys, desk.clock(), limit)
        if locked:
            wait = f"{limit.lock_s / 60:g} minutes"
            return desk.page(
                request, "signin.html", None, 429, error=f"Too many failed sign-ins: wait {wait}."
            )
        with desk.engine.connect() as connection:  # one argon2 check at a time, below the pages
            user = desk.workers.hashed(authenticate, connection, name, password)
        now = desk.clock()
        with desk.engine.begin() as connection:
            if user is None:
                for key in record_failure(connection, keys, now, limit):
                    detail = f"{limit.failures} failed sign-ins: locked for {limit.lock_s:g} s"
                    record_audit(connection, name, "sign_in_locked", target=key, detail=detail)
            else:
                forget_failures(connection, name_key(name))
                session_id = start_session(connection, user.name, now, desk.sessions)
                record_audit(connection, user.name, "sign_in")
        if user is None:
            return desk.page(request, "signin.html", None, 401, error="Wrong name or password.")
        request.session.clear()  # a fresh session (and CSRF token) on sign-in: no fixation
        request.session[SESSION_KEY] = session_id
        return RedirectResponse("/findings", status_code=303)

    def signout(request: Request, form: FormData) -> Response:
        session_id = request.session.get(SESSION_KEY)
        request.session.clear()
        if isinstance(session_id, str):
            with desk.engine.begin() as connection:
                user_name = desk.session_user(connection, session_id)
                end_session(connection, session_id)
                if user_name is not None:
                    record_audit(connection, user_name, "sign_out")
        return RedirectResponse("/signin", status_code=303)

    return [
        Route("/", desk.off_loop(home)),
        Route("/signin", desk.off_loop(signin_form), methods=["GET"]),
        Route("/signin", desk.csrf_protected(signin), methods=["POST"]),
        Route("/signout", desk.csrf_protected(signout), methods=["POST"]),
    ]
