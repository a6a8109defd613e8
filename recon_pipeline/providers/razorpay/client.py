"""Razorpay adapter: one property-night of payments and refunds as the provider-record frame (``records.py``).

The same guarantees as the Stripe adapter (every record validated, a pull that cannot complete raises
``IncompletePullError``, an unreachable provider never makes a record look missing), over Razorpay's API:

- ``GET /v1/payments`` and ``GET /v1/refunds`` with ``from`` / ``to`` (unix seconds, both inclusive),
  ``count`` (at most 100) and ``skip``; answers ``{"entity": "collection", "count": n, "items": [...]}``,
  newest first. A page shorter than ``count`` is the last. ``to`` is inclusive, so a record created at the
  window's end second belongs to the next night and is dropped here.
- ``GET /v1/payments/{id}`` and ``GET /v1/refunds/{id}`` fetch by id; an id Razorpay does not know is
  answered with 400 ``BAD_REQUEST_ERROR`` "The id provided does not exist" (not 404), read as absent.
- Basic auth with ``key_id:key_secret`` (``RECON_PROVIDER_API_KEY``); amounts in minor units (paise).
- Attribution (``attribution.attribute``) by ``notes.property_id`` of the payment (``notes.booking_id``
  names the booking), else ``payment_orders``; a refund follows its payment (``payment_id``), fetched by
  id when it was created in an earlier night. Razorpay renders empty notes as ``[]``.
- A payment's order (``order_id``) is to Razorpay what a PaymentIntent is to Stripe: it goes in the
  frame's ``payment_intent_id``, and a by-id lookup of an ``order_`` id reads
  ``GET /v1/orders/{id}/payments``.
- Fees: the fee Razorpay booked is the one in its settlement, listed by the settlement recon
  ``GET /v1/settlements/recon/combined?year&month&day`` (``count``/``skip`` paged) under the day the money
  settled: T+2 *working* days, Indian calendar (``settlement.py``: weekends, India's holidays and
  ``RECON_RAZORPAY_HOLIDAYS``). A night's payments are looked up in the recon of every day from their own
  through the ``settlement_days``-th working day after it (default 3, ``RECON_RAZORPAY_SETTLEMENT_DAYS``),
  one paged list per day, read with the payments themselves. A settled payment's ``fee`` row is the
  settled fee (GST included; the GST part, the item's ``tax``, is logged per pull) with status
  ``settled``; a payment not settled yet (the morning after its night) keeps its own ``fee`` field, status
  ``provisional``. The nightly schedule's lookback re-runs the night once it has settled, so a fee revised
  at settlement (settled ≠ the payment's ``fee``) then shows as the ``fee`` row's amount, and a ledger that
  booked the payment's fee gets an ``amount_mismatch``. A recon page that cannot be read fails the pull.
- Disputes: the money a dispute moves is the recon's item with a ``dispute_id`` (an ``adjustment``): its
  debit a ``dispute`` row (negative), its credit, when the merchant won, a ``dispute_reversal`` row
  (positive), each under the dispute's id (``disp_...``) on the night the item was created, read from the
  same recon days as the fees (so once settled: the lookback re-run brings it). The dispute
  (``GET /v1/disputes/{id}``) names its payment, whose notes attribute it; the row's status is the
  dispute's (``open``, ``under_review``, ``won``, ``lost``, ``closed``). A by-id lookup of a ``disp_`` id
  reads the recon of the ``MAX_RECON_DAYS`` days from the dispute's creation (a reversal later than that is
  not found by id).

- Payouts (``payouts_arriving``, ``payout_transactions``; ``payouts.py``): the settlements
  (``GET /v1/settlements``, ``from``/``to`` on ``created_at``, ``count``/``skip`` paged) arriving on a
  night, each itemised by the recon items of its day that name it (``settlement_id``).

Only the merchant's own account is read: a property with ``provider_account`` is refused (Razorpay has no
``Stripe-Account`` equivalent for a plain merchant key).
"""

from __future__ import annotations

import base64
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pandas as pd

