"""HTTP clients for the servers the tests run on 127.0.0.1.

Every ``httpx.Client`` builds a verifying TLS context by default, which reads the CA bundle (~20 ms);
the tests make hundreds of clients for plain-HTTP loopback servers, so they share one context (as
``providers/http.py`` does for the product's clients), built once per process.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once."""
    return httpx.create_ssl_context()


def loopback_client(**options: Any) -> httpx.Client:
    """``httpx.Client(**options)`` with the shared TLS context."""
    return httpx.Client(verify=tls_context(), **options)
