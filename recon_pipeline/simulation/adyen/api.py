"""The simulator's Adyen: the shared store's charges and refunds served as Settlement details reports, and
signed standard notifications for tests and the demo.

The store is one model for every flavour (``host/store.py``): here a charge's ``account`` is its
merchant account (the platform's charges, ``account`` None, belong to ``SIMULATOR_MERCHANT_ACCOUNT``), its
id is its PSP reference (an Adyen world's charges have 16-character ids) and ``metadata.booking_id`` its
merchant reference. A captured charge is a ``Settled`` line, a succeeded refund a ``Refunded`` line (PSP
reference = the charge's, modification reference = the refund's id), a dispute's withdrawal and
reinstatement balance transactions ``Chargeback`` and ``ChargebackReversed`` lines (modification
reference = the dispute's id, the chargeback fee as ``Commission``), each in the batch of the UTC day
``store.settlement_delay_days`` after the day it was created; a charge's line is its capture's (its balance
transaction's ``created``: a hold captured days after its authorization is dated by the capture). Fees
are the charge's balance-transaction fee split as interchange++ pricing reports it (interchange, scheme
fees, markup; no commission).

Batches are daily per merchant account, numbered from 1 at the first day that settles anything, each
closing at ``BATCH_CLOSE`` UTC on its day with one ``MerchantPayout`` line per currency (the payout line
of a batch with no movement is in EUR, its reference Adyen's default payout description,
``payout_reference``); a payout ``store.failed_payouts`` names (by ``payouts.payout_id_of``) is returned
by the bank: the next batch books it back as a ``BankInstructionReturned`` line and pays it out again.
Each batch is published only once ``store.clock()`` has passed its
close: a later number answers 404 as Adyen does. ``Creation Date`` is written in the company account's
time zone (``Europe/Amsterdam``: CET/CEST), as Adyen writes it. Downloads need HTTP Basic auth of the
report user when the app holds credentials (``request.app.state.api_key``, ``user:password``); anything
else is answered 401, and a query parameter 400 (``documented.py``: the download takes none). An app
with fault switches (``request.app.state.faults``, as the shared simulator app has) counts downloads and
injects its statuses, delays and cut-off bodies into them as into any API request.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import zlib
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from recon_pipeline.money import major_units, minor_unit_exponent
from recon_pipeline.providers.adyen import documented
from recon_pipeline.providers.adyen.payouts import BANK_INSTRUCTION_RETURNED, payout_id_of
from recon_pipeline.providers.adyen.report import (
    CHARGEBACK,
    CHARGEBACK_REVERSED,
    CREATION_DATE_FORMAT,
    MERCHANT_PAYOUT,
    REFUNDED,
    SETTLED,
    SETTLEMENT_DETAIL_COLUMNS,
)
from recon_pipeline.providers.adyen.webhook import compute_signature
from recon_pipeline.simulation.host.cards import adyen_payment_method, card_of
from recon_pipeline.simulation.host.faults import FaultSwitches
from recon_pipeline.simulation.host.store import SimulatorStore, StripeObject

SIMULATOR_COMPANY_ACCOUNT = "SimulatorHotelsCompany"
SIMULATOR_MERCHANT_ACCOUNT = "SimulatorHotelsECOM"
COMPANY_ZONE = ZoneInfo("Europe/Amsterdam")
BATCH_CLOSE = time(6, 0)  # UTC
REPORT_PATH = (
    "/reports/download/MerchantAccount/{merchant_account}/settlement_detail_report_batch_{batch}.csv"
)


def merchant_account_of(charge: StripeObject) -> str:
    """The merchant account a store charge was processed on."""
    account = charge.get("account")
    return account if isinstance(account, str) else SIMULATOR_MERCHANT_ACCOUNT


def settlement_day(created: int, store: SimulatorStore) -> date:
    """The day of the batch that settles a movement created at ``created``."""
    return datetime.fromtimestamp(created, UTC).date() + timedelta(days=store.settlement_delay_days)


def batch_close(day: date) -> datetime:
    return datetime.combine(day, BATCH_CLOSE, UTC)


def decimal_text(amount_minor: int, currency: str) -> str:
    """Minor units as the report's decimal major units (``1050`` EUR -> ``10.50``)."""
    exponent = minor_unit_exponent(currency)
    return f"{major_units(amount_minor, currency):.{exponent}f}"


def _local(created: int) -> tuple[str, str]:
    moment = datetime.fromtimestamp(created, UTC).astimezone(COMPANY_ZONE)
    return moment.strftime(CREATION_DATE_FORMAT), moment.tzname() or "UTC"


