"""Razorpay's settlement calendar and settlement recon: pure.

Razorpay settles domestic payments T+2 *working* days (Indian calendar): a payment captured on Friday
settles on Tuesday, one captured the Friday before a Monday holiday on Wednesday. Working days are Monday
to Friday except holidays: ``SettlementCalendar`` takes India's public holidays
(``holidays.country_holidays("IN")``) and the National Stock Exchange's trading holidays
(``holidays.financial_holidays("XNSE")``, which follow the Mumbai bank holidays where the package has no
RBI calendar), plus extra dates (``RECON_RAZORPAY_HOLIDAYS``, ``parse_holidays``) for a bank holiday
neither lists. So a night's payments are looked up in the recon of every calendar day from their own
through the ``settlement_days``-th working day after it (default 3: T+2 and one working day of slack,
``RECON_RAZORPAY_SETTLEMENT_DAYS``); every calendar day is read, not only working ones, so a holiday the
calendar does not know costs nothing but a request.

The settlement recon (``GET /v1/settlements/recon/combined``) lists what a day's settlements paid out, one
item per entity: ``payment`` (a credit of the amount less ``fee``), ``refund`` (a debit), ``transfer``,
``adjustment`` and ``dispute``. An item's ``fee`` is the settled fee with GST included, ``tax`` the GST
part of it (``SettledFee``). Money a dispute moved is an item carrying ``dispute_id`` (Razorpay lists it as
an ``adjustment``, or ``dispute``): a ``debit`` is the disputed amount withdrawn, a ``credit`` the amount
reinstated when the merchant wins (``DisputeMovement``), dated by the item's ``created_at``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import holidays

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.objects import (
    ProviderObject,
    amount_field,
    created_at_field,
    currency_field,
    field_value,
    id_field,
    optional_id_field,
)

SETTLEMENT_TZ = ZoneInfo("Asia/Kolkata")  # the recon's days are Indian calendar days
SETTLEMENT_CYCLE_DAYS = 2  # T+2 working days for domestic payments
DEFAULT_SETTLEMENT_DAYS = 3  # working days after a payment's day whose recon is read: T+2 and one of slack
MAX_SETTLEMENT_DAYS = 10
MAX_RECON_DAYS = 31  # settlement days one pull or lookup reads at most
RECON_TYPES = frozenset({"payment", "refund", "transfer", "adjustment", "dispute"})
DISPUTE_ITEM_TYPES = frozenset({"adjustment", "dispute"})
_WHAT = "settlement recon item"


@functools.cache
def _indian_holidays(year: int) -> frozenset[date]:
    """India's public holidays and the NSE's trading holidays of ``year``."""
    public = holidays.country_holidays("IN", years=year)
    exchange = holidays.financial_holidays("XNSE", years=year)
    return frozenset(public) | frozenset(exchange)


@dataclass(frozen=True)
class SettlementCalendar:
    """Razorpay's working days: Monday to Friday, except India's holidays and ``extra_holidays``."""

    extra_holidays: frozenset[date] = frozenset()

    def is_working_day(self, day: date) -> bool:
        return day.weekday() < 5 and day not in self.extra_holidays and day not in _indian_holidays(day.year)

    def working_days_after(self, day: date, count: int) -> date:
        """The ``count``-th working day after ``day`` (``day`` itself for 0)."""
        if not 0 <= count <= MAX_SETTLEMENT_DAYS:
            raise ValueError(f"working days must be from 0 to {MAX_SETTLEMENT_DAYS}, not {count}")
        found = 0
        for offset in range(1, 366):  # a year without `count` working days is a calendar error
            if found == count:
                return day + timedelta(days=offset - 1)
            if self.is_working_day(day + timedelta(days=offset)):
                found += 1
        raise ValueError(f"no {count} working days within a year after {day}")

    def settlement_day(self, captured: date) -> date:
        """The day a payment captured on ``captured`` (Indian calendar) settles: T+2 working days."""
        return self.working_days_after(captured, SETTLEMENT_CYCLE_DAYS)


def parse_holidays(text: str) -> frozenset[date]:
    """Extra holidays as written in ``RECON_RAZORPAY_HOLIDAYS``: ISO dates separated by commas or spaces.
    Raises ValueError naming the first that is not a date."""
    days = set()
    for word in text.replace(",", " ").split():
        try:
            days.add(date.fromisoformat(word))
        except ValueError:
            raise ValueError(f"{word[:40]!r} is not a date (YYYY-MM-DD)") from None
    return frozenset(days)


def recon_days(created: Iterable[datetime], settlement_days: int, calendar: SettlementCalendar) -> list[date]:
    """The settlement days whose recon may hold what was created at ``created``: each one's own day
    (Indian calendar) through the ``settlement_days``-th working day after it, the earliest
    ``MAX_RECON_DAYS`` of them (a payment beyond them keeps its provisional fee)."""
    days: set[date] = set()
    for own in {moment.astimezone(SETTLEMENT_TZ).date() for moment in created}:
        last = calendar.working_days_after(own, settlement_days)
        days.update(own + timedelta(days=i) for i in range((last - own).days + 1))
    return sorted(days)[:MAX_RECON_DAYS]


def dispute_recon_days(opened: Iterable[datetime]) -> list[date]:
    """The settlement days whose recon may hold the money disputes opened at ``opened`` moved: the
    ``MAX_RECON_DAYS`` days from each one's own (Indian calendar), as a dispute is won weeks later."""
    own_days = {moment.astimezone(SETTLEMENT_TZ).date() for moment in opened}
    return sorted({day + timedelta(days=i) for day in own_days for i in range(MAX_RECON_DAYS)})


