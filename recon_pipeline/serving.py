"""Run an ASGI app with uvicorn in a background thread, on a port the OS picks.

Tests, the demo and the webhook receiver all need a real HTTP server that starts fast, never collides with
another server on a fixed port, and stops within a bound. We bind the listening socket ourselves (port 0)
so the address is known before uvicorn starts and there is no window where another process can take it.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn


class ServerThread:
    """A uvicorn server for ``app`` on ``host`` (default 127.0.0.1) in a daemon thread; a context manager."""

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout_s: float = 10.0,
        shutdown_timeout_s: float = 10.0,
    ) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._startup_timeout_s = startup_timeout_s
        self._shutdown_timeout_s = shutdown_timeout_s
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (only known once started: port 0 means the OS chose it)."""
        if self._socket is None:
            raise RuntimeError("server not started")
        return int(self._socket.getsockname()[1])

    @property
    def base_url(self) -> str:
        """e.g. ``http://127.0.0.1:54321`` (no trailing slash)."""
        return f"http://{self._host}:{self.port}"

    def start(self) -> ServerThread:
        """Bind, start serving, and return once uvicorn reports started (or raise within the bound)."""
        if self._thread is not None:
            raise RuntimeError("server already started")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        self._socket = sock
        # log_config=None: do not reconfigure the process's logging (pytest's caplog, Dagster's handlers).
        config = uvicorn.Config(
            self._app,
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=max(1, int(self._shutdown_timeout_s / 2)),
        )
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout_s
        while not server.started:
            if not self._thread.is_alive():
                self._close_socket()
                raise RuntimeError("server thread exited during startup")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not start within {self._startup_timeout_s} s")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Ask uvicorn to exit and join the thread; force the exit if the graceful shutdown overruns."""
        server, thread = self._server, self._thread
        if server is not None and thread is not None:
            server.should_exit = True
            thread.join(self._shutdown_timeout_s)
            if thread.is_alive():
                server.force_exit = True
                thread.join(self._shutdown_timeout_s)
        self._server = None
        self._thread = None
        self._close_socket()

    def _close_socket(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
