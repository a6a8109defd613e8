"""A realistic night on the review desk, for the analyst's acceptance tests in Chromium and the desk's
screenshots: three properties in EUR, GBP and JPY, two nights each, their bookings, ledger entries and
provider records, 270 findings of seven categories (a currency mismatch among them), adjustments in every
state of the queue, matches and suggestions, and a traced and an untraced payout.

Rows go straight into the tables, as the night's run leaves them (the night's takings counted from its rows
by the run's own function and writer, beside a few cash, bank-transfer and OTA-collected postings);
deterministic (a seeded generator), so a test can name the booking it searches for and the screenshots do
not change from run to run."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
from sqlalchemy import Connection, insert, update

from recon_pipeline import categories as c
from recon_pipeline.db.schema import (
    adjustment_reviews,
    adjustments,
    bookings,
    discrepancies,
    ledger_entries,
    matches,
    night_reconciliations,
    payout_transactions,
    payouts,
    posting_outbox,
    properties,
    provider_records,
)
from recon_pipeline.keys import adjustment_id, adjustment_idempotency_key
from recon_pipeline.reconcile.matching import match_key
from recon_pipeline.reconcile.takings import by_tender, night_takings
from recon_pipeline.review.store import set_threshold
from recon_pipeline.storage.night_takings import save_takings
from recon_pipeline.tenders import tender_of

DETECTED = datetime(2026, 12, 3, 2, 30, tzinfo=UTC)
NIGHTS = ("2026-12-01", "2026-12-02")
FOUR_EYES_ABOVE = 50_000  # Rome's threshold: its 960.00 EUR adjustment needs two approvers
FINDINGS_PER_NIGHT = 45  # per property: 3 properties x 2 nights x 45 = 270 findings


@dataclass(frozen=True)
class Hotel:
    property_id: str
    name: str
    timezone: str
    currency: str


HOTELS = (
    Hotel("rome-centro", "Rome Centro", "Europe/Rome", "EUR"),
    Hotel("london-soho", "London Soho", "Europe/London", "GBP"),
    Hotel("tokyo-ginza", "Tokyo Ginza", "Asia/Tokyo", "JPY"),
)
PROPERTY_IDS = tuple(hotel.property_id for hotel in HOTELS)
# The categories of the generated findings, in turn; each property's first night also has one
# currency mismatch (the ledger booked the guest's payment in another currency).
CATEGORIES = (
    c.MISSING_IN_LEDGER,
    c.AMOUNT_MISMATCH,
    c.MISSING_AT_PROVIDER,
    c.DUPLICATE_IN_LEDGER,
    c.AMOUNT_MISMATCH,
    c.ORPHANED_CAPTURED_PAYMENT,
    c.STATUS_MISMATCH,
)
# The booking the search test looks for: three of Rome's findings carry it (two nights, two categories).
SEARCHED_BOOKING = "BK-ROME-4711"
SEARCHED_FINDINGS = 3


def _fee(amount: int) -> int:
    """The provider's fee on a payment: 1.4% and 0.25 EUR (or 25 yen)."""
    return amount * 14 // 1000 + 25


def booking_id(hotel: Hotel, number: int) -> str:
    return f"BK-{hotel.property_id.split('-')[0].upper()}-{1000 + number}"


def seed_analyst_night(connection: Connection) -> None:
    """Every row of the night (see the module's docstring) into a migrated database."""
    rng = random.Random(27)
    connection.execute(
        insert(properties),
        [
            {"property_id": h.property_id, "name": h.name, "timezone": h.timezone, "currency": h.currency}
            for h in HOTELS
        ],
    )
    rows = _Rows()
    for hotel in HOTELS:
        for night_index, night in enumerate(NIGHTS):
            rows.night(rng, hotel, night, night_index)
    for table, values in (
        (bookings, rows.bookings),
        (ledger_entries, rows.entries),
        (provider_records, rows.records),
        (discrepancies, rows.findings),
        (night_reconciliations, rows.reconciliations),
    ):
        connection.execute(insert(table), values)
    _seed_takings(connection, rows)
    _seed_adjustments(connection)
    set_threshold(connection, "rome-centro", FOUR_EYES_ABOVE, DETECTED)
    _seed_matches(connection)
    _seed_payouts(connection)


