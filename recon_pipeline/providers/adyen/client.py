"""Adyen client: a property-night's money movements and payments by id, read from Settlement details reports.

Adyen has no API that lists payments or returns one payment's current state (Checkout's
``/payments/details`` completes a redirect, it looks nothing up). What Adyen exposes is the Settlement
details report of every settlement batch, downloaded with the report user's credentials (HTTP Basic,
``ws@Company.X:password`` as ``RECON_PROVIDER_API_KEY``) from
``<reports root>/reports/download/MerchantAccount/<merchantAccount>/settlement_detail_report_batch_<N>.csv``.
Batches are numbered from 1 per merchant account; a number not published yet answers 404. So:

- the newest batch is found by probing upward from the newest one this process knows (doubling, then
  bisecting): one request when nothing new is published;
- a published batch never changes, so each is downloaded once per process (``_batches``);
- settlement calendar: a movement created at ``t`` settles in a batch that closes in
  ``(t, t + settlement_days]`` (``settlement_days`` default 3: Adyen pays out a few days after capture).
  A night ``[start, end)`` is read from every batch closing in ``(start, end + settlement_days]``, walking
  back from the newest; until a batch closing at or after ``end + settlement_days`` is published, the
  night cannot be complete and the pull raises ``IncompletePullError`` (the partition fails, and the
  schedule's lookback re-runs it once the batch is out);
- a batch's lines that are no property-night money movement (batch fees, corrections; see ``report.py``)
  are counted by type in the log when the batch is first read;
- by id (``fetch_records_by_id``, ``payment_state``): the rows of the last ``lookup_batches`` batches
  (default 31, about a month of daily payouts) that carry the id. ``payment_state`` is what those rows
  say of the payment (captured, refunded in part or in full); a payment no batch holds yet is None, and
  the event processor retries it later. The notification's own data is never used as state.

- payouts (``payouts_arriving``, ``payout_transactions``; ``payouts.py``): each batch's ``MerchantPayout``
  lines, itemised by the batch's other lines; a payout is failed once a later batch books it back
  (``BankInstructionReturned``).

A property's merchant account is its ``provider_account``; a property without one uses the client's
``merchant_account`` (configuration), else it cannot be read.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from urllib.parse import quote

import pandas as pd

from recon_pipeline.frames import records
from recon_pipeline.providers.adyen.dashboard import dashboard_url
from recon_pipeline.providers.adyen.payouts import (
    batch_of_payout,
    payout_of,
    returned_references,
    transactions_of,
)
from recon_pipeline.providers.adyen.report import (
    SettlementBatch,
    parse_settlement_report,
    payouts_of,
    records_of,
    report_file_name,
)
from recon_pipeline.providers.attribution import named_rows
from recon_pipeline.providers.errors import IncompletePullError, incomplete_pull
from recon_pipeline.providers.events import PaymentState
from recon_pipeline.providers.holds import AuthorizationHold
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import ListedEvents, RecordAddress
from recon_pipeline.providers.objects import PropertyAccount, records_frame
from recon_pipeline.providers.payouts import Payout, PayoutTransaction

logger = logging.getLogger(__name__)

DEFAULT_SETTLEMENT_DAYS = 3
DEFAULT_LOOKUP_BATCHES = 31
MAX_BATCH_NUMBER = 10**7  # batch numbers are daily-ish counters; a probe beyond this is a broken server


def basic_auth_header(api_key: str | None) -> dict[str, str]:
    """``Authorization: Basic`` of the report user's ``user:password``; none for a keyless simulator."""
    if api_key is None:
        return {}
    if ":" not in api_key:
        raise ValueError("an Adyen report credential is 'user:password'")
    return {"Authorization": "Basic " + base64.b64encode(api_key.encode()).decode("ascii")}


def report_path(merchant_account: str, batch_number: int) -> str:
    """Where batch ``batch_number``'s report of ``merchant_account`` is downloaded, under the reports root."""
    return (
        f"/reports/download/MerchantAccount/{quote(merchant_account, safe='')}/"
        f"{report_file_name(batch_number)}"
    )


