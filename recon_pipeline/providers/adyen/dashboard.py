"""Where Adyen's Customer Area shows a money movement: its payment's details page,
``https://ca-live.adyen.com/ca/ca/accounts/showTx.shtml?pspReference=<psp>&txType=Payment``
(``ca-test`` for the test environment), with ``accountKey=MerchantAccount.<merchant account>`` when the
merchant account is known.

A refund, a fee and a chargeback are shown on the details page of the payment they belong to (the frame's
``charge_id``: the payment's PSP reference), whose history lists its modifications. The Customer Area is
the host the settlement reports are downloaded from, so a client reading ``ca-live`` or ``ca-test`` links
there; any other address (a simulator's) has no Customer Area.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlencode

from recon_pipeline.providers.interface import RecordAddress

CUSTOMER_AREAS: Final = ("https://ca-live.adyen.com", "https://ca-test.adyen.com")
PAYMENT_DETAILS: Final = "/ca/ca/accounts/showTx.shtml"


def customer_area(base_url: str) -> str | None:
    """The Customer Area the client's reports root belongs to, or None (not Adyen's own host)."""
    root = base_url.rstrip("/")
    return root if root in CUSTOMER_AREAS else None


def dashboard_url(root: str, record: RecordAddress, merchant_account: str | None) -> str:
    """The details page of the record's payment in the Customer Area at ``root``."""
    query = {"pspReference": record.charge_id or record.provider_record_id, "txType": "Payment"}
    if merchant_account:
        query["accountKey"] = f"MerchantAccount.{merchant_account}"
    return f"{root}{PAYMENT_DETAILS}?{urlencode(query)}"
