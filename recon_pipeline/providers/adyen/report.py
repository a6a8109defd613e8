"""Adyen's Settlement details report read into the provider-record frame: pure, no I/O.

Adyen has no "list payments" API; what a hotel reconciles against is the Settlement details report, one
CSV per merchant account per settlement (payable) batch, ``settlement_detail_report_batch_<N>.csv``. Its
columns are Adyen's documented ones (``SETTLEMENT_DETAIL_COLUMNS``, in Adyen's default order); Adyen lets
an account add or reorder columns, so lines are read by header name and extra columns are ignored.

What becomes a record (signed as the ledger signs):

- ``Settled``: a ``payment`` row, ``provider_record_id`` = the payment's ``Psp Reference``, the amount its
  ``Gross Credit (GC)`` in the ``Gross Currency``;
- ``Refunded``: a ``refund`` row (negative ``Gross Debit (GC)``), ``provider_record_id`` = the refund's
  ``Modification Reference``, ``charge_id`` = the payment's ``Psp Reference``;
- the costs Adyen withheld on either (``Commission`` + ``Markup`` + ``Scheme Fees`` + ``Interchange``, in
  the ``Net Currency``): a negative ``fee`` row carrying the id of the movement that incurred it.

Amounts are decimal major units in the file; they become minor units exactly (``Decimal``, the currency's
ISO 4217 exponent), never through float, and a value with more decimals than its currency has is an error.
``Creation Date`` is local to the ``TimeZone`` column's abbreviation (the company account's setting).
The report carries no payment metadata: ``property_id`` is None on every row (attribution is by merchant
account, else ``payment_orders``), and ``Merchant Reference`` (the hotel's booking reference) is the
``booking_id``. The batch's ``MerchantPayout`` line dates its close. Other journal types (batch fees,
chargebacks, corrections) are not a payment's money movement here and are skipped. Any malformed value
raises ``ProviderDataError`` naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation

import pandas as pd

from recon_pipeline.money import MAX_AMOUNT_MINOR, minor_unit_exponent, normalize_currency
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
class SettlementBatch:
    """One merchant account's settlement batch: when it closed and its money movements (the frame)."""

    merchant_account: str
    number: int
    closed_at: datetime
    records: pd.DataFrame


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
        closed_at: datetime | None = None
        for values in reader:
            line = _Line(file_name, reader.line_num, values)
            if None in values or None in values.values():
                raise line.error("*", f"{len(header)} columns expected")
            if line.required("Merchant Account") != merchant_account:
                raise line.error("Merchant Account", f"not {merchant_account!r}")
            batch = line.text("Batch Number")
            if batch is not None and batch != str(batch_number):
                raise line.error("Batch Number", f"{batch!r} in the report of batch {batch_number}")
            kind = line.required("Type")
            if kind == MERCHANT_PAYOUT:
                closed_at = max(closed_at or line.created_at(), line.created_at())
            elif kind in (SETTLED, REFUNDED):
                rows.extend(_movement_rows(line, kind))
    except csv.Error as error:
        raise ProviderDataError(f"{file_name} line {reader.line_num}: not CSV: {error}") from None
    if closed_at is None:
        raise ProviderDataError(f"{file_name}: no {MERCHANT_PAYOUT} line dates the batch's close")
    return SettlementBatch(merchant_account, batch_number, closed_at, records_frame(rows))


def _movement_rows(line: _Line, kind: str) -> list[Row]:
    """The rows of a Settled or Refunded line: the movement itself and, when Adyen withheld costs, its fee."""
    psp_reference = line.required("Psp Reference")
    gross_currency = line.currency("Gross Currency")
    created_at = line.created_at()
    if kind == SETTLED:
        record_id, record_kind = psp_reference, "payment"
        amount, status = line.minor("Gross Credit (GC)", gross_currency, required=True), "settled"
    else:
        record_id, record_kind = line.required("Modification Reference"), "refund"
        amount, status = -line.minor("Gross Debit (GC)", gross_currency, required=True), "refunded"
    common = {
        "charge_id": psp_reference,
        "property_id": None,
        "booking_id": line.text("Merchant Reference"),
        "payment_intent_id": None,
        "settled": True,
        "created_at": created_at,
    }
    rows: list[Row] = [
        {"provider_record_id": record_id, "kind": record_kind, "amount_minor": amount,
         "currency": gross_currency, "status": status, **common}
    ]  # fmt: skip
    net_currency = line.currency("Net Currency")
    fee = sum(line.minor(column, net_currency) for column in FEE_COLUMNS)
    if fee:
        rows.append(
            {"provider_record_id": record_id, "kind": "fee", "amount_minor": -fee,
             "currency": net_currency, "status": "settled", **common}
        )  # fmt: skip
    return rows


def records_of(batches: Sequence[SettlementBatch]) -> pd.DataFrame:
    """The batches' records in one frame, in the frame's order."""
    frames = [batch.records for batch in batches if not batch.records.empty]
    if not frames:
        return records_frame([])
    both = pd.concat(frames, ignore_index=True)
    return both.sort_values(["created_at", "provider_record_id", "kind"], ignore_index=True)
