"""HTTP clients for the servers the tests run on 127.0.0.1.

Every ``httpx.Client`` builds a verifying TLS context by default, which reads the CA bundle (~20 ms);
the tests make hundreds of clients for plain-HTTP loopback servers, so they share the product's one
context per process (``providers.http.tls_context``).
"""

from __future__ import annotations

from typing import Any

import httpx

from recon_pipeline.providers.http import tls_context


def loopback_client(**options: Any) -> httpx.Client:
    """``httpx.Client(**options)`` with the shared TLS context."""
    return httpx.Client(verify=tls_context(), **options)