class _Rows:
    """The rows of each table, gathered night by night."""

    def __init__(self) -> None:
        self.bookings: list[dict[str, Any]] = []
        self.entries: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self.findings: list[dict[str, Any]] = []
        self.reconciliations: list[dict[str, Any]] = []
        self.booked: set[str] = set()

    def night(self, rng: random.Random, hotel: Hotel, night: str, night_index: int) -> None:
        pid = hotel.property_id
        start = datetime.fromisoformat(f"{night}T18:00:00+00:00")
        self.reconciliations.append(
            {
                "property_id": pid,
                "night": night,
                "run_id": f"run-{night}-{pid}",
                "status": "succeeded",
                "findings": FINDINGS_PER_NIGHT + (1 if night_index == 0 else 0),
                "adjustments_proposed": 3,
                "started_at": DETECTED,
                "finished_at": DETECTED + timedelta(seconds=41),
            }
        )
        for i in range(FINDINGS_PER_NIGHT):
            number = night_index * FINDINGS_PER_NIGHT + i
            category = CATEGORIES[i % len(CATEGORIES)]
            booking = booking_id(hotel, number)
            if pid == "rome-centro" and number in (3, 4, 50):
                booking = SEARCHED_BOOKING
            amount = rng.randrange(40, 900) * 100  # 40.00 to 899.00 EUR or GBP; 4,000 to 89,900 yen
            at = start + timedelta(minutes=7 * i)
            self._finding(rng, hotel, night, category, booking, f"{pid[:2]}{night[-2:]}{i:03d}", amount, at)
        if night_index == 0:
            self._currency_mismatch(hotel, night, start)

    def _finding(
        self,
        rng: random.Random,
        hotel: Hotel,
        night: str,
        category: str,
        booking: str,
        suffix: str,
        amount: int,
        at: datetime,
    ) -> None:
        pid, currency = hotel.property_id, hotel.currency
        charge, entry = f"ch_3Q{suffix}", f"le_{suffix}"
        provider_amount: int | None = amount
        ledger_amount: int | None = amount
        if category in (c.MISSING_IN_LEDGER, c.ORPHANED_CAPTURED_PAYMENT):
            ledger_amount = None
        elif category in (c.MISSING_AT_PROVIDER, c.STATUS_MISMATCH):
            provider_amount = None
        elif category == c.AMOUNT_MISMATCH:
            ledger_amount = amount - rng.choice((-1, 1)) * rng.randrange(1, 50) * 10
        difference = (provider_amount or 0) - (ledger_amount or 0)
        if category == c.DUPLICATE_IN_LEDGER:
            difference = -amount  # the second entry books the whole amount again
        if booking not in self.booked:
            self.booked.add(booking)
            self.bookings.append(
                {
                    "booking_id": booking,
                    "property_id": pid,
                    "status": "confirmed",
                    "amount_minor": amount,
                    "currency": currency,
                    "created_at": at - timedelta(days=9),
                    "updated_at": at,
                }
            )
        if provider_amount is not None:
            fee = _fee(provider_amount)
            self.records.append(
                {
                    "property_id": pid,
                    "provider_record_id": charge,
                    "kind": "payment",
                    "night": night,
                    "provider": "stripe",
                    "provider_account": None,
                    "charge_id": charge,
                    "payment_intent_id": f"pi_3Q{suffix}",
                    "booking_id": booking,
                    "status": "succeeded",
                    "settled": True,
                    "created_at": at,
                    "amount_minor": provider_amount,
                    "currency": currency,
                    "fee_minor": -fee,
                    "net_minor": provider_amount - fee,
                    "settlement_amount_minor": None,
                    "settlement_currency": None,
                    "card_brand": rng.choice(("visa", "mastercard", "amex")),
                    "card_last4": f"{rng.randrange(10_000):04d}",
                    "approval_code": f"A{rng.randrange(100_000):05d}",
                    "run_id": f"run-{night}-{pid}",
                    "seen_at": DETECTED,
                }
            )
        if ledger_amount is not None:
            self.entries.append(
                {
                    "entry_id": entry,
                    "property_id": pid,
                    "booking_id": booking,
                    "provider_record_id": charge if category != c.STATUS_MISMATCH else None,
                    "kind": "payment",
                    "amount_minor": ledger_amount,
                    "currency": currency,
                    "posted_at": at + timedelta(minutes=3),
                    "card_brand": None,
                    "card_last4": None,
                    "approval_code": None,
                    "reference": f"FOLIO-{suffix.upper()}",
                }
            )
        self.findings.append(
            {
                "property_id": pid,
                "night": night,
                "category": category,
                "record_key": f"{charge}:payment" if provider_amount is not None else f"entry:{entry}",
                "kind": "payment",
                "provider_record_id": charge if provider_amount is not None else None,
                "ledger_entry_id": entry if ledger_amount is not None else None,
                "booking_id": booking,
                "provider_amount_minor": provider_amount,
                "ledger_amount_minor": ledger_amount,
                "difference_minor": difference,
                "currency": currency,
                "ledger_currency": currency if ledger_amount is not None else None,
                "detail": f"{category.replace('_', ' ')} of {charge}",
                "detected_at": DETECTED,
                "run_id": f"run-{night}-{hotel.property_id}",
            }
        )

    def _currency_mismatch(self, hotel: Hotel, night: str, start: datetime) -> None:
        """One payment the ledger booked in another currency than the provider charged it."""
        pid = hotel.property_id
        other = "GBP" if hotel.currency != "GBP" else "EUR"
        charge, entry = f"ch_3QFX{pid[:2]}", f"le_fx{pid[:2]}"
        self.entries.append(
            {
                "entry_id": entry,
                "property_id": pid,
                "booking_id": booking_id(hotel, 999),
                "provider_record_id": charge,
                "kind": "payment",
                "amount_minor": 21_500,
                "currency": other,
                "posted_at": start + timedelta(hours=5),
                "card_brand": None,
                "card_last4": None,
                "approval_code": None,
                "reference": f"FOLIO-FX-{pid[:2].upper()}",
            }
        )
        self.findings.append(
            {
                "property_id": pid,
                "night": night,
                "category": c.CURRENCY_MISMATCH,
                "record_key": f"{charge}:payment",
                "kind": "payment",
                "provider_record_id": charge,
                "ledger_entry_id": entry,
                "booking_id": booking_id(hotel, 999),
                "provider_amount_minor": 25_000,
                "ledger_amount_minor": 21_500,
                "difference_minor": 0,
                "currency": hotel.currency,
                "ledger_currency": other,
                "detail": f"provider {hotel.currency}, ledger {other}",
                "detected_at": DETECTED,
                "run_id": f"run-{night}-{pid}",
            }
        )