from recon_pipeline.providers.attribution import attribute, claim_of, claimable, named_rows
from recon_pipeline.providers.cards import NO_CARD_KEYS, card_keys
from recon_pipeline.providers.errors import (
    ProviderDataError,
    ProviderRequestRejected,
    incomplete_pull,
)
from recon_pipeline.providers.events import PaymentState
from recon_pipeline.providers.holds import AuthorizationHold
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import ListedEvents, RecordAddress
from recon_pipeline.providers.objects import (
    PropertyAccount,
    ProviderObject,
    Row,
    amount_field,
    created_at_field,
    currency_field,
    fetch_each,
    field_value,
    gather,
    optional_id_field,
    record_id,
    records_frame,
)
from recon_pipeline.providers.payouts import Payout, PayoutTransaction
from recon_pipeline.providers.pull import (
    Fetched,
    Page,
    RecordShape,
    claimed_payment_rows,
    claimed_refund_rows,
    list_all,
    pull_name,
    window_seconds,
)
from recon_pipeline.providers.razorpay.dashboard import dashboard_url
from recon_pipeline.providers.razorpay.holds import DEFAULT_CAPTURE_TIMEOUT, hold_of_payment
from recon_pipeline.providers.razorpay.payouts import (
    payout_of,
    settlement_day,
    settlement_params,
    transactions_of,
)
from recon_pipeline.providers.razorpay.settlement import (
    DEFAULT_SETTLEMENT_DAYS,
    MAX_SETTLEMENT_DAYS,
    DisputeMovement,
    SettledFee,
    SettlementCalendar,
    Settlements,
    dispute_recon_days,
    gst_summary,
    payment_fee,
    read_recon,
    recon_days,
    revised_fees,
)
from recon_pipeline.providers.razorpay.state import notes_field, state_of_razorpay_payment

logger = logging.getLogger(__name__)

PAGE_COUNT = 100
RECON_PATH = "/v1/settlements/recon/combined"
SETTLEMENTS_PATH = "/v1/settlements"
FEE_SETTLED, FEE_PROVISIONAL = "settled", "provisional"  # the status of a fee row: where its amount is from
PAYMENT_ID_PREFIX = "pay_"
REFUND_ID_PREFIX = "rfnd_"
ORDER_ID_PREFIX = "order_"
DISPUTE_ID_PREFIX = "disp_"
DISPUTE_STATUSES = frozenset({"open", "under_review", "won", "lost", "closed"})
PAYMENT_STATUSES = frozenset({"created", "authorized", "captured", "refunded", "failed"})
REFUND_STATUSES = frozenset({"pending", "processed", "failed"})
# A payment's card comes inline only when expanded (``expand[]=card``, documented on the payments list and
# on a fetch by id): on the requests already made, so the card's keys cost no request of their own.
PAYMENT_EXPANSIONS = {"expand[]": "card"}
# Razorpay's answer to a by-id fetch of an id it does not know (HTTP 400, not 404).
UNKNOWN_ID_DESCRIPTION = "The id provided does not exist"


# --- pure mapping: Razorpay JSON -> provider-record rows ----------------------------------------------


def claimed_property(payment: ProviderObject) -> str | None:
    """The property the payment names in ``notes.property_id``, None when it names none."""
    return claim_of(payment.get("notes"))


def order_id_of(payment: ProviderObject) -> str | None:
    """The order the payment pays (``order_id``), None for a payment made without one."""
    return optional_id_field(payment, "order_id", "payment")


def booking_id_of(payment: ProviderObject) -> str | None:
    """``notes.booking_id`` of a payment, None when absent; anything but a printable id is a data error."""
    notes = notes_field(payment, "payment")
    return optional_id_field(notes, "booking_id", f"notes of payment {payment.get('id')!r}")


