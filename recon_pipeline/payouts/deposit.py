"""When a paid payout must be at the bank, and which bank credit is which payout's.

A payout is due at the bank ``days`` business days after its arrival date (weekends and the configured
country's bank holidays do not count): ``RECON_PAYOUT_DEPOSIT_DAYS``, default 3. The judgement is made by
the night that is the deadline, never by the wall clock, so a re-run of that night says the same thing.

A credit matches a payout of the same currency and amount booked within ``MATCH_WINDOW`` of its arrival.
Credits that name the payout (its id or statement descriptor in the remittance text) are matched first;
then the rest by amount, the credit booked nearest the arrival date first. Each credit pays one payout.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from recon_pipeline.config import positive_int_from_env, text_from_env

DEFAULT_DEPOSIT_DAYS = 3
EARLIEST_BOOKING = timedelta(days=1)  # a bank may book the credit the day before the provider's date
MATCH_WINDOW = timedelta(days=10)


@dataclass(frozen=True)
class BankCredit:
    """One credit of a bank statement (one transaction detail of a batch booking)."""

    statement_id: str
    entry_reference: str
    detail_index: int
    account_iban: str | None
    booking_date: date
    value_date: date | None
    amount_minor: int
    currency: str
    remittance_info: str  # every reference the statement gave (may be empty)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.statement_id, self.entry_reference, self.detail_index)


@dataclass(frozen=True)
class ExpectedDeposit:
    """What a payout should look like at the bank."""

    payout_id: str
    amount_minor: int
    currency: str
    arrival_date: date
    statement_descriptor: str | None


def deposit_days() -> int:
    """RECON_PAYOUT_DEPOSIT_DAYS: business days a paid payout may take to reach the bank (default 3)."""
    return positive_int_from_env("RECON_PAYOUT_DEPOSIT_DAYS", DEFAULT_DEPOSIT_DAYS)


def bank_holidays() -> Container[date]:
    """RECON_BANK_HOLIDAYS: the ISO country code whose public holidays are not business days (default
    none: weekends only). Read when a run starts; an unknown code is a ValueError naming it."""
    country = text_from_env("RECON_BANK_HOLIDAYS", "")
    if not country:
        return frozenset()
    import holidays

    try:
        return holidays.country_holidays(country)
    except NotImplementedError:
        raise ValueError(f"RECON_BANK_HOLIDAYS: no holiday calendar for country {country!r}") from None


def is_business_day(day: date, holidays: Container[date]) -> bool:
    return day.weekday() < 5 and day not in holidays


def add_business_days(day: date, days: int, holidays: Container[date]) -> date:
    """The ``days``-th business day after ``day``."""
    for _ in range(days):
        day += timedelta(days=1)
        while not is_business_day(day, holidays):
            day += timedelta(days=1)
    return day


def arrivals_due_on(night: date, days: int, holidays: Container[date]) -> list[date]:
    """The arrival dates whose deposit deadline is ``night`` (a Monday deadline also judges the weekend
    before its ``days``-th business day back), oldest first; empty when ``night`` is no business day."""
    earliest = night - timedelta(days=7 * days + 14)  # more than days business days, whatever the holidays
    span = (night - earliest).days
    candidates = (earliest + timedelta(days=offset) for offset in range(span))
    return [day for day in candidates if add_business_days(day, days, holidays) == night]


def match_deposits(
    expected: Sequence[ExpectedDeposit], credits: Sequence[BankCredit]
) -> Mapping[tuple[str, str, int], str]:
    """Credit key → payout id for the credits that pay a payout (see the module's rule)."""
    matches: dict[tuple[str, str, int], str] = {}
    ordered = sorted(expected, key=lambda payout: (payout.arrival_date, payout.payout_id))
    for by_reference in (True, False):
        for payout in ordered:
            if payout.payout_id in matches.values():
                continue
            candidates = [
                credit
                for credit in credits
                if credit.key not in matches
                and _could_pay(credit, payout)
                and (not by_reference or _names(credit, payout))
            ]
            if candidates:
                best = min(
                    candidates, key=lambda c: (abs((c.booking_date - payout.arrival_date).days), c.key)
                )
                matches[best.key] = payout.payout_id
    return matches


def _could_pay(credit: BankCredit, payout: ExpectedDeposit) -> bool:
    return (
        credit.currency == payout.currency
        and credit.amount_minor == payout.amount_minor
        and payout.arrival_date - EARLIEST_BOOKING
        <= credit.booking_date
        <= payout.arrival_date + MATCH_WINDOW
    )


def _names(credit: BankCredit, payout: ExpectedDeposit) -> bool:
    text = credit.remittance_info.upper()
    references = (payout.payout_id, payout.statement_descriptor)
    return any(reference and reference.upper() in text for reference in references)
