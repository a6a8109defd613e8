"""Which GET requests Razorpay documents (its API reference, https://razorpay.com/docs/api/): per endpoint
the query parameters it takes and, for payments, the values its ``expand[]`` takes.

A collection takes ``from``, ``to`` (unix seconds), ``count`` (1..100) and ``skip``; payments, listed or
fetched by id, may also expand ``card``, ``emi``, ``offers``, ``upi`` details and the others Razorpay's
validator names; the settlement reconciliation takes ``year``, ``month``, ``day``, ``count``, ``skip``; the
others take nothing. Razorpay refuses anything else with a 400 ``BAD_REQUEST_ERROR`` in the words below (its
documented error for an expansion: "Value of each expand must be one of following types: …", field
``expand.0``). The simulator refuses by this table (``simulation/razorpay/api.py``) and the tests hold every
request the client sends to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from recon_pipeline.providers.documented import DocumentedEndpoint, Refusal, table_refusal

COLLECTION = frozenset({"from", "to", "count", "skip"})
# The values Razorpay's documented validation error lists, in its order.
PAYMENT_EXPANSIONS = ("card", "emi", "transaction", "transaction.settlement", "refunds", "offers", "token")
_PAYMENT = DocumentedEndpoint(COLLECTION | {"expand[]"}, frozenset(PAYMENT_EXPANSIONS))
_BY_ID = DocumentedEndpoint(frozenset())
ENDPOINTS: dict[str, DocumentedEndpoint] = {
    "/v1/payments": _PAYMENT,
    "/v1/payments/{id}": DocumentedEndpoint(frozenset({"expand[]"}), _PAYMENT.expansions),
    "/v1/payments/{id}/refunds": DocumentedEndpoint(COLLECTION),
    "/v1/orders/{id}/payments": _BY_ID,
    "/v1/refunds": DocumentedEndpoint(COLLECTION),
    "/v1/refunds/{id}": _BY_ID,
    "/v1/settlements": DocumentedEndpoint(COLLECTION),
    "/v1/settlements/{id}": _BY_ID,
    "/v1/settlements/recon/combined": DocumentedEndpoint(
        frozenset({"year", "month", "day"}) | {"count", "skip"}
    ),
    "/v1/disputes": DocumentedEndpoint(COLLECTION),
    "/v1/disputes/{id}": _BY_ID,
}


def refusal(endpoint: str, query: Sequence[tuple[str, str]]) -> Refusal | None:
    """Why Razorpay would refuse ``GET endpoint?query``, None when it documents all of it."""
    unknown, expansion = table_refusal(ENDPOINTS, endpoint, query)
    if unknown is not None:
        return Refusal(f"{unknown} is/are not required and should not be sent", unknown)
    if expansion is not None:
        listed = ", ".join(PAYMENT_EXPANSIONS)
        message = f"Value of each expand must be one of following types: {listed}"
        return Refusal(message, f"expand.{expansion[0]}")
    return None