def card_keys_of(payment: ProviderObject) -> Row:
    """The payment's card keys: the expanded ``card``'s ``network`` (as a brand) and ``last4``, and
    ``acquirer_data.auth_code``; null where Razorpay gives none (not a card payment, a card not expanded,
    as on an order's payments)."""
    what = f"payment {payment.get('id')!r}"
    card, acquirer = payment.get("card"), payment.get("acquirer_data")
    if card is not None and not isinstance(card, dict):
        raise ProviderDataError(f"{what}: field 'card' is {str(card)[:80]!r}")
    if acquirer is not None and not isinstance(acquirer, dict | list):  # an empty object may come as []
        raise ProviderDataError(f"{what}: field 'acquirer_data' is {str(acquirer)[:80]!r}")
    if payment.get("method") != "card" and card is None:
        return dict(NO_CARD_KEYS)
    card = card or {}
    code = acquirer.get("auth_code") if isinstance(acquirer, dict) else None
    return card_keys(card.get("network"), card.get("last4"), code, what)


def payment_rows(
    payment: ProviderObject, property_id: str | None, settled_fee: int | None = None
) -> list[Row]:
    """A payment's ``payment`` row, and its ``fee`` row when Razorpay took a fee.

    Money moved when the payment was captured: status ``captured``, or ``refunded`` (the refunds are rows
    of their own). ``created`` / ``authorized`` / ``failed`` payments are not settled. The fee is
    ``settled_fee`` (status ``settled``) when the settlement recon has the payment, else the payment's own
    ``fee`` (status ``provisional``).
    """
    payment_id = record_id(payment, "payment")
    status: str = field_value(payment, "status", str, "payment")
    if status not in PAYMENT_STATUSES:
        raise ProviderDataError(f"payment {payment_id!r}: unknown status {status!r}")
    captured: bool = field_value(payment, "captured", bool, "payment")
    currency = currency_field(payment, "payment")
    base: Row = {
        "provider_record_id": payment_id,
        "charge_id": payment_id,
        "property_id": property_id,
        "booking_id": booking_id_of(payment),
        "payment_intent_id": order_id_of(payment),
        "status": status,
        "settled": captured and status in ("captured", "refunded"),
        "created_at": created_at_field(payment, "payment", "created_at"),
        **card_keys_of(payment),
    }
    amount = amount_field(payment, "amount", "payment")
    rows = [{**base, "kind": "payment", "amount_minor": amount, "currency": currency}]
    fee, source = (
        (payment_fee(payment), FEE_PROVISIONAL) if settled_fee is None else (settled_fee, FEE_SETTLED)
    )
    if fee > 0:
        rows.append({**base, "kind": "fee", "amount_minor": -fee, "currency": currency, "status": source})
    return rows


def refund_payment_id(refund: ProviderObject) -> str:
    """The id of the payment a refund belongs to (required: it is how the refund is attributed)."""
    value: str = field_value(refund, "payment_id", str, "refund")
    return value


def refund_row(refund: ProviderObject, payment: ProviderObject, property_id: str | None) -> Row:
    """A refund's ``refund`` row (negative amount), with the booking from its payment's notes."""
    refund_id = record_id(refund, "refund")
    payment_id = refund_payment_id(refund)
    if payment.get("id") != payment_id:
        raise ProviderDataError(f"refund {refund_id!r}: payment {payment_id!r} given {payment.get('id')!r}")
    status: str = field_value(refund, "status", str, "refund")
    if status not in REFUND_STATUSES:
        raise ProviderDataError(f"refund {refund_id!r}: unknown status {status!r}")
    return {
        "provider_record_id": refund_id,
        "kind": "refund",
        "charge_id": payment_id,
        "property_id": property_id,
        "booking_id": booking_id_of(payment),
        "payment_intent_id": order_id_of(payment),
        "amount_minor": -amount_field(refund, "amount", "refund"),
        "currency": currency_field(refund, "refund"),
        "status": status,
        "settled": status == "processed",
        "created_at": created_at_field(refund, "refund", "created_at"),
        **card_keys_of(payment),
    }


def dispute_payment_id(dispute: ProviderObject) -> str:
    """The id of the payment a dispute contests (required: it is how the dispute is attributed)."""
    value: str = field_value(dispute, "payment_id", str, "dispute")
    return value


