"""Which GET requests Adyen documents for this client: the Settlement details report download
(``GET /reports/download/MerchantAccount/{merchantAccount}/{fileName}``, Adyen's "Download reports" with a
report user's Basic auth) takes no query parameter. Adyen is silent on one sent anyway, so the simulator
refuses it (400, in its report server's plain-text words) and the tests hold every request the client sends
to this table.
"""

from __future__ import annotations

from collections.abc import Sequence

from recon_pipeline.providers.documented import DocumentedEndpoint, Refusal, table_refusal

REPORT_DOWNLOAD = "/reports/download/MerchantAccount/{merchant_account}/{file_name}"
ENDPOINTS: dict[str, DocumentedEndpoint] = {REPORT_DOWNLOAD: DocumentedEndpoint(frozenset())}


def refusal(endpoint: str, query: Sequence[tuple[str, str]]) -> Refusal | None:
    """Why Adyen's report server would refuse ``GET endpoint?query`` (stricter where Adyen is silent)."""
    unknown, _ = table_refusal(ENDPOINTS, endpoint, query)
    return None if unknown is None else Refusal(f"HTTP Status 400 - Unknown parameter {unknown}", unknown)