# What a folio holds beside the cards, per night: (entry suffix, tender as the PMS wrote it, amount).
OTHER_TENDERS = (
    ("cash1", "Cash", 12_000),
    ("cash2", "CASH", 3_550),
    ("bank", "BankTransfer", 48_000),
    ("ota", "ota collect", 21_500),
)


def _seed_takings(connection: Connection, rows: _Rows) -> None:
    """Each property-night's takings, counted from its rows as the night's run counts them: its ledger
    entries (no tender recorded) and a few postings of other tenders, against its provider records."""
    tendered: list[dict[str, Any]] = []
    for hotel in HOTELS:
        for night in NIGHTS:
            for suffix, tender, amount in OTHER_TENDERS:
                tendered.append(
                    {
                        "entry_id": f"le_{hotel.property_id[:2]}{night[-2:]}{suffix}",
                        "property_id": hotel.property_id,
                        "booking_id": None,
                        "provider_record_id": None,
                        "kind": "payment",
                        "amount_minor": amount,
                        "currency": hotel.currency,
                        "posted_at": datetime.fromisoformat(f"{night}T20:00:00+00:00"),
                        "tender": tender,
                    }
                )
    connection.execute(insert(ledger_entries), tendered)
    entries = pd.DataFrame([*rows.entries, *tendered]).assign(in_night=True)
    entries["tender"] = [tender_of(t) if isinstance(t, str) else None for t in entries["tender"]]
    entries["night"] = [at.astimezone(UTC).date().isoformat() for at in entries["posted_at"]]
    records = pd.DataFrame(rows.records)
    for hotel in HOTELS:
        for night in NIGHTS:
            ledger = entries[(entries["property_id"] == hotel.property_id) & (entries["night"] == night)]
            pulled = records[(records["property_id"] == hotel.property_id) & (records["night"] == night)]
            takings = night_takings(by_tender(ledger.reset_index(drop=True)), pulled)
            save_takings(
                connection, hotel.property_id, night, takings, f"run-{night}-{hotel.property_id}", DETECTED
            )


