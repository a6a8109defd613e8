"""Razorpay's webhook signature, pure and without I/O (the Stripe scheme is in ``signature.py``).

``X-Razorpay-Signature`` is the hex HMAC-SHA256 of the exact raw body under the webhook secret, nothing
else: no timestamp, so a replayed delivery cannot be told from a retry by its signature. It does not need
to be: a delivery is stored once per ``x-razorpay-event-id`` and the processor acts on the payment's
current state read from Razorpay, never on the payload, so a replay changes nothing. Several secrets are
accepted so that a secret can be rotated (``RECON_WEBHOOK_SECRET=new,old``), each compared in constant
time.
"""

from __future__ import annotations

import hashlib
import hmac
import string
from collections.abc import Sequence

from recon_pipeline.webhooks.signature import SignatureError

HEADER = "X-Razorpay-Signature"
EVENT_ID_HEADER = "x-razorpay-event-id"
_HEX_DIGITS = frozenset(string.hexdigits)


def compute_signature(raw_body: bytes, secret: str) -> str:
    """The hex signature of ``raw_body`` (what Razorpay sends, and what tests and benchmarks sign with)."""
    return hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest()


def verify(raw_body: bytes, header: str | None, secrets: Sequence[str]) -> None:
    """Accept when ``header`` is the signature of the exact bytes received under any of ``secrets``, else
    raise SignatureError (``missing_header``, ``malformed_header`` or ``no_matching_signature``)."""
    if not secrets:
        raise ValueError("at least one webhook secret is required")
    if header is None or not header.strip():
        raise SignatureError("missing_header")
    candidate = header.strip()
    if len(candidate) != hashlib.sha256().digest_size * 2 or not set(candidate) <= _HEX_DIGITS:
        raise SignatureError("malformed_header")
    given = candidate.lower().encode()
    matches = [hmac.compare_digest(given, compute_signature(raw_body, s).encode()) for s in secrets]
    if not any(matches):
        raise SignatureError("no_matching_signature")