def dispute_row(
    movement: DisputeMovement, dispute: ProviderObject, payment: ProviderObject, property_id: str | None
) -> Row:
    """The money a dispute moved as its ``dispute`` (withdrawn, negative) or ``dispute_reversal``
    (reinstated, positive) row, under the dispute's id, with the booking from its payment's notes."""
    dispute_id = record_id(dispute, "dispute")
    if dispute_id != movement.dispute_id:
        raise ProviderDataError(f"dispute {movement.dispute_id!r}: given dispute {dispute_id!r}")
    payment_id = dispute_payment_id(dispute)
    if payment.get("id") != payment_id:
        raise ProviderDataError(f"dispute {dispute_id!r}: payment {payment_id!r} given {payment.get('id')!r}")
    status: str = field_value(dispute, "status", str, "dispute")
    if status not in DISPUTE_STATUSES:
        raise ProviderDataError(f"dispute {dispute_id!r}: unknown status {status!r}")
    return {
        "provider_record_id": dispute_id,
        "kind": movement.kind,
        "charge_id": payment_id,
        "property_id": property_id,
        "booking_id": booking_id_of(payment),
        "payment_intent_id": order_id_of(payment),
        "amount_minor": movement.amount,
        "currency": movement.currency,
        "status": status,
        "settled": True,
        "created_at": movement.created_at,
        **card_keys_of(payment),
    }


def night_movements(movements: Sequence[DisputeMovement], gte: int, lt: int) -> list[DisputeMovement]:
    """The movements booked in ``[gte, lt)``, one per (dispute, kind): two items of one dispute and kind
    in a night (a phase withdrawing again) are one movement of their sum, dated by the first."""
    merged: dict[tuple[str, str], DisputeMovement] = {}
    for movement in sorted(movements, key=lambda m: (m.created_at, m.entity_id)):
        if not gte <= movement.created_at.timestamp() < lt:
            continue
        key = (movement.dispute_id, movement.kind)
        if key in merged:
            movement = replace(merged[key], amount=merged[key].amount + movement.amount)
        merged[key] = movement
    return list(merged.values())


def basic_auth_header(api_key: str | None) -> dict[str, str]:
    """``Authorization: Basic`` of ``key_id:key_secret``; none without a key (a keyless simulator)."""
    if api_key is None:
        return {}
    if ":" not in api_key:
        raise ValueError("a Razorpay API key is 'key_id:key_secret'")
    return {"Authorization": "Basic " + base64.b64encode(api_key.encode()).decode("ascii")}


# --- the adapter ---------------------------------------------------------------------------------------


