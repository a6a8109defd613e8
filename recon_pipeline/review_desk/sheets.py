"""The columns of each list's export, as an analyst reads them in Excel: human headers in the list's
order, each typed (``reports.sheets``), codes in words (``words.py``) with the code beside them where a
filter wants it, and a currency mismatch's difference left empty with a note ``EUR ≠ GBP`` (provider's
currency, then the ledger's) instead of a 0.00 that is no difference at all.

Each sheet reads the rows of its list's own statement (findings, adjustments, payouts, matches) or the
nights overview's rows (``night_rows``), so an export holds the columns the page shows and a few more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from recon_pipeline.reconcile.matching.words import RULE_WORDS
from recon_pipeline.reports.sheets import (
    CURRENCY,
    Column,
    Kind,
    Row,
    Sheet,
    amount,
    field,
    money_of,
    text,
)
from recon_pipeline.review_desk.nights import CategoryLine, NightSummary, freshness
from recon_pipeline.words import (
    CATEGORY_WORDS,
    KIND_WORDS,
    MATCH_STATE_WORDS,
    QUEUE_STATE_WORDS,
    REVIEW_STATE_WORDS,
)

CATEGORY_LABELS: Final[Mapping[str, str]] = {code: words.label for code, words in CATEGORY_WORDS.items()}
PAYOUT_STATUS_WORDS: Final[Mapping[str, str]] = {
    "paid": "Paid",
    "failed": "Failed",
    "pending": "Pending",
    "in_transit": "In transit",
    "canceled": "Canceled",
}


def _ledger_currency(row: Row) -> str:
    return str(row["ledger_currency"] or row["currency"])


def _currencies_differ(row: Row) -> bool:
    return _ledger_currency(row) != row["currency"]


def _difference(row: Row) -> Any:
    """A finding's difference, or nothing when its sides are in different currencies."""
    return None if _currencies_differ(row) else money_of(row["difference_minor"], row["currency"])


def _ledger_amount(row: Row) -> Any:
    return money_of(row["ledger_amount_minor"], _ledger_currency(row))


def _finding_note(row: Row) -> str | None:
    return f"{row['currency']} ≠ {_ledger_currency(row)}" if _currencies_differ(row) else None


def _property(row: Row) -> str:
    return str(row["property_id"])


def _currency(row: Row) -> str | None:
    return None if row["currency"] is None else str(row["currency"])


FINDINGS: Final = Sheet(
    "findings",
    (
        field("Finding", "discrepancy_id", Kind.INTEGER, 9),
        text("Property", "property_id", 12),
        field("Night", "night", Kind.DATE, 11),
        text("Category", "category", 30, CATEGORY_LABELS),
        text("Category code", "category", 22),
        text("Record", "record_key", 24),
        text("Kind", "kind", 10, KIND_WORDS),
        text("Booking", "booking_id", 14),
        text("Provider record", "provider_record_id", 24),
        text("Ledger entry", "ledger_entry_id", 18),
        amount("Provider amount", "provider_amount_minor", "currency"),
        Column("Ledger amount", Kind.AMOUNT, _ledger_amount),
        Column("Difference", Kind.AMOUNT, _difference, 14, total=True),
        text(CURRENCY, "currency", 9),
        Column("Note", Kind.TEXT, _finding_note, 12),
        text("State", "review_status", 13, REVIEW_STATE_WORDS),
        text("Assigned to", "assigned_to", 12),
        text("Reviewed by", "reviewed_by", 12),
        field("Reviewed at", "reviewed_at", Kind.MOMENT, 17),
        text("Review note", "review_note", 30),
        field("Detected at", "detected_at", Kind.MOMENT, 17),
        field("Cleared at", "cleared_at", Kind.MOMENT, 17),
        text("Detail", "detail", 40),
        text("Run", "run_id", 20),
    ),
    _property,
    _currency,
)

ADJUSTMENTS: Final = Sheet(
    "adjustments",
    (
        text("Adjustment", "adjustment_id", 28),
        text("Property", "property_id", 12),
        field("Night", "night", Kind.DATE, 11),
        text("Kind", "kind", 10, KIND_WORDS),
        text("Category", "category", 30, CATEGORY_LABELS),
        text("Category code", "category", 22),
        text("Record", "record_key", 24),
        text("Provider record", "provider_record_id", 24),
        text("Ledger entry", "ledger_entry_id", 18),
        amount("Amount", "amount_minor", "currency", total=True),
        text(CURRENCY, "currency", 9),
        text("Reason", "reason", 40),
        text("State", "state", 24, QUEUE_STATE_WORDS),
        text("State code", "state", 11),
        field("Approvals", "approvals", Kind.INTEGER, 10),
        field("Revision", "revision", Kind.INTEGER, 9),
        text("PMS reference", "pms_reference", 18),
        text("Last error", "last_error", 30),
        field("Attempts", "attempts", Kind.INTEGER, 9),
        field("Created at", "created_at", Kind.MOMENT, 17),
        field("Updated at", "updated_at", Kind.MOMENT, 17),
    ),
    _property,
    _currency,
)

