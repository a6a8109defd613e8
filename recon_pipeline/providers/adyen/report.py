"""Adyen's Settlement details report read into the provider-record frame: pure, no I/O.

Adyen has no "list payments" API; what a hotel reconciles against is the Settlement details report, one
CSV per merchant account per settlement (payable) batch, ``settlement_detail_report_batch_<N>.csv``. Its
columns are Adyen's documented ones (``SETTLEMENT_DETAIL_COLUMNS``, in Adyen's default order); Adyen lets
an account add or reorder columns, so lines are read by header name and extra columns are ignored.

What becomes a record (signed as the ledger signs; Adyen's record types, its "journal types"):

- ``Settled``: a ``payment`` row, ``provider_record_id`` = the payment's ``Psp Reference``, the amount its
  ``Gross Credit (GC)`` in the ``Gross Currency``;
- ``Refunded``: a ``refund`` row (negative ``Gross Debit (GC)``), ``provider_record_id`` = the refund's
  ``Modification Reference``, ``charge_id`` = the payment's ``Psp Reference``;
- ``Chargeback`` and ``SecondChargeback`` (a defence that failed): a ``dispute`` row (negative ``Gross
  Debit (GC)``); ``ChargebackReversed`` (a chargeback defended, or repaid by the shopper): a
  ``dispute_reversal`` row (positive ``Gross Credit (GC)``). Their ``provider_record_id`` is the line's
  ``Modification Reference``, the dispute's PSP reference, which Adyen's dispute notifications carry as
  ``pspReference`` (every event of one dispute shares it): what a PMS booking from notifications holds.
  A ``SecondChargeback``'s is that reference with ``:second_chargeback`` (``SECOND_CHARGEBACK_SUFFIX``):
  it withdraws the money again after the first chargeback was reversed, often in a later batch, so it is
  a movement of its own, and under the shared reference its ``dispute`` row would be a second one of the
  first chargeback's key. ``charge_id`` is the payment's ``Psp Reference``, so a chargeback is attributed
  like a refund: through its payment;
- the costs Adyen withheld on any of these (``Commission`` + ``Markup`` + ``Scheme Fees`` + ``Interchange``,
  in the ``Net Currency``; on a chargeback line, the chargeback fee): a negative ``fee`` row carrying the id
  of the movement that incurred it.

The frame's key is (``provider_record_id``, ``kind``): a report holding two lines of one key (say two
``Chargeback`` lines of one dispute) cannot be one movement each, and is refused naming the second line.
The ledger contract has one ``dispute`` per id, as Stripe's disputes have; the second chargeback's own id
keeps that true across batches too (a lookup spanning both batches holds two distinct keys).

What is not a property-night's money movement stays with the batch:

- ``MerchantPayout``: what the batch paid to the bank, per currency (``Net Debit (NC)``); it dates the
  batch's close and is the batch's payout (``payouts_of``), for the payout reconciliation to pick up;
- every other type (``Fee``, Adyen's transaction fees for the batch period, named by a description such as
  "Transaction Fees" rather than a reference, so there is no key to book them by; ``MiscCosts``,
  ``DepositCorrection``, ``InvoiceDeduction``, ``Balancetransfer``, ``ManualCorrected``,
  ``MatchedStatement``, ``BankInstructionReturned``, ``PaymentCost``, ``PaidOut``, ``PaidOutReversed``, ...
  none tied to a payment; ``RefundedReversed``, a refund the scheme could not credit, for which the
  ledger has no kind; ``ChargebackReversedCorrection`` and any type Adyen adds, not documented as a
  movement): a ``BatchLine`` kept on the batch with its signed net amount, so the payout still
  adds up, and counted by type (``SettlementBatch.unreconciled_counts``). None becomes a row.

Amounts are decimal major units in the file; they become minor units exactly (``Decimal``, the currency's
ISO 4217 exponent), never through float, and a value with more decimals than its currency has is an error.
``Creation Date`` is local to the ``TimeZone`` column's abbreviation (the company account's setting).
The report carries no payment metadata: ``property_id`` is None on every row (attribution is by merchant
account, else ``payment_orders``), and ``Merchant Reference`` (the hotel's booking reference) is the
``booking_id``. Any malformed value raises ``ProviderDataError`` naming the file, the line and the column.

Card keys: the report's ``Payment Method`` (Adyen's payment method type: ``visa``, ``mc``, ``amex``…) is the
row's ``card_brand`` in the shared vocabulary (``cards.py``: ``mc`` is ``mastercard``); a method that is
no card scheme (``paypal``, ``ideal``…) gives none. The report documents no column for the card's last
four digits or the issuer's authorization code (those are in a notification's ``additionalData``:
``cardSummary``, ``authCode``, which the client does not read into the frame), so both stay null.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation

import pandas as pd

from recon_pipeline.money import MAX_AMOUNT_MINOR, minor_unit_exponent, normalize_currency
from recon_pipeline.providers.cards import card_brand
from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.objects import Row, records_frame

SETTLEMENT_DETAIL_COLUMNS: tuple[str, ...] = (
    "Company Account",
    "Merchant Account",
    "Psp Reference",
    "Merchant Reference",
    "Payment Method",
    "Creation Date",
    "TimeZone",
    "Type",
    "Modification Reference",
    "Gross Currency",
    "Gross Debit (GC)",
    "Gross Credit (GC)",
    "Exchange Rate",
    "Net Currency",
    "Net Debit (NC)",
    "Net Credit (NC)",
    "Commission (NC)",
    "Markup (NC)",
    "Scheme Fees (NC)",
    "Interchange (NC)",
    "Payment Method Variant",
    "Modification Merchant Reference",
    "Batch Number",
)
FEE_COLUMNS = ("Commission (NC)", "Markup (NC)", "Scheme Fees (NC)", "Interchange (NC)")
SETTLED, REFUNDED, MERCHANT_PAYOUT = "Settled", "Refunded", "MerchantPayout"
CHARGEBACK, SECOND_CHARGEBACK, CHARGEBACK_REVERSED = "Chargeback", "SecondChargeback", "ChargebackReversed"
GROSS_DEBIT, GROSS_CREDIT = "Gross Debit (GC)", "Gross Credit (GC)"
NET_DEBIT, NET_CREDIT = "Net Debit (NC)", "Net Credit (NC)"
# Adyen's payment method types that are card schemes (its ``Payment Method`` column), as Adyen spells them;
# ``cards.card_brand`` maps each onto the shared vocabulary. Any other method is no card.
CARD_PAYMENT_METHODS = frozenset(
    {"visa", "mc", "amex", "diners", "discover", "jcb", "cup", "maestro", "cartebancaire", "eftpos_australia",
     "interac_card", "bcmc", "dankort", "elo", "hipercard", "rupay"}
)  # fmt: skip


@dataclass(frozen=True)
class Movement:
    """How a record type becomes a row: its kind, the gross column holding its amount, the sign the ledger
    gives it, and the status word the row carries."""

    kind: str
    amount_column: str
    sign: int
    status: str
    id_suffix: str = ""  # appended to the line's reference: a movement sharing another's reference


# A second chargeback shares its dispute's reference with the first chargeback (same kind ``dispute``).
SECOND_CHARGEBACK_SUFFIX = ":second_chargeback"


MOVEMENTS: Mapping[str, Movement] = {
    SETTLED: Movement("payment", GROSS_CREDIT, 1, "settled"),
    REFUNDED: Movement("refund", GROSS_DEBIT, -1, "refunded"),
    CHARGEBACK: Movement("dispute", GROSS_DEBIT, -1, "chargeback"),
    SECOND_CHARGEBACK: Movement("dispute", GROSS_DEBIT, -1, "second_chargeback", SECOND_CHARGEBACK_SUFFIX),
    CHARGEBACK_REVERSED: Movement("dispute_reversal", GROSS_CREDIT, 1, "chargeback_reversed"),
}
CREATION_DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
# The abbreviations Adyen writes in ``TimeZone`` for the time zones a company account can be set to.
ZONE_OFFSETS_H: Mapping[str, int] = {
    "UTC": 0, "GMT": 0, "WET": 0, "WEST": 1, "BST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3,
    "MSK": 3, "GST": 4, "SGT": 8, "HKT": 8, "AWST": 8, "JST": 9, "AEST": 10, "AEDT": 11,
    "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
    "BRT": -3,
}  # fmt: skip


def report_file_name(batch_number: int) -> str:
    """The file name Adyen gives batch ``batch_number``'s Settlement details report."""
    return f"settlement_detail_report_batch_{batch_number}.csv"