def _fee_parts(fee: int) -> tuple[int, int, int]:
    """A fee as (interchange, scheme fees, markup), summing to it."""
    interchange, scheme = fee // 2, fee // 5
    return interchange, scheme, fee - interchange - scheme


def _fee(charge: StripeObject) -> int:
    transaction = charge.get("balance_transaction")
    fee = transaction.get("fee") if isinstance(transaction, dict) else None
    return fee if isinstance(fee, int) else 0


def _line(merchant: str, **values: str) -> dict[str, str]:
    return {"Company Account": SIMULATOR_COMPANY_ACCOUNT, "Merchant Account": merchant, **values}


def captured_at(charge: StripeObject) -> int:
    """When a charge was captured: its balance transaction's ``created`` where the store gives it one, else
    the charge's own."""
    transaction = charge.get("balance_transaction")
    held = transaction.get("created") if isinstance(transaction, dict) else None
    return int(charge["created"] if held is None else held)


def settled_line(charge: StripeObject, merchant: str) -> dict[str, str]:
    """A captured charge's Settled line (its batch number is the batch's to add)."""
    currency = str(charge["currency"]).upper()
    amount, fee = int(charge["amount_captured"]), _fee(charge)
    interchange, scheme, markup = _fee_parts(fee)
    created, zone = _local(captured_at(charge))
    money = {
        "Gross Currency": currency, "Gross Credit (GC)": decimal_text(amount, currency), "Exchange Rate": "1",
        "Net Currency": currency, "Net Credit (NC)": decimal_text(amount - fee, currency),
        "Markup (NC)": decimal_text(markup, currency), "Scheme Fees (NC)": decimal_text(scheme, currency),
        "Interchange (NC)": decimal_text(interchange, currency),
    }  # fmt: skip
    return _line(
        merchant, **money, **{
            "Psp Reference": charge["id"], "Merchant Reference": _merchant_reference(charge),
            **_methods(charge), "Creation Date": created,
            "TimeZone": zone, "Type": SETTLED, "Modification Reference": charge["id"],
        }
    )  # fmt: skip


def refunded_line(refund: StripeObject, charge: StripeObject, merchant: str) -> dict[str, str]:
    """A succeeded refund's Refunded line (its batch number is the batch's to add)."""
    currency = str(refund["currency"]).upper()
    amount = decimal_text(int(refund["amount"]), currency)
    created, zone = _local(refund["created"])
    return _line(
        merchant, **{
            "Psp Reference": charge["id"], "Merchant Reference": _merchant_reference(charge),
            **_methods(charge), "Creation Date": created,
            "TimeZone": zone, "Type": REFUNDED, "Modification Reference": refund["id"],
            "Gross Currency": currency, "Gross Debit (GC)": amount, "Exchange Rate": "1",
            "Net Currency": currency, "Net Debit (NC)": amount,
        }
    )  # fmt: skip


def dispute_line(
    dispute: StripeObject, transaction: StripeObject, charge: StripeObject, merchant: str
) -> tuple[dict[str, str], int]:
    """A dispute balance transaction's line and its signed net: the withdrawal (``reporting_category``
    ``dispute``) a ``Chargeback``, the reinstatement a ``ChargebackReversed``; the dispute's id is the
    line's modification reference and the transaction's fee, the chargeback fee, its ``Commission``
    (Adyen keeps that fee when the chargeback is reversed, so a negative fee is not written)."""
    currency = str(transaction["currency"]).upper()
    amount, fee = abs(int(transaction["amount"])), max(int(transaction.get("fee") or 0), 0)
    dispute_withdrawal = transaction["reporting_category"] == "dispute"
    net = -(amount + fee) if dispute_withdrawal else amount - fee
    gross_column = "Gross Debit (GC)" if dispute_withdrawal else "Gross Credit (GC)"
    net_column = "Net Debit (NC)" if net < 0 else "Net Credit (NC)"
    created, zone = _local(transaction["created"])
    line = _line(
        merchant, **{
            "Psp Reference": charge["id"], "Merchant Reference": _merchant_reference(charge),
            **_methods(charge), "Creation Date": created,
            "TimeZone": zone, "Type": CHARGEBACK if dispute_withdrawal else CHARGEBACK_REVERSED,
            "Modification Reference": dispute["id"], "Gross Currency": currency,
            gross_column: decimal_text(amount, currency), "Exchange Rate": "1", "Net Currency": currency,
            net_column: decimal_text(abs(net), currency), "Commission (NC)": decimal_text(fee, currency),
        }
    )  # fmt: skip
    return line, net


def _methods(charge: StripeObject) -> dict[str, str]:
    """The charge's card (``host/cards.py``) as Adyen's payment method type (``visa``, ``mc``, ``amex``),
    in both of the report's method columns."""
    method = adyen_payment_method(card_of(charge).brand)
    return {"Payment Method": method, "Payment Method Variant": method}