# --- the settlement recon -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SettledFee:
    """The fee a settlement booked for a payment: ``fee`` with GST included, ``tax`` the GST part."""

    fee: int
    tax: int


@dataclass(frozen=True)
class DisputeMovement:
    """Money a dispute moved in a settlement: ``amount`` negative when withdrawn, positive when
    reinstated; ``created_at`` is when Razorpay booked it (the night it belongs to)."""

    entity_id: str
    dispute_id: str
    amount: int
    currency: str
    created_at: datetime

    @property
    def kind(self) -> str:
        """The frame's kind: ``dispute`` (withdrawn) or ``dispute_reversal`` (reinstated)."""
        return "dispute" if self.amount < 0 else "dispute_reversal"


@dataclass(frozen=True)
class Settlements:
    """What the recon items of some settlement days say: each settled payment's fee, and the money
    disputes moved (settled items only: an item ``on_hold`` or not ``settled`` has not moved yet)."""

    fees: dict[str, SettledFee]
    disputes: list[DisputeMovement]


def read_recon(items: Iterable[ProviderObject]) -> Settlements:
    """The settled fees and dispute movements of settlement recon items. An item of a type Razorpay does
    not list, a payment settled twice, or a dispute item that neither withdraws nor reinstates is a data
    error naming the item."""
    fees: dict[str, SettledFee] = {}
    disputes: list[DisputeMovement] = []
    for item in items:
        entity_id = id_field(item, "entity_id", _WHAT)
        item_type: str = field_value(item, "type", str, _WHAT)
        if item_type not in RECON_TYPES:
            raise ProviderDataError(f"{_WHAT} {entity_id!r}: unknown type {item_type!r}")
        if not field_value(item, "settled", bool, _WHAT):
            continue
        if item_type == "payment":
            if entity_id in fees:
                raise ProviderDataError(f"{_WHAT} {entity_id!r}: payment settled twice")
            fees[entity_id] = settled_fee(item)
        elif optional_id_field(item, "dispute_id", _WHAT) is not None:
            if item_type not in DISPUTE_ITEM_TYPES:
                raise ProviderDataError(f"{_WHAT} {entity_id!r}: a {item_type} names a dispute")
            disputes.append(dispute_movement(item))
        elif item_type == "dispute":
            raise ProviderDataError(f"{_WHAT} {entity_id!r}: a dispute item names no dispute_id")
    return Settlements(fees, disputes)


def settled_fees(items: Iterable[ProviderObject]) -> dict[str, int]:
    """Payment id → the fee (GST included) its settlement booked."""
    return {payment_id: settled.fee for payment_id, settled in read_recon(items).fees.items()}


def settled_fee(item: ProviderObject) -> SettledFee:
    """A payment item's fee and its GST; GST beyond the fee is a data error."""
    fee, tax = amount_field(item, "fee", _WHAT), amount_field(item, "tax", _WHAT)
    if tax > fee:
        raise ProviderDataError(f"{_WHAT} {item['entity_id']!r}: tax {tax} exceeds fee {fee}")
    return SettledFee(fee, tax)


def dispute_movement(item: ProviderObject) -> DisputeMovement:
    """A dispute's item as the money it moved: its ``debit`` withdrawn or its ``credit`` reinstated."""
    debit, credit = amount_field(item, "debit", _WHAT), amount_field(item, "credit", _WHAT)
    if (debit > 0) == (credit > 0):
        raise ProviderDataError(
            f"{_WHAT} {item['entity_id']!r}: a dispute item debits or credits, not debit {debit} "
            f"and credit {credit}"
        )
    return DisputeMovement(
        entity_id=item["entity_id"],
        dispute_id=id_field(item, "dispute_id", _WHAT),
        amount=credit - debit,
        currency=currency_field(item, _WHAT),
        created_at=created_at_field(item, _WHAT, "created_at"),
    )


def payment_fee(payment: ProviderObject) -> int:
    """The fee Razorpay took (GST included); 0 while it has none (``null`` before capture)."""
    if payment.get("fee") is None:
        return 0
    return amount_field(payment, "fee", "payment")


def revised_fees(payments: Iterable[ProviderObject], fees: dict[str, SettledFee]) -> list[str]:
    """Ids of the payments whose settled fee differs from their own ``fee`` field."""
    return [p["id"] for p in payments if p["id"] in fees and fees[p["id"]].fee != payment_fee(p)]


def gst_summary(fees: Iterable[SettledFee]) -> tuple[int, int]:
    """(fees, GST) in total: what an analyst reads off the night's settled fees."""
    settled = list(fees)
    return sum(f.fee for f in settled), sum(f.tax for f in settled)