@dataclass(frozen=True)
class BatchPayout:
    """A ``MerchantPayout`` line: what the batch paid to the merchant's bank account in one currency."""

    merchant_account: str
    batch_number: int
    reference: str | None  # the line's Modification Reference (Adyen's description of the payout)
    amount_minor: int  # paid to the bank (Net Debit - Net Credit): negative when the batch owes Adyen
    currency: str
    paid_at: datetime


@dataclass(frozen=True)
class BatchLine:
    """A line of the batch that is no property-night's money movement (a batch fee, a correction...): kept
    so that the batch's lines still add up to its payout."""

    record_type: str
    reference: str | None  # Modification Reference (for a Fee line a description, e.g. "Transaction Fees")
    psp_reference: str | None
    net_minor: int  # signed for the merchant: Net Credit - Net Debit (0 when the line carries no amount)
    currency: str | None  # the Net Currency, None when the line carries no amount
    created_at: datetime


@dataclass(frozen=True)
class SettlementBatch:
    """One merchant account's settlement batch: when it closed, its money movements (the frame), its
    payouts and the lines that are neither."""

    merchant_account: str
    number: int
    closed_at: datetime
    records: pd.DataFrame
    payouts: tuple[BatchPayout, ...]
    batch_lines: tuple[BatchLine, ...]

    @property
    def unreconciled_counts(self) -> dict[str, int]:
        """How many lines of each record type the batch holds that became no row (payouts aside)."""
        return dict(Counter(line.record_type for line in self.batch_lines))