PAYOUTS: Final = Sheet(
    "payouts",
    (
        text("Payout", "payout_id", 24),
        text("Property", "holder_property_id", 12),
        text("Provider", "provider", 10),
        text("Provider account", "provider_account", 20),
        field("Arrival", "arrival_night", Kind.DATE, 11),
        amount("Amount", "amount_minor", "currency", total=True),
        text(CURRENCY, "currency", 9),
        text("Status", "status", 11, PAYOUT_STATUS_WORDS),
        text("Failure code", "failure_code", 16),
        text("Bank reference", "statement_descriptor", 22),
        Column("Traced", Kind.TEXT, lambda row: "Yes" if row["traced"] else "No", 8),
        field("Transactions", "transactions", Kind.INTEGER, 12),
        Column("Deposited", Kind.TEXT, lambda row: "Yes" if row["deposited"] else "No", 10),
        field("Deposited on", "deposited_on", Kind.DATE, 12),
        field("Created at", "created_at", Kind.MOMENT, 17),
    ),
    lambda row: str(row["holder_property_id"]),
    _currency,
)


def _match_note(row: Row) -> str | None:
    """A pair made by hand across currencies has no currency: its amounts are not comparable."""
    return "mixed currencies" if row["currency"] is None else None


MATCHES: Final = Sheet(
    "matches",
    (
        field("Match", "match_id", Kind.INTEGER, 8),
        text("Property", "property_id", 12),
        field("Night", "night", Kind.DATE, 11),
        text("Status", "status", 11, MATCH_STATE_WORDS),
        text("Rule", "rule", 26, RULE_WORDS),
        field("Score", "score", Kind.NUMBER, 7),
        text("Kind", "kind", 10, KIND_WORDS),
        text("Booking", "booking_id", 14),
        text("Provider records", "provider_record_ids", 26),
        text("Ledger entries", "ledger_entry_ids", 20),
        amount("Provider amount", "provider_amount_minor", "currency", total=True),
        amount("Ledger amount", "ledger_amount_minor", "currency", total=True),
        text(CURRENCY, "currency", 9),
        Column("Note", Kind.TEXT, _match_note, 16),
        text("Keys that agree", "keys_agree", 22),
        text("Keys that differ", "keys_differ", 22),
        text("Decided by", "decided_by", 12),
        field("Decided at", "decided_at", Kind.MOMENT, 17),
        text("Decision reason", "decision_reason", 30),
        field("Detected at", "detected_at", Kind.MOMENT, 17),
        field("Cleared at", "cleared_at", Kind.MOMENT, 17),
    ),
    _property,
    _currency,
)

NIGHTS: Final = Sheet(
    "nights",
    (
        text("Property", "property_id", 12),
        field("Night", "night", Kind.DATE, 11),
        text("Category", "category", 30, CATEGORY_LABELS),
        text("Category code", "category", 22),
        field("Outstanding", "outstanding", Kind.INTEGER, 12),
        amount("Outstanding amount", "amount_minor", "currency", 18, total=True),
        text(CURRENCY, "currency", 9),
        field("Cleared", "cleared", Kind.INTEGER, 9),
        text("Review states", "review_states", 22),
        text("Adjustment states", "adjustment_states", 26),
        text("Posting states", "posting_states", 22),
        text("Freshness", "freshness", 30),
    ),
    _property,
    _currency,
)


def night_rows(summaries: Iterable[NightSummary], now: datetime) -> list[dict[str, Any]]:
    """The overview as rows of ``NIGHTS``: one per property-night, category and currency of its
    findings (a night without findings has one row with no category; cleared-only rows have no amount),
    the night's states in words and its freshness repeated on each."""
    rows: list[dict[str, Any]] = []
    for summary in summaries:
        night = {
            "property_id": summary.property_id,
            "night": summary.night,
            "review_states": _counts(summary.review_states, REVIEW_STATE_WORDS),
            "adjustment_states": _counts(summary.adjustment_states, QUEUE_STATE_WORDS),
            "posting_states": _counts(summary.posting_states, QUEUE_STATE_WORDS),
            "freshness": freshness(summary, now),
        }
        for line in summary.categories or [CategoryLine("", 0, (), 0)]:
            for currency, outstanding, minor, cleared in line.currencies or [(None, 0, None, 0)]:
                rows.append(
                    {
                        **night,
                        "category": line.category or None,
                        "outstanding": outstanding,
                        "amount_minor": minor if outstanding else None,
                        "currency": currency,
                        "cleared": cleared,
                    }
                )
    return rows


def _counts(counts: Mapping[str, int], words: Mapping[str, str]) -> str:
    """``Acknowledged 1, Open 2``: each state in words with its count, in the states' code order."""
    return ", ".join(f"{words.get(state, state)} {count}" for state, count in sorted(counts.items()))
