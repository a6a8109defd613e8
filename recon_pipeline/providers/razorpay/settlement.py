"""Razorpay's settlement calendar and fee model: pure.

Razorpay books a payment's fee (GST included) in the settlement that pays it out, listed by the settlement
recon under the day the money settled (Indian calendar; T+2 for domestic payments). So a night's payments
are looked up in the recon of their own day through ``settlement_days`` later (default 3,
``RECON_RAZORPAY_SETTLEMENT_DAYS``); a fee revised at settlement differs from the payment's own ``fee``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.objects import ProviderObject, amount_field, field_value, id_field

SETTLEMENT_TZ = ZoneInfo("Asia/Kolkata")  # the recon's days are Indian calendar days
DEFAULT_SETTLEMENT_DAYS = 3
MAX_RECON_DAYS = 31  # settlement days one pull or lookup reads at most


def payment_fee(payment: ProviderObject) -> int:
    """The fee Razorpay took (GST included); 0 while it has none (``null`` before capture)."""
    if payment.get("fee") is None:
        return 0
    return amount_field(payment, "fee", "payment")


def settled_fees(items: Iterable[ProviderObject]) -> dict[str, int]:
    """Payment id → the fee (GST included) its settlement booked, from settlement recon items. Refunds,
    transfers and adjustments carry no payment fee; a payment settled twice is a data error."""
    fees: dict[str, int] = {}
    for item in items:
        what = "settlement recon item"
        entity_id = id_field(item, "entity_id", what)
        if field_value(item, "type", str, what) != "payment" or not field_value(item, "settled", bool, what):
            continue
        if entity_id in fees:
            raise ProviderDataError(f"{what} {entity_id!r}: payment settled twice")
        fees[entity_id] = amount_field(item, "fee", what)
    return fees


def recon_days(created: Iterable[datetime], settlement_days: int) -> list[date]:
    """The settlement days whose recon may hold payments created at ``created``: each one's own day
    (Indian calendar) through ``settlement_days`` later, the earliest ``MAX_RECON_DAYS`` of them (a payment
    beyond them keeps its provisional fee)."""
    own_days = {moment.astimezone(SETTLEMENT_TZ).date() for moment in created}
    days = {day + timedelta(days=i) for day in own_days for i in range(settlement_days + 1)}
    return sorted(days)[:MAX_RECON_DAYS]


def revised_fees(payments: Iterable[ProviderObject], fees: dict[str, int]) -> list[str]:
    """Ids of the payments whose settled fee differs from their own ``fee`` field."""
    return [p["id"] for p in payments if p["id"] in fees and fees[p["id"]] != payment_fee(p)]
