"""Where Razorpay's Dashboard shows a money movement: its payment's page,
``https://dashboard.razorpay.com/app/payments/<payment id>``.

A refund and a fee are shown on the page of the payment they belong to (the frame's ``charge_id``), which
lists its refunds and its fee and tax. The Dashboard switches between test and live mode itself, so the URL
is the same for both. Only a client talking to Razorpay's own API has a dashboard to link to
(``RazorpayProvider.client`` decides; a simulator's address has none).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import quote

from recon_pipeline.providers.interface import RecordAddress

DASHBOARD_PAYMENTS: Final = "https://dashboard.razorpay.com/app/payments/"


def dashboard_url(record: RecordAddress) -> str:
    """The payment page of the record's payment."""
    return DASHBOARD_PAYMENTS + quote(record.charge_id or record.provider_record_id, safe="")