class AdyenClient:
    """Reads a property's Adyen settlement reports over a shared ``ProviderHttp``."""

    name: str = "adyen"

    def __init__(
        self,
        http: ProviderHttp,
        api_key: str | None = None,
        merchant_account: str | None = None,
        settlement_days: int = DEFAULT_SETTLEMENT_DAYS,
        lookup_batches: int = DEFAULT_LOOKUP_BATCHES,
        customer_area: str | None = None,
    ) -> None:
        if settlement_days < 1 or lookup_batches < 1:
            raise ValueError("settlement_days and lookup_batches must be at least 1")
        self._http = http
        self._headers = basic_auth_header(api_key)
        self.merchant_account = merchant_account
        self.settlement_days = settlement_days
        self.lookup_batches = lookup_batches
        self.customer_area = customer_area  # None: not Adyen's own host (a simulator), nothing to link to
        self._lock = threading.Lock()
        self._batches: dict[tuple[str, int], SettlementBatch] = {}
        self._newest: dict[str, int] = {}  # per merchant account: the newest batch known published

    # --- ProviderClient ---------------------------------------------------------------------------------

    def dashboard_url(self, record: RecordAddress) -> str | None:
        if self.customer_area is None:
            return None
        return dashboard_url(self.customer_area, record, record.provider_account or self.merchant_account)

    def pull_claimed(
        self, account: PropertyAccount, window_start: datetime, window_end: datetime
    ) -> pd.DataFrame:
        """Every payment, refund and fee of the merchant account created in ``[window_start, window_end)``
        (``property_id`` None: the report names no property). Raises IncompletePullError when a batch that
        may hold the night is not published yet, or on any failure."""
        if window_start >= window_end:
            raise ValueError(f"empty window [{window_start}, {window_end})")
        merchant = self._merchant(account)
        due = window_end + timedelta(days=self.settlement_days)
        with incomplete_pull(
            f"pull of {account.property_id} [{window_start.isoformat()}, {window_end.isoformat()})"
        ):
            newest = self._newest_batch(merchant)
            if newest == 0 or self._batch(merchant, newest).closed_at < due:
                raise IncompletePullError(
                    f"merchant account {merchant!r}: the settlement batch closing by {due.isoformat()} that "
                    f"covers [{window_start.isoformat()}, {window_end.isoformat()}) is not published yet"
                )
            batches = []
            for number in range(newest, 0, -1):
                batch = self._batch(merchant, number)
                if batch.closed_at <= window_start:
                    break
                batches.append(batch)
            recent = records_of(batches)
        in_window = recent["created_at"].ge(window_start) & recent["created_at"].lt(window_end)
        return recent[in_window.to_numpy(dtype=bool)].reset_index(drop=True)

    def fetch_records_by_id(self, account: PropertyAccount, record_ids: Sequence[str]) -> pd.DataFrame:
        """The rows of the recent batches (``lookup_batches``) whose record id is one of ``record_ids``;
        other ids are absent. Raises IncompletePullError when the reports cannot be read."""
        ids = set(record_ids)
        with incomplete_pull(f"lookup of {len(ids)} records of {account.property_id}"):
            recent = self._recent_records(self._merchant(account))
        found = recent[recent["provider_record_id"].isin(ids).to_numpy(dtype=bool)]
        return records_frame(named_rows(records(found), account))

    def payment_state(self, provider_account: str | None, payment_id: str) -> PaymentState | None:
        """What the recent settlement batches say of the payment: captured (its Settled line), partially
        refunded or refunded (its Refunded lines); None when no recent batch holds its Settled line."""
        merchant = provider_account or self.merchant_account
        if merchant is None:
            raise ValueError("no merchant account to read the payment from")
        rows = self._recent_records(merchant)
        rows = rows[rows["charge_id"].eq(payment_id).to_numpy(dtype=bool)]
        payment = rows[rows["kind"].eq("payment").to_numpy(dtype=bool)]
        if payment.empty:
            return None
        settled = payment.iloc[0]
        amount = int(settled["amount_minor"])
        refunded = -int(rows.loc[rows["kind"].eq("refund"), "amount_minor"].sum())
        status = "captured" if refunded == 0 else ("refunded" if refunded >= amount else "partially_refunded")
        created: datetime = settled["created_at"].to_pydatetime()
        return PaymentState(
            provider_payment_id=payment_id,
            status=status,
            amount_minor=amount,
            amount_refunded_minor=refunded,
            currency=str(settled["currency"]),
            captured_at=created,
            occurred_at=created,
            property_id=None,
            booking_id=settled["booking_id"] if isinstance(settled["booking_id"], str) else None,
        )

    def authorization_holds(
        self, account: PropertyAccount, payment_ids: Sequence[str]
    ) -> list[AuthorizationHold]:
        """Empty: Adyen's API subset read here has no open-hold source. The settlement details report lists
        money that settled (an authorisation awaiting capture never appears in it) and Adyen offers no
        lookup of a payment by PSP reference; an authorisation is told only by its AUTHORISATION
        notification, which lands in ``payment_orders`` without the deadline its capture must meet."""
        return []

    def events_since(self, provider_account: str | None, created_gte: int) -> ListedEvents | None:
        """None: Adyen has no events API; missed notifications are covered by the nightly pull."""
        return None

    def payouts_arriving(
        self, provider_account: str | None, arrival_gte: datetime, arrival_lt: datetime
    ) -> list[Payout] | None:
        """The payouts (``MerchantPayout`` lines, ``payouts.py``) of the merchant account's batches closed
        in ``[arrival_gte, arrival_lt)``, read back from the newest batch, whose later batches tell which
        payout the bank returned. A line of no positive amount is no payout: Adyen pays out only a positive
        payable balance (the batch carries the rest over). Raises IncompletePullError."""
        merchant = provider_account or self.merchant_account
        if merchant is None:
            raise ValueError("no merchant account to read payouts from")
        first, end = arrival_gte.date(), arrival_lt.date()
        with incomplete_pull(f"payouts of merchant account {merchant!r} arriving in [{first}, {end})"):
            batches = []
            for number in range(self._newest_batch(merchant), 0, -1):
                batch = self._batch(merchant, number)
                if batch.closed_at.date() < first:
                    break
                batches.append(batch)
            returned = returned_references(batches)
            lines = [line for line in payouts_of(batches) if line.amount_minor > 0]  # nothing paid else
            payouts = [payout_of(line, returned) for line in lines]
        return [payout for payout in payouts if first <= payout.arrival_date < end]

    def payout_transactions(self, payout: Payout) -> list[PayoutTransaction] | None:
        """The lines of the payout's batch in its currency. Raises IncompletePullError."""
        merchant, number, _currency = batch_of_payout(payout.payout_id)
        with incomplete_pull(f"settlement batch {number} of merchant account {merchant!r}"):
            return transactions_of(self._batch(merchant, number), payout)

    # --- reports ----------------------------------------------------------------------------------------

    def _merchant(self, account: PropertyAccount) -> str:
        merchant = account.provider_account or self.merchant_account
        if merchant is None:
            raise ValueError(
                f"property {account.property_id}: an Adyen property needs its merchant account as "
                "provider_account (or a configured default merchant account)"
            )
        return merchant

    def _recent_records(self, merchant: str) -> pd.DataFrame:
        newest = self._newest_batch(merchant)
        oldest = max(1, newest - self.lookup_batches + 1)
        return records_of([self._batch(merchant, n) for n in range(newest, oldest - 1, -1)] if newest else [])

    def _newest_batch(self, merchant: str) -> int:
        """The newest published batch number (0: none), probing upward from the newest known one."""
        with self._lock:
            known = self._newest.get(merchant, 0)
        low, step = known, 1  # ``low`` is published (or 0); find a number that is not
        high = low + step
        while self._published(merchant, high):
            low, step = high, step * 2
            high = low + step
            if high > MAX_BATCH_NUMBER:
                raise IncompletePullError(f"merchant account {merchant!r}: batch numbers do not end")
        while high - low > 1:  # low published, high not
            middle = (low + high) // 2
            low, high = (middle, high) if self._published(merchant, middle) else (low, middle)
        with self._lock:
            self._newest[merchant] = max(low, self._newest.get(merchant, 0))
            return self._newest[merchant]

    def _published(self, merchant: str, number: int) -> bool:
        return self._read_batch(merchant, number) is not None

    def _batch(self, merchant: str, number: int) -> SettlementBatch:
        batch = self._read_batch(merchant, number)
        if batch is None:
            raise IncompletePullError(f"merchant account {merchant!r}: batch {number} answered 404")
        return batch

    def _read_batch(self, merchant: str, number: int) -> SettlementBatch | None:
        """Batch ``number``'s report, downloaded once per process (a published batch never changes)."""
        with self._lock:
            cached = self._batches.get((merchant, number))
        if cached is not None:
            return cached
        text = self._http.get_text(report_path(merchant, number), headers=self._headers)
        if text is None:
            return None
        batch = parse_settlement_report(text, report_file_name(number), merchant, number)
        with self._lock:
            cached = self._batches.get((merchant, number))
            if cached is not None:
                return cached
            self._batches[(merchant, number)] = batch
        counts = sorted(batch.unreconciled_counts.items())
        if counts:
            logger.info(
                "merchant account %r, settlement batch %d: lines that are no property-night movement, "
                "kept with the batch's payout: %s",
                merchant,
                number,
                ", ".join(f"{n} {record_type}" for record_type, n in counts),
            )
        return batch
