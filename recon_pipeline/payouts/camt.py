"""Bank credits from an ISO 20022 CAMT.053 statement (read with ``pycamt``).

Only booked credits are kept: debits, reversals and pending entries are not deposits. A batch booking
(one entry, several transaction details) yields one credit per detail, each with its own amount and
remittance text: that is how banks show several payouts booked together. A credit is keyed by the
statement's message id, the entry's reference (``AcctSvcrRef``, else its position) and the detail's
position, so importing the same file again adds nothing. Anything a credit needs that is missing or
malformed fails the import with a one-line error naming the entry: a statement is imported whole or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from recon_pipeline.money import minor_unit_exponent, normalize_currency
from recon_pipeline.payouts.deposit import BankCredit

REMITTANCE_FIELDS = (
    "RemittanceInformationFull",
    "AdditionalRemittanceInformation",
    "EndToEndId",
    "AdditionalEntryInformation",
)


@dataclass(frozen=True)
class Statement:
    """What a statement file held: its credits, and how many entries were not credits."""

    statement_id: str
    credits: list[BankCredit]
    skipped: int


class StatementError(ValueError):
    """The file is not a usable CAMT.053 statement (the message names the file and what is wrong)."""


def read_statement(path: Path) -> Statement:
    """The booked credits of the CAMT.053 file at ``path``; StatementError (one line) when it is not one."""
    from lxml.etree import XMLSyntaxError
    from pycamt.parser import Camt053ParseError, Camt053Parser

    try:
        parser = Camt053Parser(path.read_bytes())
        header = parser.get_group_header()
        rows = parser.get_transactions()
    except XMLSyntaxError as error:
        raise StatementError(f"{path}: not XML ({error})") from None
    except (Camt053ParseError, AttributeError):  # no Stmt/Rpt, or a group header without MsgId
        raise StatementError(f"{path}: not a CAMT.053 statement (no statement with a group header)") from None
    if parser.version == "unknown" or "camt.053" not in parser.tree.tag:
        raise StatementError(f"{path}: not a CAMT.053 statement (root {parser.tree.tag!r})")
    statement_id = header.get("MessageID")
    if not statement_id:
        raise StatementError(f"{path}: the group header has no MsgId")
    return statement_of(str(path), statement_id, rows)


def statement_of(name: str, statement_id: str, rows: list[Mapping[str, Any]]) -> Statement:
    """The credits of pycamt's rows (one per transaction detail; consecutive rows of one entry share its
    reference)."""
    credits: list[BankCredit] = []
    skipped = 0
    previous: tuple[str | None, int] | None = None
    detail_index = 0
    for position, row in enumerate(rows, start=1):
        reference = row.get("TransactionID")
        entry = (reference, position) if reference is None else (reference, 0)
        detail_index = detail_index + 1 if entry == previous else 0
        previous = entry
        what = f"{name}: entry {reference or position}"
        if row.get("CreditDebitIndicator") != "CRDT" or row.get("ReversalIndicator") == "true":
            skipped += 1
            continue
        if row.get("Status") not in (None, "BOOK"):
            skipped += 1
            continue
        currency = _currency(row.get("Currency"), what)
        remittance = " ".join(str(row[field]) for field in REMITTANCE_FIELDS if row.get(field))
        credits.append(
            BankCredit(
                statement_id=statement_id,
                entry_reference=reference or f"#{position}",
                detail_index=detail_index,
                account_iban=row.get("AccountIBAN"),
                booking_date=_date(row.get("BookingDate"), "booking date", what),
                value_date=_date(row["ValueDate"], "value date", what) if row.get("ValueDate") else None,
                amount_minor=_minor(row.get("Amount"), currency, what),
                currency=currency,
                remittance_info=remittance,
            )
        )
    return Statement(statement_id, credits, skipped)


def _currency(raw: object, what: str) -> str:
    if not isinstance(raw, str):
        raise StatementError(f"{what}: amount has no Ccy")
    try:
        return normalize_currency(raw)
    except ValueError as error:
        raise StatementError(f"{what}: {error}") from None


def _minor(raw: object, currency: str, what: str) -> int:
    try:
        amount = Decimal(str(raw).strip())
    except InvalidOperation:
        raise StatementError(f"{what}: amount {raw!r} is not a decimal number") from None
    minor = amount.scaleb(minor_unit_exponent(currency))
    if not amount.is_finite() or minor != minor.to_integral_value() or minor <= 0:
        raise StatementError(f"{what}: amount {raw!r} is not a positive amount in {currency}")
    return int(minor)


def _date(raw: object, name: str, what: str) -> date:
    if not isinstance(raw, str):
        raise StatementError(f"{what}: no {name}")
    try:
        return date.fromisoformat(raw.strip()[:10])
    except ValueError:
        raise StatementError(f"{what}: {name} {raw!r} is not a date") from None