# (label, property, status, amount, outbox state or None); the queue's every tab has rows.
ADJUSTMENTS = (
    ("rome_proposed_1", "rome-centro", "proposed", 18_000, None),
    ("rome_proposed_2", "rome-centro", "proposed", 4_250, None),
    ("rome_waiting", "rome-centro", "proposed", 96_000, None),  # one approval of two
    ("soho_approved", "london-soho", "approved", 12_900, "approved"),
    ("soho_unknown", "london-soho", "approved", 7_400, "unknown"),
    ("soho_posted", "london-soho", "posted", 31_000, "posted"),
    ("ginza_rejected", "tokyo-ginza", "rejected", 48_000, None),
    ("ginza_withdrawn", "tokyo-ginza", "withdrawn", 12_000, None),
    ("ginza_superseded", "tokyo-ginza", "superseded", 9_000, None),
    ("ginza_proposed", "tokyo-ginza", "proposed", 9_500, None),
)
CURRENCIES = {hotel.property_id: hotel.currency for hotel in HOTELS}


def _corrected_record(number: int, property_id: str) -> str:
    """The provider record of the first night's missing-in-ledger finding the adjustment corrects (every
    seventh finding of a night is one; ``number`` counts the property's adjustments)."""
    earlier = [pid for _, pid, *_ in ADJUSTMENTS[:number]].count(property_id)
    return f"ch_3Q{property_id[:2]}01{earlier * len(CATEGORIES):03d}"


def _idempotency_key(number: int, property_id: str) -> str:
    return adjustment_idempotency_key(
        property_id, NIGHTS[0], "payment", _corrected_record(number, property_id)
    )


def seeded_adjustment(label: str) -> str:
    """The id of the adjustment ``ADJUSTMENTS`` calls ``label`` (derived from its business key, as the
    pipeline derives it)."""
    for number, (name, property_id, *_) in enumerate(ADJUSTMENTS):
        if name == label:
            return adjustment_id(_idempotency_key(number, property_id))
    raise KeyError(label)


def _seed_adjustments(connection: Connection) -> None:
    reasons = {
        "proposed": "the provider captured a payment the ledger lacks: book it on the guest's folio",
        "approved": "amount differs: the ledger books less than the card was charged",
        "posted": "refund at the provider not booked in the ledger",
        "rejected": "duplicate booking in the ledger; the hotel cancels it by hand",
        "withdrawn": "the ledger entry arrived in the next run",
        "superseded": "amount differs: replaced by a revision with the corrected amount",
    }
    rows = []
    for number, (label, pid, status, amount, _) in enumerate(ADJUSTMENTS):
        record = _corrected_record(number, pid)
        rows.append(
            {
                "adjustment_id": seeded_adjustment(label),
                "idempotency_key": _idempotency_key(number, pid),
                "property_id": pid,
                "night": NIGHTS[0],
                "kind": "payment",
                "provider_record_id": record,
                "ledger_entry_id": None,
                "amount_minor": amount,
                "currency": CURRENCIES[pid],
                "reason": reasons[status],
                "status": status,
                "created_at": DETECTED,
                "run_id": f"run-{NIGHTS[0]}-{pid}",
                "category": c.MISSING_IN_LEDGER,
                "record_key": f"{record}:payment",
                "superseded_by": seeded_adjustment("ginza_proposed") if status == "superseded" else None,
                "updated_at": DETECTED,
            }
        )
    connection.execute(insert(adjustments), rows)
    for row in rows:  # the corrected finding and its provider record say the adjustment's amount
        record, pid, amount = row["provider_record_id"], row["property_id"], row["amount_minor"]
        connection.execute(
            update(discrepancies)
            .where(discrepancies.c.property_id == pid, discrepancies.c.provider_record_id == record)
            .values(provider_amount_minor=amount, difference_minor=amount)
        )
        fee = _fee(amount)
        connection.execute(
            update(provider_records)
            .where(provider_records.c.property_id == pid, provider_records.c.provider_record_id == record)
            .values(amount_minor=amount, fee_minor=-fee, net_minor=amount - fee)
        )
    keys = {row["adjustment_id"]: row["idempotency_key"] for row in rows}
    connection.execute(
        insert(posting_outbox),
        [
            {
                "adjustment_id": seeded_adjustment(label),
                "idempotency_key": keys[seeded_adjustment(label)],
                "state": state,
                "next_attempt_at": DETECTED,
                "created_at": DETECTED,
                "updated_at": DETECTED,
                "pms_reference": "PMS-88812" if state == "posted" else None,
                "last_error": "timeout after 30 s: the PMS may or may not have booked it"
                if state == "unknown"
                else None,
            }
            for label, _, _, _, state in ADJUSTMENTS
            if state is not None
        ],
    )
    reviews = [
        ("rome_waiting", "approve", "proposed", "proposed", "alice", "matches the Stripe charge"),
        ("soho_approved", "approve", "proposed", "approved", "alice", "checked against the folio"),
        ("soho_unknown", "approve", "proposed", "approved", "alice", "checked against the folio"),
        ("soho_posted", "approve", "proposed", "approved", "bob", "refund confirmed by the bank"),
        ("ginza_rejected", "reject", "proposed", "rejected", "bob", "the hotel cancels it by hand"),
    ]
    amounts = {label: (amount, CURRENCIES[pid]) for label, pid, _, amount, _ in ADJUSTMENTS}
    connection.execute(
        insert(adjustment_reviews),
        [
            {
                "adjustment_id": seeded_adjustment(label),
                "action": action,
                "previous_status": previous,
                "status": status,
                "reviewed_by": who,
                "note": note,
                "amount_minor": amounts[label][0],
                "currency": amounts[label][1],
                "reviewed_at": DETECTED + timedelta(hours=6),
            }
            for label, action, previous, status, who, note in reviews
        ],
    )