def _merchant_reference(charge: StripeObject) -> str:
    metadata = charge.get("metadata")
    booking = metadata.get("booking_id") if isinstance(metadata, dict) else None
    return booking if isinstance(booking, str) and booking else str(charge["id"])


def _movements(store: SimulatorStore, merchant: str) -> list[tuple[date, dict[str, str], int, str]]:
    """(settlement day, line without its batch, net minor units, currency) of every settled movement."""
    charges = {c["id"]: c for c in store.charges if merchant_account_of(c) == merchant}
    out: list[tuple[date, dict[str, str], int, str]] = []
    for charge in charges.values():
        if charge.get("status") == "succeeded" and charge.get("captured"):
            line = settled_line(charge, merchant)
            net = int(charge["amount_captured"]) - _fee(charge)
            out.append((settlement_day(captured_at(charge), store), line, net, line["Net Currency"]))
    for refund in store.refunds:
        refunded = charges.get(refund.get("charge", ""))
        if refunded is not None and refund.get("status") == "succeeded":
            line = refunded_line(refund, refunded, merchant)
            day = settlement_day(refund["created"], store)
            out.append((day, line, -int(refund["amount"]), line["Net Currency"]))
    for dispute in store.disputes:
        disputed = charges.get(dispute.get("charge", ""))
        for transaction in dispute.get("balance_transactions", []):
            category = transaction.get("reporting_category")
            if disputed is not None and category in ("dispute", "dispute_reversal"):
                line, net = dispute_line(dispute, transaction, disputed, merchant)
                out.append((settlement_day(transaction["created"], store), line, net, line["Net Currency"]))
    return out


def payout_reference(merchant: str, batch: int) -> str:
    """The payout description Adyen sends the bank by default: a unique ``TX…XT`` reference, the
    merchant account and the batch number."""
    return f"TX{zlib.crc32(merchant.encode()):010d}{batch:04d}XT {merchant}, batch {batch}"


def _payout_nets(
    store: SimulatorStore, merchant: str, movements: list[tuple[date, dict[str, str], int, str]], batch: int
) -> tuple[dict[str, int], dict[str, int]]:
    """(what batch ``batch`` pays out per currency, what it books back of the previous batch's payouts
    the bank returned, ``store.failed_payouts``): each batch's movements plus what came back of the
    previous batch's payout, batch by batch from the first."""
    first = min(m[0] for m in movements)
    moved: dict[date, dict[str, int]] = {}
    for day, _, net, currency in movements:
        nets_of_day = moved.setdefault(day, {})
        nets_of_day[currency] = nets_of_day.get(currency, 0) + net
    nets: dict[str, int] = {}
    returned: dict[str, int] = {}
    for number in range(1 if store.failed_payouts else batch, batch + 1):
        returned = {
            currency: net
            for currency, net in nets.items()
            if net > 0 and payout_id_of(merchant, number - 1, currency) in store.failed_payouts
        }
        nets = dict(returned)
        for currency, net in moved.get(first + timedelta(days=number - 1), {}).items():
            nets[currency] = nets.get(currency, 0) + net
    return nets, returned


def render_batch(store: SimulatorStore, merchant: str, batch: int) -> str | None:
    """Batch ``batch``'s Settlement details report CSV of ``merchant``; None while it is not published."""
    movements = _movements(store, merchant)
    if not movements or batch < 1:
        return None
    day = min(m[0] for m in movements) + timedelta(days=batch - 1)
    closes = batch_close(day)
    if closes.timestamp() > store.clock():
        return None
    lines = [{**line, "Batch Number": str(batch)} for d, line, _, _ in movements if d == day]
    lines.sort(key=lambda line: (line["Creation Date"], line["Psp Reference"], line["Type"]))
    nets, returned = _payout_nets(store, merchant, movements, batch)
    created, zone = _local(int(closes.timestamp()))
    for currency, amount in sorted(returned.items()):
        returned_reference = payout_reference(merchant, batch - 1)
        lines.append(_line(merchant, **{
            "Batch Number": str(batch), "Creation Date": created, "TimeZone": zone,
            "Type": BANK_INSTRUCTION_RETURNED, "Modification Reference": returned_reference,
            "Net Currency": currency, "Net Credit (NC)": decimal_text(amount, currency),
        }))  # fmt: skip
    for currency, net in sorted((nets or {"EUR": 0}).items()):
        lines.append(_line(merchant, **{
            "Batch Number": str(batch), "Creation Date": created, "TimeZone": zone, "Type": MERCHANT_PAYOUT,
            "Modification Reference": payout_reference(merchant, batch), "Net Currency": currency,
            "Net Debit (NC)": decimal_text(net, currency) if net >= 0 else "",
            "Net Credit (NC)": decimal_text(-net, currency) if net < 0 else "",
        }))  # fmt: skip
    return csv_text(lines)