class _Line:
    """One CSV line by column name; every error names the file, the line and the column."""

    def __init__(self, file_name: str, number: int, values: Mapping[str, str]) -> None:
        self.file_name, self.number, self.values = file_name, number, values

    def error(self, column: str, message: str) -> ProviderDataError:
        return ProviderDataError(f"{self.file_name} line {self.number}, column {column!r}: {message}")

    def text(self, column: str) -> str | None:
        """The value, None when empty; a NUL or control character is an error (PostgreSQL refuses NUL)."""
        value = self.values.get(column, "").strip()
        if not value.isprintable():
            raise self.error(column, f"{value[:40]!r} is not printable")
        return value or None

    def required(self, column: str) -> str:
        value = self.text(column)
        if value is None:
            raise self.error(column, "empty")
        return value

    def currency(self, column: str) -> str:
        try:
            return normalize_currency(self.required(column))
        except ValueError as error:
            raise self.error(column, str(error)) from None

    def minor(self, column: str, currency: str, required: bool = False) -> int:
        """A non-negative decimal amount in major units as exact minor units of ``currency``; empty is 0
        unless ``required``."""
        raw = self.required(column) if required else self.text(column)
        if raw is None:
            return 0
        try:
            amount = Decimal(raw)
        except InvalidOperation:
            raise self.error(column, f"{raw[:40]!r} is not a decimal amount") from None
        if not amount.is_finite() or amount < 0:
            raise self.error(column, f"{raw[:40]!r} is not a non-negative amount")
        minor = amount.scaleb(minor_unit_exponent(currency))
        if minor != minor.to_integral_value():
            raise self.error(column, f"{raw[:40]!r} has more decimals than {currency} has")
        if minor > MAX_AMOUNT_MINOR:
            raise self.error(column, f"{raw[:40]!r} is beyond the contract's bound")
        return int(minor)

    def created_at(self) -> datetime:
        raw, zone = self.required("Creation Date"), self.required("TimeZone")
        if zone not in ZONE_OFFSETS_H:
            raise self.error("TimeZone", f"unknown time zone {zone!r}")
        try:
            local = datetime.strptime(raw, CREATION_DATE_FORMAT)
        except ValueError:
            raise self.error("Creation Date", f"{raw[:40]!r} is not {CREATION_DATE_FORMAT}") from None
        return local.replace(tzinfo=timezone(timedelta(hours=ZONE_OFFSETS_H[zone]))).astimezone(UTC)


def parse_settlement_report(
    text: str, file_name: str, merchant_account: str, batch_number: int
) -> SettlementBatch:
    """The batch a Settlement details report CSV describes; raises ProviderDataError when the file is not
    one (a missing column, a line of another merchant account or batch, a bad value, no payout line)."""
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    try:
        header = reader.fieldnames or []
        missing = [column for column in SETTLEMENT_DETAIL_COLUMNS if column not in header]
        if missing:
            raise ProviderDataError(f"{file_name} line 1, column {missing[0]!r}: missing from the header")
        rows: list[Row] = []
        payouts: list[BatchPayout] = []
        batch_lines: list[BatchLine] = []
        keys: set[tuple[str, str]] = set()
        for values in reader:
            line = _Line(file_name, reader.line_num, values)
            if None in values or None in values.values():
                raise line.error("*", f"{len(header)} columns expected")
            if line.required("Merchant Account") != merchant_account:
                raise line.error("Merchant Account", f"not {merchant_account!r}")
            batch = line.text("Batch Number")
            if batch is not None and batch != str(batch_number):
                raise line.error("Batch Number", f"{batch!r} in the report of batch {batch_number}")
            record_type = line.required("Type")
            movement = MOVEMENTS.get(record_type)
            if movement is not None:
                rows.extend(_movement_rows(line, movement, keys))
            elif record_type == MERCHANT_PAYOUT:
                payouts.append(_payout(line, merchant_account, batch_number))
            else:
                batch_lines.append(_batch_line(line, record_type))
    except csv.Error as error:
        raise ProviderDataError(f"{file_name} line {reader.line_num}: not CSV: {error}") from None
    if not payouts:
        raise ProviderDataError(f"{file_name}: no {MERCHANT_PAYOUT} line dates the batch's close")
    closed_at = max(payout.paid_at for payout in payouts)
    return SettlementBatch(
        merchant_account, batch_number, closed_at, records_frame(rows), tuple(payouts), tuple(batch_lines)
    )


