"""Where Stripe's Dashboard shows a money movement: its charge's payment page,
``https://dashboard.stripe.com[/<connected account>][/test]/payments/<charge id>``.

A refund, a fee and a dispute are shown on the payment page of the charge they belong to (the frame's
``charge_id``), which lists them with their balance transactions; a connected account's records live under
its ``acct_...`` id, and a test-mode key's under ``/test``. Only a client talking to Stripe's own API has a
dashboard to link to (``StripeProvider.client`` decides; a simulator's address has none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

from recon_pipeline.providers.interface import RecordAddress

DASHBOARD_ROOT: Final = "https://dashboard.stripe.com"
TEST_KEY_PREFIXES: Final = ("sk_test_", "rk_test_")  # secret and restricted keys of test mode


@dataclass(frozen=True)
class StripeDashboard:
    """The Dashboard of the account the client reads: test mode when its key is a test-mode key."""

    test_mode: bool

    @classmethod
    def for_key(cls, api_key: str | None) -> StripeDashboard:
        return cls(api_key is not None and api_key.startswith(TEST_KEY_PREFIXES))

    def url(self, record: RecordAddress) -> str:
        charge = record.charge_id or record.provider_record_id
        parts = [DASHBOARD_ROOT]
        if record.provider_account:
            parts.append(quote(record.provider_account, safe=""))
        if self.test_mode:
            parts.append("test")
        return "/".join([*parts, "payments", quote(charge, safe="")])