def csv_text(lines: Iterable[dict[str, str]]) -> str:
    """Lines as a report CSV with Adyen's header, columns in its documented order."""
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=SETTLEMENT_DETAIL_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(lines)
    return out.getvalue()


def authorized(request: Request) -> bool:
    """HTTP Basic of the report user's ``user:password`` when the app holds one (else keyless)."""
    api_key = getattr(request.app.state, "api_key", None)
    if api_key is None:
        return True
    expected = "Basic " + base64.b64encode(str(api_key).encode()).decode("ascii")
    return request.headers.get("authorization") == expected


async def download_report(request: Request) -> Response:
    """A report download, through the app's fault switches (``app.state.faults``) when it has them."""
    faults: FaultSwitches | None = getattr(request.app.state, "faults", None)
    decision = faults.begin(request.url.path) if faults is not None else None
    status = 500
    try:
        if decision is not None and decision.delay_s:
            await asyncio.sleep(decision.delay_s)
        if decision is not None and decision.status is not None:
            status = decision.status
            headers = {"Retry-After": decision.retry_after} if decision.retry_after is not None else None
            text = decision.message or f"HTTP Status {status}"  # a refusal (``reject``) says why
            return PlainTextResponse(text, status_code=status, headers=headers)
        response = _report_response(request)
        status = response.status_code
        if decision is not None and decision.truncate and status == 200:  # cut off: no payout line
            return Response(bytes(response.body)[: len(response.body) // 2], media_type=response.media_type)
        return response
    finally:
        if faults is not None and decision is not None:
            faults.end(decision, status)


def _report_response(request: Request) -> Response:
    if not authorized(request):
        return PlainTextResponse(
            "HTTP Status 401 - Unauthorized",
            status_code=401,
            headers={"WWW-Authenticate": 'Basic realm="Adyen"'},
        )
    refused = documented.refusal(documented.REPORT_DOWNLOAD, request.query_params.multi_items())
    if refused is not None:
        return PlainTextResponse(refused.message, status_code=400)
    store: SimulatorStore = request.app.state.store
    text = render_batch(store, request.path_params["merchant_account"], request.path_params["batch"])
    if text is None:
        return PlainTextResponse("HTTP Status 404 - Not Found", status_code=404)
    return Response(text, media_type="text/csv; charset=utf-8")


def report_routes() -> list[Route]:
    """The report download route; it reads the store at ``request.app.state.store``."""
    path = REPORT_PATH.format(merchant_account="{merchant_account}", batch="{batch:int}")
    return [Route(path, download_report, methods=["GET"])]


# --- notifications ---------------------------------------------------------------------------------------


def notification_item(
    event_code: str,
    psp_reference: str,
    *,
    merchant_account: str = SIMULATOR_MERCHANT_ACCOUNT,
    amount_minor: int = 0,
    currency: str = "EUR",
    success: bool = True,
    original_reference: str | None = None,
    merchant_reference: str = "",
    event_date: str = "2026-01-01T00:00:00+01:00",
    reason: str | None = None,
) -> dict[str, Any]:
    """An unsigned NotificationRequestItem as Adyen sends it (``originalReference`` only on modifications)."""
    item: dict[str, Any] = {
        "amount": {"value": amount_minor, "currency": currency},
        "eventCode": event_code,
        "eventDate": event_date,
        "merchantAccountCode": merchant_account,
        "merchantReference": merchant_reference,
        "paymentMethod": "visa",
        "pspReference": psp_reference,
        "success": "true" if success else "false",
    }
    if original_reference is not None:
        item["originalReference"] = original_reference
    if reason is not None:
        item["reason"] = reason
    return item


def report_available_item(
    base_url: str, merchant_account: str, batch: int, event_date: str
) -> dict[str, Any]:
    """The REPORT_AVAILABLE item announcing a batch's report (pspReference = file name, reason = its URL)."""
    path = REPORT_PATH.format(merchant_account=merchant_account, batch=batch)
    return notification_item(
        "REPORT_AVAILABLE", path.rsplit("/", 1)[1], merchant_account=merchant_account,
        event_date=event_date, reason=base_url.rstrip("/") + path,
    )  # fmt: skip


def signed(item: dict[str, Any], hmac_key_hex: str) -> dict[str, Any]:
    """``item`` with ``additionalData.hmacSignature`` under the hex HMAC key."""
    additional = {**item.get("additionalData", {}), "hmacSignature": compute_signature(item, hmac_key_hex)}
    return {**item, "additionalData": additional}
