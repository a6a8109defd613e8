"""Stored records as a person reads them: labelled facts in words, amounts in major units with their
currency, moments in the property's timezone and in UTC.

The finding page and an adjustment's "what it corrects" show a ledger entry, a booking and the provider's
record through these, so no page shows a column name, a minor-unit amount or a code a person must look up.
Pure: rows in, facts out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from zoneinfo import ZoneInfo

from recon_pipeline.review.render import money
from recon_pipeline.words import KIND_WORDS

# What the provider's own status words say; an unknown one is shown as it is, capitalised.
STATUS_WORDS: Final[Mapping[str, str]] = {
    "succeeded": "Succeeded",
    "captured": "Captured",
    "authorized": "Authorized, not captured",
    "pending": "Pending",
    "failed": "Failed",
    "canceled": "Cancelled",
    "cancelled": "Cancelled",
    "refunded": "Refunded",
    "settled": "Settled",
    "provisional": "Provisional (not settled yet)",
    "lost": "Lost",
    "won": "Won",
}
BOOKING_STATUS_WORDS: Final[Mapping[str, str]] = {
    "confirmed": "Confirmed",
    "pending": "Pending, not confirmed",
    "cancelled": "Cancelled",
    "checked_in": "Checked in",
    "checked_out": "Checked out",
    "no_show": "No show",
}
PROVIDER_NAMES: Final[Mapping[str, str]] = {"stripe": "Stripe", "razorpay": "Razorpay", "adyen": "Adyen"}


@dataclass(frozen=True)
class Fact:
    """One labelled line of a record: ``text`` as shown, ``href`` when it links somewhere."""

    label: str
    text: str
    href: str | None = None


def local_and_utc(moment: datetime | None, timezone: str) -> str:
    """``2026-12-02 23:14 Europe/Rome (22:14 UTC)``; the UTC date is said too when it is another day."""
    if moment is None:
        return ""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    local = utc.astimezone(ZoneInfo(timezone))
    if timezone == "UTC":
        return f"{utc:%Y-%m-%d %H:%M} UTC"
    there = f"{utc:%H:%M}" if local.date() == utc.date() else f"{utc:%Y-%m-%d %H:%M}"
    return f"{local:%Y-%m-%d %H:%M} {timezone} ({there} UTC)"


def words(mapping: Mapping[str, str], code: Any) -> str:
    """A code in words: its mapping's, else the code itself with a capital (a new code still reads)."""
    if code is None:
        return ""
    text = str(code)
    return mapping.get(text, text.replace("_", " ").capitalize())


def provider_name(code: str) -> str:
    return PROVIDER_NAMES.get(code, code.capitalize())


def card_text(brand: Any, last4: Any) -> str:
    """``Visa •••• 4242``; what is known of the two, or nothing."""
    shown = [str(brand).capitalize()] if brand else []
    if last4:
        shown.append(f"•••• {last4}")
    return " ".join(shown)


def _facts(*pairs: tuple[str, Any] | Fact) -> list[Fact]:
    """Facts of the given (label, text) pairs, the empty ones left out."""
    kept = []
    for pair in pairs:
        fact = pair if isinstance(pair, Fact) else Fact(pair[0], "" if pair[1] is None else str(pair[1]))
        if fact.text:
            kept.append(fact)
    return kept


def provider_record_facts(row: Mapping[Any, Any], timezone: str) -> list[Fact]:
    """A ``provider_records`` row as the provider holds it."""
    currency = row["currency"]
    settlement = row["settlement_amount_minor"]
    return _facts(
        ("Record", row["provider_record_id"]),
        ("Kind", words(KIND_WORDS, row["kind"])),
        ("Status", words(STATUS_WORDS, row["status"])),
        ("Settled", "yes" if row["settled"] else "no"),
        ("Created", local_and_utc(row["created_at"], timezone)),
        ("Amount", money(row["amount_minor"], currency)),
        ("Fee", money(row["fee_minor"], currency) if row["fee_minor"] is not None else ""),
        ("Net", money(row["net_minor"], currency) if row["net_minor"] is not None else ""),
        (
            "Settlement",
            money(settlement, row["settlement_currency"]) if settlement is not None else "",
        ),
        ("Card", card_text(row["card_brand"], row["card_last4"])),
        ("Approval code", row["approval_code"]),
        ("Booking", row["booking_id"]),
        ("Payment intent", row["payment_intent_id"]),
        ("Charge", row["charge_id"] if row["charge_id"] != row["provider_record_id"] else None),
        ("Account", row["provider_account"]),
        (
            "Seen",
            local_and_utc(row["seen_at"], timezone) + (f" by run {row['run_id']}" if row["run_id"] else ""),
        ),
    )


def payment_order_facts(row: Mapping[Any, Any], timezone: str) -> list[Fact]:
    """A ``payment_orders`` row (what the PMS's payment flow recorded of the provider's payment)."""
    currency = row["currency"]
    refunded = row["amount_refunded_minor"]
    return _facts(
        ("Payment", row["provider_payment_id"]),
        ("Status", words(STATUS_WORDS, row["status"])),
        ("Amount", money(row["amount_minor"], currency)),
        ("Refunded", money(refunded, currency) if refunded else ""),
        ("Captured", local_and_utc(row["captured_at"], timezone)),
        ("Booking", row["booking_id"]),
        ("Last updated", local_and_utc(row["updated_at"], timezone)),
    )


def payout_facts(row: Mapping[Any, Any], timezone: str) -> list[Fact]:
    return _facts(
        Fact("Payout", str(row["payout_id"]), f"/payouts/{row['payout_id']}"),
        ("Status", words(STATUS_WORDS, row["status"])),
        ("Failure", row["failure_code"]),
        ("Amount", money(row["amount_minor"], row["currency"])),
        ("Arrival night", row["arrival_night"]),
        ("Created", local_and_utc(row["created_at"], timezone)),
    )


def ledger_entry_facts(row: Mapping[Any, Any], timezone: str) -> list[Fact]:
    """A ``ledger_entries`` row with human labels, its amount in major units."""
    return _facts(
        ("Entry", row["entry_id"]),
        ("Booking", row["booking_id"]),
        ("Kind", words(KIND_WORDS, row["kind"])),
        ("Amount", money(row["amount_minor"], row["currency"])),
        ("Posted at", local_and_utc(row["posted_at"], timezone)),
        ("Provider record", row["provider_record_id"]),
        ("Card", card_text(row["card_brand"], row["card_last4"])),
        ("Approval code", row["approval_code"]),
        ("Reference", row["reference"]),
    )


def booking_facts(row: Mapping[Any, Any], timezone: str) -> list[Fact]:
    """A ``bookings`` row with human labels."""
    return _facts(
        ("Booking", row["booking_id"]),
        ("Status", words(BOOKING_STATUS_WORDS, row["status"])),
        ("Amount", money(row["amount_minor"], row["currency"])),
        ("Created", local_and_utc(row["created_at"], timezone)),
        ("Last updated", local_and_utc(row["updated_at"], timezone)),
    )
