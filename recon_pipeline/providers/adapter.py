"""Which adapter speaks to the configured provider: Stripe's API or Razorpay's, over one ``ProviderHttp``.

Both adapters answer the pipeline's two questions the same way (``pull_night`` and
``fetch_records_by_id`` return the provider-record frame of ``records.py``); they differ in how the current
state of one payment is read, which the event processor asks each in its own terms.
"""

from __future__ import annotations

from recon_pipeline.config import positive_int_from_env
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.razorpay.client import DEFAULT_SETTLEMENT_DAYS, RazorpayAdapter
from recon_pipeline.providers.stripe.client import StripeAdapter

Adapter = StripeAdapter | RazorpayAdapter
FLAVOURS = ("stripe", "razorpay")
SETTLEMENT_DAYS_ENV = "RECON_RAZORPAY_SETTLEMENT_DAYS"


def build_adapter(flavour: str, http: ProviderHttp, api_key: str | None = None) -> Adapter:
    """The adapter for ``flavour`` (``stripe`` or ``razorpay``); Razorpay signs requests with ``api_key``
    and reads settled fees up to ``RECON_RAZORPAY_SETTLEMENT_DAYS`` (3) days after a payment's day."""
    if flavour == "stripe":
        return StripeAdapter(http)
    if flavour == "razorpay":
        settlement_days = positive_int_from_env(SETTLEMENT_DAYS_ENV, DEFAULT_SETTLEMENT_DAYS)
        return RazorpayAdapter(http, api_key, settlement_days=settlement_days)
    raise ValueError(f"provider flavour must be one of {', '.join(FLAVOURS)}, not {flavour!r}")