class RazorpayAdapter:
    """Pulls and looks up a property's Razorpay records over a shared ``ProviderHttp``.

    ``api_key`` is ``key_id:key_secret``; it is sent as Basic auth on every request (the client's own
    default header is the Stripe-style bearer, which this overrides). ``settlement_days``: through how many
    working days (``calendar``) after a payment's own day its settlement recon is read for the settled fee.
    """

    name = "razorpay"

    def __init__(
        self,
        http: ProviderHttp,
        api_key: str | None = None,
        max_pages: int = 10_000,
        settlement_days: int = DEFAULT_SETTLEMENT_DAYS,
        calendar: SettlementCalendar | None = None,
        capture_timeout: timedelta = DEFAULT_CAPTURE_TIMEOUT,
        dashboard: bool = False,
    ) -> None:
        if not 0 <= settlement_days <= MAX_SETTLEMENT_DAYS:
            raise ValueError(
                f"settlement_days must be from 0 to {MAX_SETTLEMENT_DAYS}, not {settlement_days}"
            )
        self._http = http
        self._headers = basic_auth_header(api_key)
        self.max_pages = max_pages
        self.settlement_days = settlement_days
        self.calendar = calendar or SettlementCalendar()
        self.capture_timeout = capture_timeout  # the account's payment capture setting (holds.py)
        self._dashboard = dashboard  # False: not Razorpay's own API (a simulator), no Dashboard to link to

    def dashboard_url(self, record: RecordAddress) -> str | None:
        return dashboard_url(record) if self._dashboard else None

    def pull_night(
        self, account: PropertyAccount, window_start: datetime, window_end: datetime
    ) -> pd.DataFrame:
        """The property's payments and refunds created in ``[window_start, window_end)`` as the frame,
        attributed by their notes alone (the pipeline adds ``payment_orders``: ``pull_claimed``)."""
        return attribute(self.pull_claimed(account, window_start, window_end), account, {}).own

    def pull_claimed(
        self, account: PropertyAccount, window_start: datetime, window_end: datetime
    ) -> pd.DataFrame:
        """Every payment and refund of the merchant created in ``[window_start, window_end)`` that names no
        other property, each with the property its payment claims (``property_id``, None when none) for
        ``attribute``; fees from the settlement recon where settled, and the money disputes moved in the
        window as the recon lists it.

        Raises IncompletePullError (cause chained) on any failure: a partial frame is never returned.
        """
        _merchant_only(account)
        gte, lt = window_seconds(window_start, window_end)
        params = {"from": gte, "to": lt}
        night = [window_start, window_end - timedelta(seconds=1)]
        days = recon_days(night, self.settlement_days, self.calendar)
        with incomplete_pull(pull_name(account, window_start, window_end)):
            abort = threading.Event()
            payments, refunds, *recon = gather(
                [
                    lambda: self._list_all("/v1/payments", {**params, **PAYMENT_EXPANSIONS}, abort),
                    lambda: self._list_all("/v1/refunds", params, abort),
                    *(self._recon_day(day, abort) for day in days),
                ],
                max_workers=2 + len(days),
                abort=abort,
            )
            payments, refunds = _in_window(payments, gte, lt), _in_window(refunds, gte, lt)
            settled = read_recon(item for page in recon for item in page)
            known = {payment["id"]: payment for payment in payments}
            rows = self._payment_rows(account, payments, settled.fees)
            rows += self._refund_rows(account, refunds, known)
            rows += self._dispute_rows(account, night_movements(settled.disputes, gte, lt), known)
        return records_frame(rows)

    def fetch_records_by_id(self, account: PropertyAccount, record_ids: Sequence[str]) -> pd.DataFrame:
        """The frame for explicit payment, refund or order ids (an order's rows are those of its payments);
        ids unknown to Razorpay are absent, as are records another property owns (the ledger that names a
        record nobody owns keeps it). Raises IncompletePullError when Razorpay cannot be read."""
        _merchant_only(account)
        ids = list(dict.fromkeys(record_ids))
        prefixes = (PAYMENT_ID_PREFIX, REFUND_ID_PREFIX, ORDER_ID_PREFIX, DISPUTE_ID_PREFIX)
        unknown = [i for i in ids if not i.startswith(prefixes)]
        if unknown:
            raise ValueError(f"not payment, refund, order or dispute ids: {unknown}")
        payment_ids = [i for i in ids if i.startswith(PAYMENT_ID_PREFIX)]
        refund_ids = [i for i in ids if i.startswith(REFUND_ID_PREFIX)]
        order_ids = [i for i in ids if i.startswith(ORDER_ID_PREFIX)]
        dispute_ids = [i for i in ids if i.startswith(DISPUTE_ID_PREFIX)]
        with incomplete_pull(f"lookup of {len(ids)} records of {account.property_id}"):
            found_refunds = [r for r in self._fetch_many("/v1/refunds", refund_ids).values() if r]
            of_orders = {p["id"]: p for order_id in order_ids for p in self._order_payments(order_id)}
            payments = self._fetch_many(
                "/v1/payments",
                list(dict.fromkeys(payment_ids + [refund_payment_id(r) for r in found_refunds])),
            )
            payments = {**payments, **of_orders}
            found = [
                payment
                for payment_id in dict.fromkeys(payment_ids + list(of_orders))
                if (payment := payments[payment_id]) is not None
            ]
            disputes = [d for d in self._fetch_many("/v1/disputes", dispute_ids).values() if d]
            created = [created_at_field(payment, "payment", "created_at") for payment in found]
            opened = [created_at_field(dispute, "dispute", "created_at") for dispute in disputes]
            days = recon_days(created, self.settlement_days, self.calendar)
            settled = self._recon(sorted(set(days) | set(dispute_recon_days(opened))))
            known = {i: p for i, p in payments.items() if p is not None}
            rows = self._payment_rows(account, found, settled.fees)
            rows += self._refund_rows(account, found_refunds, known)
            wanted = {dispute["id"] for dispute in disputes}
            movements = [m for m in settled.disputes if m.dispute_id in wanted]
            rows += self._dispute_rows(account, night_movements(movements, 0, 2**62), known, disputes)
        return records_frame(named_rows(rows, account))

    def _order_payments(self, order_id: str) -> list[ProviderObject]:
        """Every payment of the order (``GET /v1/orders/{id}/payments``); none for an order Razorpay does
        not know."""
        path = f"/v1/orders/{quote(order_id, safe='')}/payments"
        page = self._read(path)
        if page is None:
            return []
        items = page.get("items")
        if page.get("entity") != "collection" or not isinstance(items, list):
            raise ProviderDataError(f"{path}: not a collection response (keys {sorted(page)})")
        for item in items:
            if not isinstance(item, dict) or order_id_of(item) != order_id:
                raise ProviderDataError(f"{path}: an item is not a payment of the order: {item!r}")
        return items

    def fetch_payment(self, payment_id: str) -> ProviderObject | None:
        """The payment's current state, or None when Razorpay does not know it.

        Raises ProviderUnavailable / ProviderRequestRejected as ``ProviderHttp`` does."""
        return self._get_by_id("/v1/payments", payment_id)

    def payment_state(self, provider_account: str | None, payment_id: str) -> PaymentState | None:
        """The payment's current state, read from the payment itself (None: Razorpay does not know it)."""
        payment = self.fetch_payment(payment_id)
        return None if payment is None else state_of_razorpay_payment(payment)

    def authorization_holds(
        self, account: PropertyAccount, payment_ids: Sequence[str]
    ) -> list[AuthorizationHold]:
        """The holds among payment (``pay_``) and order (``order_``: its payments) ids, each read by id in
        its current state and named by the payment, whichever id the PMS keeps; other ids are skipped.
        Raises IncompletePullError when Razorpay cannot be read."""
        _merchant_only(account)
        ids = list(dict.fromkeys(payment_ids))
        with incomplete_pull(f"authorization holds of {account.property_id}"):
            named = self._fetch_many("/v1/payments", [i for i in ids if i.startswith(PAYMENT_ID_PREFIX)])
            payments = {i: p for i, p in named.items() if p is not None}
            for order_id in (i for i in ids if i.startswith(ORDER_ID_PREFIX)):
                payments.update({record_id(p, "payment"): p for p in self._order_payments(order_id)})
            holds = [hold_of_payment(payment, self.capture_timeout) for payment in payments.values()]
        return [hold for hold in holds if hold is not None]

    def events_since(self, provider_account: str | None, created_gte: int) -> ListedEvents | None:
        """None: Razorpay has no events API; missed webhooks are recovered by the orphan sweep and the
        nightly payments pull, which finds every captured payment."""
        return None

    def payouts_arriving(
        self, provider_account: str | None, arrival_gte: datetime, arrival_lt: datetime
    ) -> list[Payout] | None:
        """The merchant's settlements (``GET /v1/settlements``, ``payouts.py``) arriving in
        ``[arrival_gte, arrival_lt)`` (their Indian calendar day). Raises IncompletePullError."""
        if provider_account is not None:
            raise ValueError(f"Razorpay has no provider accounts: {provider_account!r} cannot be read")
        first, end = arrival_gte.date(), arrival_lt.date()
        with incomplete_pull(f"settlements arriving in [{first}, {end})"):
            listed = self._list_all(
                SETTLEMENTS_PATH, settlement_params(arrival_gte, arrival_lt), threading.Event()
            )
            payouts = [payout_of(settlement) for settlement in listed]
        return [payout for payout in payouts if first <= payout.arrival_date < end]

    def payout_transactions(self, payout: Payout) -> list[PayoutTransaction] | None:
        """The settlement recon items of the settlement's day that name it. Raises IncompletePullError."""
        with incomplete_pull(f"settlement recon of {payout.payout_id}"):
            items = self._recon_day(settlement_day(payout), threading.Event())()
            return transactions_of(payout, items)

    def _payment_rows(
        self, account: PropertyAccount, payments: Sequence[ProviderObject], fees: dict[str, SettledFee]
    ) -> list[Row]:
        """Rows of the payments naming no other property, with their claims, each fee settled where
        ``fees`` has it; a fee revised at settlement is logged (the settled one is the row), and so is
        the GST the settled fees include (the frame has no column for it)."""
        rows = claimed_payment_rows(_shape(fees), account, payments)
        claimed = [p for p in payments if claimable(claimed_property(p), account)]
        total, gst = gst_summary(fees[p["id"]] for p in claimed if p["id"] in fees)
        if total:
            logger.info("%s: settled fees %d include GST %d (minor units)", account.property_id, total, gst)
        revised = revised_fees(claimed, fees)
        if revised:
            logger.warning(
                "%s: %d settled fees differ from their payment's fee field, the settled fee is used (%s)",
                account.property_id,
                len(revised),
                ", ".join(revised[:5]),
            )
        return rows

    def _recon(self, days: Sequence[date]) -> Settlements:
        """What the recon of ``days`` says, every day read at once."""
        if not days:
            return Settlements({}, [])
        abort = threading.Event()
        pages = gather([self._recon_day(day, abort) for day in days], max_workers=len(days), abort=abort)
        return read_recon(item for page in pages for item in page)

    def _dispute_rows(
        self,
        account: PropertyAccount,
        movements: Sequence[DisputeMovement],
        known_payments: Fetched,
        known_disputes: Sequence[ProviderObject] = (),
    ) -> list[Row]:
        """Rows of the money disputes moved whose payment names no other property: each dispute fetched
        by id (unless known) for the payment it contests, that payment fetched unless known. A recon item
        naming a dispute or payment Razorpay does not know is a data error."""
        given = {dispute["id"]: dispute for dispute in known_disputes}
        wanted = [i for i in dict.fromkeys(m.dispute_id for m in movements) if i not in given]
        disputes: dict[str, ProviderObject] = dict(given)
        for dispute_id, fetched in self._fetch_many("/v1/disputes", wanted).items():
            if fetched is None:
                raise ProviderDataError(f"settlement recon item names an unknown dispute {dispute_id!r}")
            disputes[dispute_id] = fetched
        payment_of = {m.dispute_id: dispute_payment_id(disputes[m.dispute_id]) for m in movements}
        missing = [i for i in dict.fromkeys(payment_of.values()) if i not in known_payments]
        payments = {**known_payments, **self._fetch_many("/v1/payments", missing)}
        rows = []
        for movement in movements:
            payment = payments[payment_of[movement.dispute_id]]
            if payment is None:
                raise ProviderDataError(
                    f"dispute {movement.dispute_id!r}: payment {payment_of[movement.dispute_id]!r} unknown"
                )
            claim = claimed_property(payment)
            if claimable(claim, account):
                rows.append(dispute_row(movement, disputes[movement.dispute_id], payment, claim))
        return rows

    def _recon_day(self, day: date, abort: threading.Event) -> Callable[[], list[ProviderObject]]:
        """The task listing every settlement recon item of ``day``."""
        params = {"year": day.year, "month": day.month, "day": day.day}
        return lambda: self._list_all(RECON_PATH, params, abort, id_name="entity_id")

    def _refund_rows(
        self, account: PropertyAccount, refunds: Sequence[ProviderObject], known_payments: Fetched
    ) -> list[Row]:
        """Rows of the refunds (with their payment's claim) whose payment names no other property, fetching
        payments not already known."""
        fetch = functools.partial(self._fetch_many, "/v1/payments")
        return claimed_refund_rows(_shape({}), account, refunds, known_payments, fetch)

    def _list_all(
        self, path: str, params: dict[str, Any], abort: threading.Event, id_name: str = "id"
    ) -> list[ProviderObject]:
        """Every item of a collection, ``skip`` by ``skip`` until a page comes back short; items are told
        apart by ``id_name`` (a recon item by its ``entity_id``); bounded and checked by ``pull.list_all``."""

        def read_page(page_number: int, _last: ProviderObject | None) -> Page:
            page_params = {**params, "count": PAGE_COUNT, "skip": page_number * PAGE_COUNT}
            page = self._http.get_json(path, params=page_params, headers=self._headers)
            if page is None:
                raise ProviderDataError(f"{path}: list answered 404")
            items, count = page.get("items"), page.get("count")
            if page.get("entity") != "collection" or not isinstance(items, list) or count != len(items):
                raise ProviderDataError(f"{path}: not a collection response (keys {sorted(page)})")
            if len(items) > PAGE_COUNT:
                raise ProviderDataError(f"{path}: {len(items)} items on a page of {PAGE_COUNT}")
            return Page(items, more=len(items) == PAGE_COUNT)

        return list_all(path, read_page, abort, self.max_pages, id_name)

    def _read(self, path: str, params: dict[str, Any] | None = None) -> ProviderObject | None:
        """``GET path``; None when Razorpay answers that the id in it does not exist."""
        try:
            return self._http.get_json(path, params=params, headers=self._headers)
        except ProviderRequestRejected as error:
            if "HTTP 400" in str(error) and UNKNOWN_ID_DESCRIPTION in str(error):
                return None
            raise

    def _get_by_id(self, path: str, object_id: str) -> ProviderObject | None:
        """``GET path/id`` (a payment with its card expanded), None when Razorpay does not know the id."""
        params = PAYMENT_EXPANSIONS if path == "/v1/payments" else None
        obj = self._read(f"{path}/{quote(object_id, safe='')}", params)
        if obj is not None and obj.get("id") != object_id:
            raise ProviderDataError(f"{path}/{object_id}: answered with id {obj.get('id')!r}")
        return obj

    def _fetch_many(self, path: str, object_ids: Sequence[str]) -> Fetched:
        """``GET {path}/{id}`` per id, concurrently, None if unknown."""
        return fetch_each(object_ids, functools.partial(self._get_by_id, path), self._http)