def _movement_rows(line: _Line, movement: Movement, keys: set[tuple[str, str]]) -> list[Row]:
    """The rows of a movement line: the movement itself and, when Adyen withheld costs, its fee. ``keys``
    holds the file's (id, kind) pairs so far: a second line of one key is refused."""
    psp_reference = line.required("Psp Reference")
    id_column = "Psp Reference" if movement.kind == "payment" else "Modification Reference"
    record_id = line.required(id_column) + movement.id_suffix
    gross_currency = line.currency("Gross Currency")
    amount = movement.sign * line.minor(movement.amount_column, gross_currency, required=True)
    common = {
        "charge_id": psp_reference,
        "property_id": None,
        "booking_id": line.text("Merchant Reference"),
        "payment_intent_id": None,
        "settled": True,
        "created_at": line.created_at(),
        "card_brand": _card_brand(line),
    }
    rows: list[Row] = [
        {"provider_record_id": record_id, "kind": movement.kind, "amount_minor": amount,
         "currency": gross_currency, "status": movement.status, **common}
    ]  # fmt: skip
    net_currency = line.currency("Net Currency")
    fee = sum(line.minor(column, net_currency) for column in FEE_COLUMNS)
    if fee:
        rows.append(
            {"provider_record_id": record_id, "kind": "fee", "amount_minor": -fee,
             "currency": net_currency, "status": "settled", **common}
        )  # fmt: skip
    for row in rows:
        key = (record_id, str(row["kind"]))
        if key in keys:
            raise line.error(id_column, f"a second {key[1]} row of {record_id!r} in one report")
        keys.add(key)
    return rows


def _card_brand(line: _Line) -> str | None:
    """The line's card brand from its ``Payment Method``, None for a method that is no card scheme."""
    method = line.text("Payment Method")
    if method is None or method.lower() not in CARD_PAYMENT_METHODS:
        return None
    brand = {"eftpos_australia": "eftpos_au", "interac_card": "interac"}.get(method.lower(), method)
    return card_brand(brand, f"{line.file_name} line {line.number}, column 'Payment Method'")


def _net(line: _Line) -> tuple[int, str | None]:
    """The line's signed net amount for the merchant (Net Credit - Net Debit) and its currency; (0, None)
    when the line carries neither."""
    if line.text(NET_DEBIT) is None and line.text(NET_CREDIT) is None:
        return 0, None
    currency = line.currency("Net Currency")
    return _credit_minus_debit(line, currency), currency


def _credit_minus_debit(line: _Line, currency: str) -> int:
    return line.minor(NET_CREDIT, currency) - line.minor(NET_DEBIT, currency)


def _payout(line: _Line, merchant_account: str, batch_number: int) -> BatchPayout:
    """A MerchantPayout line: a debit of the payable batch, which is what the bank receives."""
    currency = line.currency("Net Currency")
    amount = -_credit_minus_debit(line, currency)
    reference = line.text("Modification Reference")
    return BatchPayout(merchant_account, batch_number, reference, amount, currency, line.created_at())


def _batch_line(line: _Line, record_type: str) -> BatchLine:
    net, currency = _net(line)
    return BatchLine(
        record_type,
        line.text("Modification Reference"),
        line.text("Psp Reference"),
        net,
        currency,
        line.created_at(),
    )


def payouts_of(batches: Sequence[SettlementBatch]) -> list[BatchPayout]:
    """The batches' payouts, oldest first: what the bank should receive from Adyen, batch by batch."""
    return sorted(
        (payout for batch in batches for payout in batch.payouts),
        key=lambda payout: (payout.paid_at, payout.batch_number, payout.currency),
    )


def records_of(batches: Sequence[SettlementBatch]) -> pd.DataFrame:
    """The batches' records in one frame, in the frame's order."""
    frames = [batch.records for batch in batches if not batch.records.empty]
    if not frames:
        return records_frame([])
    both = pd.concat(frames, ignore_index=True)
    return both.sort_values(["created_at", "provider_record_id", "kind"], ignore_index=True)
