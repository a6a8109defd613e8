"""Uvicorn servers a test process keeps for the apps its tests swap in and out.

Stopping a uvicorn server costs ~0.15 s (its shutdown sleeps 0.1 s unconditionally, on top of its 0.1 s
tick), and the fast tier starts and stops hundreds. A test that needs an app on 127.0.0.1 borrows an idle
server instead, installs its own freshly built app for the length of a ``with`` block, and returns the
server: every test still gets a fresh app (its own database, settings, faults and counters), nested uses
(two desks at once) get two servers, and the servers stop when the process exits.
"""

from __future__ import annotations

import atexit
from collections.abc import Iterator
from contextlib import contextmanager

from starlette.types import ASGIApp, Receive, Scope, Send

from recon_pipeline.serving import ServerThread


class CurrentApp:
    """Forwards each request to the app installed now. The apps swapped in need no startup work of
    their own (a test that needs its app's lifespan runs a ``ServerThread`` of its own), so the lifespan
    is acknowledged here."""

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if self.app is None:
            raise RuntimeError("no app installed on this test server")
        await self.app(scope, receive, send)


_IDLE: list[tuple[ServerThread, CurrentApp]] = []


def _started() -> tuple[ServerThread, CurrentApp]:
    current = CurrentApp()
    server = ServerThread(current).start()
    atexit.register(server.stop)
    return server, current


@contextmanager
def serving(app: ASGIApp) -> Iterator[ServerThread]:
    """A running server on 127.0.0.1 that serves ``app`` until the block ends."""
    server, current = _IDLE.pop() if _IDLE else _started()
    current.app = app
    try:
        yield server
    finally:
        current.app = None
        _IDLE.append((server, current))