def _shape(fees: dict[str, SettledFee]) -> RecordShape:
    """How Razorpay's payments and refunds read, each payment's fee the settled one where ``fees`` has it."""

    def rows_of(payment: ProviderObject, claim: str | None) -> list[Row]:
        settled = fees.get(payment["id"])
        return payment_rows(payment, claim, None if settled is None else settled.fee)

    return RecordShape(
        refund_payment_id=refund_payment_id,
        claim_of=claimed_property,
        payment_rows=rows_of,
        refund_row=refund_row,
    )


def _in_window(records: list[ProviderObject], gte: int, lt: int) -> list[ProviderObject]:
    """The records created in ``[gte, lt)``: ``to`` is inclusive, so ``lt`` itself comes back and is the
    next night's; anything else outside ``[gte, lt]`` means the provider ignored the filter."""
    kept = []
    for record in records:
        created = field_value(record, "created_at", int, "record")
        if not gte <= created <= lt:
            raise ProviderDataError(f"record {record['id']!r}: created_at {created} outside [{gte}, {lt}]")
        if created < lt:
            kept.append(record)
    return kept


def _merchant_only(account: PropertyAccount) -> None:
    if account.provider_account is not None:
        raise ValueError(
            f"property {account.property_id}: Razorpay records are attributed by notes.property_id; "
            f"provider_account {account.provider_account!r} must be empty"
        )