def _seed_matches(connection: Connection) -> None:
    rows = []
    for hotel in HOTELS:
        for n, (rule, score, status) in enumerate(
            (
                ("reference", 1.0, "matched"),
                ("booking_amount", 0.95, "matched"),
                ("card_window", 0.71, "suggested"),
            )
        ):
            record, entry = f"ch_3M{hotel.property_id[:2]}{n}", f"le_m{hotel.property_id[:2]}{n}"
            amount = (120 + 35 * n) * 100
            rows.append(
                {
                    "property_id": hotel.property_id,
                    "night": NIGHTS[1],
                    "match_key": match_key([record], [entry]),
                    "rule": rule,
                    "score": score,
                    "status": status,
                    "kind": "payment",
                    "provider_record_ids": record,
                    "ledger_entry_ids": entry,
                    "booking_id": booking_id(hotel, 800 + n),
                    "provider_amount_minor": amount,
                    "ledger_amount_minor": amount,
                    "currency": hotel.currency,
                    "keys_agree": f"booking {booking_id(hotel, 800 + n)}, amount",
                    "keys_differ": "time 41 minutes apart" if status == "suggested" else None,
                    "detail": f"{rule} match",
                    "run_id": f"run-{NIGHTS[1]}-{hotel.property_id}",
                    "detected_at": DETECTED,
                }
            )
    connection.execute(insert(matches), rows)


def _seed_payouts(connection: Connection) -> None:
    common = {
        "provider": "stripe",
        "provider_account": None,
        "currency": "EUR",
        "status": "paid",
        "arrival_night": NIGHTS[1],
        "automatic": True,
        "created_at": DETECTED - timedelta(days=2),
        "holder_property_id": "rome-centro",
        "last_seen_at": DETECTED,
    }
    connection.execute(
        insert(payouts),
        [
            {**common, "payout_id": "po_1QRomeTraced", "amount_minor": 48_510,
             "statement_descriptor": "STRIPE PO 1", "traced": True, "transactions": 3,
             "sum_difference_minor": 0},
            {**common, "payout_id": "po_1QRomeUntraced", "amount_minor": 20_097,
             "statement_descriptor": "STRIPE PO 2", "traced": False, "transactions": 2,
             "sum_difference_minor": 0},
        ],
    )  # fmt: skip
    movements = [
        ("po_1QRomeTraced", "txn_1", "ch_3Qro01000", 25_000, "rome-centro", NIGHTS[0]),
        ("po_1QRomeTraced", "txn_2", "ch_3Qro01007", 18_000, "rome-centro", NIGHTS[0]),
        ("po_1QRomeTraced", "txn_3", "ch_3Qro01014", 6_000, "rome-centro", NIGHTS[1]),
        ("po_1QRomeUntraced", "txn_4", "ch_3Qro02000", 12_500, "rome-centro", NIGHTS[1]),
        ("po_1QRomeUntraced", "txn_5", "ch_3QUnknown9", 7_800, None, None),
    ]
    connection.execute(
        insert(payout_transactions),
        [
            {"payout_id": payout_id, "transaction_id": txn, "source_id": source, "kind": "charge",
             "amount_minor": amount, "fee_minor": -amount // 100, "net_minor": amount - amount // 100,
             "currency": "EUR", "created_at": DETECTED - timedelta(days=3), "property_id": pid,
             "night": night}
            for payout_id, txn, source, amount, pid, night in movements
        ],
    )  # fmt: skip
