"""Connection limits of the webhook receiver that uvicorn's httptools protocol does not enforce.

uvicorn bounds header size only for h11 (``h11_max_incomplete_event_size``); with httptools, the parser
we use for its intake rate, a client may send headers without end (64 MiB were stored with a 200) or one
byte a second for as long as it likes, holding a connection and its memory. ``LimitedHttpToolsProtocol``
adds, per request:

- a header size cap: once the parser has parsed more than ``max_header_bytes`` of request target and
  headers, or more than that arrived without the header block ending, the answer is 431 and the
  connection is closed, so memory stays bounded by the cap plus one read, whether the request came in one
  read or many;
- a header deadline: the header block must be complete within ``header_timeout_s`` of the connection
  opening (or of the next request's first byte on a kept-alive connection), else the connection is cut.

uvicorn takes the class by its import path (``recon webhooks serve`` passes it to every worker); the
limits come from the environment when the first connection is made, never at import.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from recon_pipeline import config

logger = logging.getLogger(__name__)

MAX_HEADER_BYTES_ENV = "RECON_WEBHOOK_MAX_HEADER_BYTES"
HEADER_TIMEOUT_ENV = "RECON_WEBHOOK_HEADER_TIMEOUT_S"
# Providers' deliveries carry well under 2 KiB of headers; 32 KiB is what common proxies
# allow (nginx: 4 x 8 KiB buffers) and bounds what a client can make us hold.
DEFAULT_MAX_HEADER_BYTES = 32 * 1024
DEFAULT_HEADER_TIMEOUT_S = 10
PROTOCOL_PATH = "recon_pipeline.webhooks.limits:LimitedHttpToolsProtocol"


@dataclass(frozen=True)
class HeaderLimits:
    max_header_bytes: int
    header_timeout_s: int


def header_limits_from_env() -> HeaderLimits:
    """RECON_WEBHOOK_MAX_HEADER_BYTES (32 KiB) and RECON_WEBHOOK_HEADER_TIMEOUT_S (10), or a ConfigError."""
    return HeaderLimits(
        config.positive_int_from_env(MAX_HEADER_BYTES_ENV, DEFAULT_MAX_HEADER_BYTES),
        config.positive_int_from_env(HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT_S),
    )


@functools.cache
def _process_limits() -> HeaderLimits:
    """Read once per worker process, on its first connection (``recon webhooks serve`` validated them)."""
    return header_limits_from_env()


_TOO_LARGE_BODY = json.dumps({"error": "headers_too_large"}).encode()
_TOO_LARGE = b"".join(
    [
        STATUS_LINE[431],
        b"content-type: application/json\r\n",
        b"content-length: " + str(len(_TOO_LARGE_BODY)).encode() + b"\r\n",
        b"connection: close\r\n\r\n",
        _TOO_LARGE_BODY,
    ]
)


class HeadersTooLarge(Exception):
    """Raised inside a parser callback to stop parsing the request whose headers passed the cap."""


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header size cap (431) and a header deadline (connection cut).

    The cap is judged on what the parser parsed (``on_url``, ``on_header``), so a request whose whole head
    and body arrive in one read is refused before its headers complete and nothing reaches the app; a head
    that never ends (one endless header line, which the parser holds until its end) is judged on the bytes
    received while the head is still open."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limits = _process_limits()
        self._awaiting_headers = True
        self._received_bytes = 0  # bytes read while the head was still open
        self._header_bytes = 0  # head bytes the parser parsed: request target, header names and values
        self._over_cap = False
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():  # refused already: read nothing more
            return
        if self._awaiting_headers:
            self._received_bytes += len(data)
        super().data_received(data)  # a head past the cap raises in a callback: send_400_response refuses
        if (
            self._awaiting_headers
            and self._received_bytes > self._limits.max_header_bytes
            and not self.transport.is_closing()
        ):
            self._refuse_too_large()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._awaiting_headers:  # the next request on a kept-alive connection
            self._awaiting_headers = True
            self._received_bytes = 0
            self._arm_header_deadline()
        self._header_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)  # ": " and CRLF
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._awaiting_headers = False
        self._received_bytes = 0
        self._disarm_header_deadline()
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn answers any parse failure with a 400; the one our cap raised is a 431."""
        if self._over_cap:
            self._refuse_too_large()
        else:
            super().send_400_response(msg)

    def _count_head(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > self._limits.max_header_bytes:
            self._over_cap = True
            raise HeadersTooLarge

    def _refuse_too_large(self) -> None:
        logger.warning("webhook rejected: headers beyond %d bytes (431)", self._limits.max_header_bytes)
        self._disarm_header_deadline()
        self.transport.write(_TOO_LARGE)
        self.transport.close()

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        self._header_deadline = self.loop.call_later(self._limits.header_timeout_s, self._headers_too_slow)

    def _disarm_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self._awaiting_headers and not self.transport.is_closing():
            logger.warning(
                "webhook connection cut: headers incomplete after %d s", self._limits.header_timeout_s
            )
            self.transport.close()
