"""Stripe adapter: one property-night of money movements as the provider-record frame (``records.py``).

A night is three lists of the account's scope, each by creation time: charges and refunds (their balance
transactions expanded: fees, and the settlement figures of a currency conversion, ``balance.py``), and the
balance transactions of every type with their source expanded, of which the dispute withdrawals and
reversals (``disputes.py``) and the captures of charges created on earlier nights (``captures.py``) are
kept: a movement belongs to the night its balance transaction was created in, which no list of disputes or
charges by their own ``created`` would give.

The reconciliation diffs this frame against the ledger, so a wrong or partial frame turns into false
discrepancies and possibly wrong adjustments. Hence: every record's shape is validated, any failure of a
pull raises ``IncompletePullError`` (never a partial frame), and a by-id lookup that cannot reach the
provider raises rather than reporting the record as missing.

A property with a connected account is scoped by ``Stripe-Account``, otherwise it reads the platform. Every
record of that scope is read with its claim (``metadata.property_id`` of its charge; a refund carries no
property metadata, nor does a dispute, so each follows its charge: a refund's comes with it, a dispute's
from the night's charges or else one list of the night's disputes, ``_disputed_charges``), and
``attribution.attribute`` decides whose it is (several properties may share one account).
A ledger may name a payment by its PaymentIntent: a by-id lookup of a ``pi_`` id reads the intent's
``latest_charge`` and returns that charge's rows. Every request pins ``Stripe-Version`` (``api_version.py``):
the account's default version may predate ``latest_charge``.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import pandas as pd

from recon_pipeline.providers.attribution import attribute, claim_of, claimable, named_rows
from recon_pipeline.providers.cards import NO_CARD_KEYS, card_keys
from recon_pipeline.providers.errors import (
    ProviderDataError,
    incomplete_pull,
)
from recon_pipeline.providers.events import EventFormatError, PaymentState
from recon_pipeline.providers.holds import AuthorizationHold
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import ListedEvents, ReceivedEvent, RecordAddress
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
    id_field,
    metadata_field,
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
from recon_pipeline.providers.stripe import payouts
from recon_pipeline.providers.stripe.api_version import API_VERSION, VERSION_HEADER
from recon_pipeline.providers.stripe.balance import expanded_balance_transaction, settlement_columns
from recon_pipeline.providers.stripe.captures import captured_after, earlier_captures, moved_at
from recon_pipeline.providers.stripe.dashboard import StripeDashboard
from recon_pipeline.providers.stripe.disputes import (
    BALANCE_TRANSACTION_ID_PREFIX,
    DISPUTE_ID_PREFIXES,
    dispute_charge_id,
    dispute_movement_rows,
    is_dispute_movement,
    movements_of,
    source_dispute,
)
from recon_pipeline.providers.stripe.holds import hold_of_charge, hold_of_payment_intent
from recon_pipeline.providers.stripe.state import (
    expanded_latest_charge,
    latest_charge_id,
    state_of_charge,
    state_of_payment_intent,
)
from recon_pipeline.providers.stripe.webhook import parse_event

logger = logging.getLogger(__name__)

StripeObject = ProviderObject

PAGE_LIMIT = 100
# Stripe gives charges of some payment methods "py_" ids and their refunds "pyr_" ids.
CHARGE_ID_PREFIXES = ("ch_", "py_")
REFUND_ID_PREFIXES = ("re_", "pyr_")
PAYMENT_INTENT_ID_PREFIX = "pi_"
# What a by-id retrieve expands: a charge's or refund's balance transaction, a balance transaction's source
# (a dispute's ``charge`` stays an id: ``_following_rows`` resolves it), a dispute's charge. Every path is
# one Stripe documents for its endpoint (``documented.py``).
_RETRIEVE_EXPANSIONS: dict[str, dict[str, str | list[str]]] = {
    "/v1/charges": {"expand[]": "balance_transaction"},
    "/v1/refunds": {"expand[]": "balance_transaction"},
    "/v1/balance_transactions": {"expand[]": "source"},
    "/v1/disputes": {"expand[]": "charge"},
    # an intent brings its latest charge (the payment's money and a hold's capture_before): no second request
    "/v1/payment_intents": {"expand[]": ["latest_charge", "latest_charge.balance_transaction"]},
}
# The night's balance transactions come with their source: a dispute movement with its dispute, a capture
# with its charge, so neither costs a request of its own, whichever night the charge was made in. Not
# ``data.source.charge``: a source may be a charge, which has no ``charge``, and Stripe documents a nested
# path through the polymorphic ``source`` nowhere (``documented.py``); the disputed charge comes as an id,
# resolved from the night's own charges or else read by id (``_following_rows``).
TRANSACTION_EXPANSIONS = ["data.source"]
DisputeMovement = tuple[StripeObject, StripeObject]  # a dispute's balance transaction, and the dispute
LOGGED_ID_CHARS = 80  # an over-long event id is cut in the log line


# --- pure mapping: Stripe JSON -> provider-record rows ------------------------------------------------


def claimed_property(charge: StripeObject) -> str | None:
    """The property the charge names in ``metadata.property_id``, None when it names none."""
    return claim_of(charge.get("metadata"))


def charge_rows(charge: StripeObject, property_id: str | None) -> list[Row]:
    """A charge's ``payment`` row, and its ``fee`` row when Stripe took a fee.

    The payment is what was captured (a partial capture captures less than ``amount``); it is settled only
    when the charge succeeded and was captured. The fee is in the balance transaction's currency (the
    settlement currency, which may differ from the charge's) and needs ``balance_transaction`` expanded; a
    charge settled in another currency carries the balance transaction's amount as its settlement figure.
    """
    charge_id = record_id(charge, "charge")
    status: str = field_value(charge, "status", str, "charge")
    captured: bool = field_value(charge, "captured", bool, "charge")
    amount, amount_captured = (
        amount_field(charge, "amount", "charge"),
        amount_field(charge, "amount_captured", "charge"),
    )
    settled = status == "succeeded" and captured
    base: Row = {
        "provider_record_id": charge_id,
        "charge_id": charge_id,
        "property_id": property_id,
        "booking_id": booking_id_of(charge),
        "payment_intent_id": optional_id_field(charge, "payment_intent", "charge"),
        "status": status,
        "settled": settled,
        "created_at": moved_at(charge),
        **card_keys_of(charge),
    }
    currency = currency_field(charge, "charge")
    transaction = expanded_balance_transaction(charge, "charge")
    what = f"balance transaction of charge {charge_id!r}"
    rows = [
        {
            **base,
            "kind": "payment",
            "amount_minor": amount_captured if captured else amount,
            "currency": currency,
            **settlement_columns(transaction, currency, what),
        }
    ]
    if transaction is None:  # pending and failed charges have no balance transaction yet
        return rows
    fee = amount_field(transaction, "fee", what)
    if fee > 0:
        rows.append(
            {**base, "kind": "fee", "amount_minor": -fee, "currency": currency_field(transaction, what)}
        )
    return rows


# The payment method details that describe a card, and where each puts the issuer's authorization code:
# an online card's ``card.authorization_code`` (Stripe's changelog adds it in 2024-09-30.acacia, a
# backward-compatible addition: docs/providers.md), a terminal's ``receipt.authorization_code``.
_CARD_DETAILS = ("card", "card_present", "interac_present")


def card_keys_of(charge: StripeObject) -> Row:
    """The charge's card keys (brand, last four, authorization code) from ``payment_method_details``;
    all null for a payment that is no card, or a charge without details (a failed attempt may lack them)."""
    details = charge.get("payment_method_details")
    if details is None:
        return dict(NO_CARD_KEYS)
    what = f"payment_method_details of charge {charge.get('id')!r}"
    if not isinstance(details, dict):
        raise ProviderDataError(f"{what}: is {str(details)[:80]!r}")
    kind = details.get("type")
    card = details.get(kind) if kind in _CARD_DETAILS else None
    if card is None:
        return dict(NO_CARD_KEYS)
    if not isinstance(card, dict):
        raise ProviderDataError(f"{what}: {kind!r} is {str(card)[:80]!r}")
    receipt = card.get("receipt")
    code = card.get("authorization_code")
    if code is None and isinstance(receipt, dict):
        code = receipt.get("authorization_code")
    return card_keys(card.get("brand"), card.get("last4"), code, what)


def booking_id_of(charge: StripeObject) -> str | None:
    """``metadata.booking_id`` of a charge (Stripe's metadata values are strings), None when absent."""
    metadata = metadata_field(charge, "charge")
    return optional_id_field(metadata, "booking_id", f"metadata of charge {charge.get('id')!r}")


def refund_charge_id(refund: StripeObject) -> str:
    """The id of the charge a refund belongs to (required: it is how the refund is attributed)."""
    return id_field(refund, "charge", "refund")


def refund_row(refund: StripeObject, charge: StripeObject, property_id: str | None) -> Row:
    """A refund's ``refund`` row (negative amount), with booking and payment intent from its charge, and
    the settlement figure of its (expanded) balance transaction when that is in another currency."""
    refund_id = record_id(refund, "refund")
    charge_id = refund_charge_id(refund)
    if charge.get("id") != charge_id:
        raise ProviderDataError(f"refund {refund_id!r}: charge {charge_id!r} given {charge.get('id')!r}")
    status: str = field_value(refund, "status", str, "refund")
    payment_intent = charge.get("payment_intent") or refund.get("payment_intent")
    currency = currency_field(refund, "refund")
    transaction = expanded_balance_transaction(refund, "refund")
    return {
        "provider_record_id": refund_id,
        "kind": "refund",
        "charge_id": charge_id,
        "property_id": property_id,
        "booking_id": booking_id_of(charge),
        "payment_intent_id": payment_intent if isinstance(payment_intent, str) else None,
        "amount_minor": -amount_field(refund, "amount", "refund"),
        "currency": currency,
        "status": status,
        "settled": status == "succeeded",
        "created_at": created_at_field(refund, "refund"),
        **settlement_columns(transaction, currency, f"balance transaction of refund {refund_id!r}"),
        **card_keys_of(charge),
    }


def claimed_dispute_rows(
    account: PropertyAccount, movements: Sequence[DisputeMovement], charges: Fetched
) -> list[Row]:
    """Rows of the dispute movements whose charge (in ``charges``) names no other property, with that
    charge's claim; a dispute whose charge Stripe does not know is a data error, never a dropped row."""
    rows: list[Row] = []
    for transaction, dispute in movements:
        charge_id = dispute_charge_id(dispute)
        charge = charges.get(charge_id)
        if charge is None:
            raise ProviderDataError(f"dispute {dispute.get('id')!r}: its charge {charge_id!r} is unknown")
        if claimable(claim := claimed_property(charge), account):
            rows += [
                {**row, **card_keys_of(charge)}
                for row in dispute_movement_rows(transaction, dispute, charge, claim, booking_id_of(charge))
            ]
    return rows


def refunds_and_their_charges(refunds: Sequence[StripeObject]) -> tuple[list[StripeObject], Fetched]:
    """Refunds listed with ``expand[]=data.charge``, each as the row builders read it (``charge`` its id
    again), and the charges they carried, by id: a refund of an earlier night's charge then costs no
    lookup by id. A refund whose charge came as an id keeps it (that charge is fetched as before)."""
    plain, charges = [], {}
    for refund in refunds:
        charge = refund.get("charge")
        if isinstance(charge, dict):
            charges[record_id(charge, f"charge of refund {refund.get('id')!r}")] = charge
            refund = {**refund, "charge": charge["id"]}
        plain.append(refund)
    return plain, charges


SHAPE = RecordShape(
    refund_payment_id=refund_charge_id,
    claim_of=claimed_property,
    payment_rows=charge_rows,
    refund_row=refund_row,
)


# --- the adapter ---------------------------------------------------------------------------------------


class StripeAdapter:
    """Pulls and looks up a property's Stripe records over a shared ``ProviderHttp``."""

    name = "stripe"

    def __init__(
        self, http: ProviderHttp, max_pages: int = 10_000, dashboard: StripeDashboard | None = None
    ) -> None:
        self._http = http
        self.max_pages = max_pages
        self._dashboard = dashboard  # None: not Stripe's own API (a simulator), no Dashboard to link to

    def dashboard_url(self, record: RecordAddress) -> str | None:
        return None if self._dashboard is None else self._dashboard.url(record)

    def pull_night(
        self, account: PropertyAccount, window_start: datetime, window_end: datetime
    ) -> pd.DataFrame:
        """The property's charges, refunds and dispute movements created in ``[window_start, window_end)``
        as the frame, attributed by their metadata alone (the pipeline adds ``payment_orders``:
        ``pull_claimed``)."""
        return attribute(self.pull_claimed(account, window_start, window_end), account, {}).own

    def pull_claimed(
        self, account: PropertyAccount, window_start: datetime, window_end: datetime
    ) -> pd.DataFrame:
        """Every charge, refund and dispute movement (its balance transaction) of the account's scope
        created in ``[window_start, window_end)`` that names no other property, each with the property its
        charge claims (``property_id``, None when none) for ``attribute``; a charge is the night's when it
        was captured in it (``captures.py``), whenever it was authorized.

        Raises IncompletePullError (cause chained) on any failure: a partial frame is never returned.
        """
        gte, lt = window_seconds(window_start, window_end)
        params = {"created[gte]": gte, "created[lt]": lt, "limit": PAGE_LIMIT}
        headers = _headers(account)
        with incomplete_pull(pull_name(account, window_start, window_end)):
            abort = threading.Event()
            with_transaction = {**params, "expand[]": "data.balance_transaction"}
            # a refund's charge comes with it: a refund of an earlier night's charge needs no lookup by id
            with_transaction_and_charge = {**params, "expand[]": ["data.balance_transaction", "data.charge"]}
            self._http.reserve_slots(3)  # each list's first page (most nights' lists have one)
            listed, refunds, transactions = gather(
                [
                    lambda: self._list_all("/v1/charges", with_transaction, headers, abort),
                    lambda: self._list_all("/v1/refunds", with_transaction_and_charge, headers, abort),
                    lambda: self._list_all(
                        "/v1/balance_transactions",
                        {**params, "expand[]": TRANSACTION_EXPANSIONS},
                        headers,
                        abort,
                    ),
                ],
                max_workers=3,
                abort=abort,
                pool=self._http.workers,
            )
            for record in (*listed, *refunds, *transactions):
                created = field_value(record, "created", int, "record")
                if not gte <= created < lt:
                    raise ProviderDataError(
                        f"record {record['id']!r}: created {created} outside [{gte}, {lt})"
                    )
            movements = [(bt, source_dispute(bt)) for bt in transactions if is_dispute_movement(bt)]
            refunds, refunded = refunds_and_their_charges(refunds)
            # the night's captures: of tonight's charges those not captured later, and earlier charges'
            charges = [c for c in listed if not captured_after(c, lt)] + earlier_captures(transactions, gte)
            rows = claimed_payment_rows(SHAPE, account, charges)
            rows += self._following_rows(
                account, refunds, movements, {**refunded, **{c["id"]: c for c in (*listed, *charges)}}
            )
        return records_frame(rows)

    def fetch_records_by_id(self, account: PropertyAccount, record_ids: Sequence[str]) -> pd.DataFrame:
        """The frame for explicit charge, refund, PaymentIntent, dispute or balance transaction ids (an
        intent's rows are those of its ``latest_charge``, a dispute's those of all its movements, a balance
        transaction's those of the dispute movement it is: ``disputes.py``); ids unknown to the provider
        (404) are absent, as are records another property owns (the ledger that names a record nobody owns
        keeps it) and balance transactions that are no dispute movement. Raises IncompletePullError when the
        provider cannot be read: an unavailable provider never makes a record look missing."""
        ids = list(dict.fromkeys(record_ids))
        prefixes = (
            *CHARGE_ID_PREFIXES,
            *REFUND_ID_PREFIXES,
            PAYMENT_INTENT_ID_PREFIX,
            *DISPUTE_ID_PREFIXES,
            BALANCE_TRANSACTION_ID_PREFIX,
        )
        unknown = [i for i in ids if not i.startswith(prefixes)]
        if unknown:
            raise ValueError(
                f"not charge, refund, PaymentIntent, dispute or balance transaction ids: {unknown}"
            )
        headers = _headers(account)

        def fetch_found(path: str, id_prefixes: tuple[str, ...]) -> list[StripeObject]:
            wanted = [i for i in ids if i.startswith(id_prefixes)]
            return [obj for obj in self._fetch_many(path, wanted, headers).values() if obj is not None]

        with incomplete_pull(f"lookup of {len(ids)} records of {account.property_id}"):
            intents = fetch_found("/v1/payment_intents", (PAYMENT_INTENT_ID_PREFIX,))
            charge_ids = [i for i in ids if i.startswith(CHARGE_ID_PREFIXES)]
            charge_ids += [latest for intent in intents if (latest := latest_charge_id(intent))]
            found_refunds = fetch_found("/v1/refunds", REFUND_ID_PREFIXES)
            movements = [
                (bt, d) for d in fetch_found("/v1/disputes", DISPUTE_ID_PREFIXES) for bt in movements_of(d)
            ]
            movements += [
                (bt, source_dispute(bt))
                for bt in fetch_found("/v1/balance_transactions", (BALANCE_TRANSACTION_ID_PREFIX,))
                if is_dispute_movement(bt)
            ]
            followed = [refund_charge_id(r) for r in found_refunds]
            inline = {c["id"]: c for intent in intents if (c := expanded_latest_charge(intent)) is not None}
            wanted = [i for i in dict.fromkeys(charge_ids + followed) if i not in inline]
            charges = {**self._fetch_many("/v1/charges", wanted, headers), **inline}
            found = [charge for i in dict.fromkeys(charge_ids) if (charge := charges[i]) is not None]
            rows = claimed_payment_rows(SHAPE, account, found)
            rows += self._following_rows(
                account, found_refunds, movements, {i: c for i, c in charges.items() if c is not None}
            )
        return records_frame(named_rows(rows, account), distinct=True)

    def fetch_charge(self, account: PropertyAccount, charge_id: str) -> StripeObject | None:
        """The charge's current state (balance transaction expanded), or None when Stripe does not know it.

        Raises ProviderUnavailable / ProviderRequestRejected as ``ProviderHttp`` does."""
        return self._http.get_json(
            f"/v1/charges/{quote(charge_id, safe='')}",
            params=_RETRIEVE_EXPANSIONS["/v1/charges"],
            headers=_headers(account),
        )

    def fetch_payment_intent(self, account: PropertyAccount, payment_intent_id: str) -> StripeObject | None:
        """The payment intent's current state with its latest charge expanded (and that charge's balance
        transaction), or None when Stripe does not know it."""
        return self._http.get_json(
            f"/v1/payment_intents/{quote(payment_intent_id, safe='')}",
            params=_RETRIEVE_EXPANSIONS["/v1/payment_intents"],
            headers=_headers(account),
        )

    def payment_state(self, provider_account: str | None, payment_id: str) -> PaymentState | None:
        """The payment's current state (None: Stripe does not know it). A charge id is read as a bare charge;
        otherwise the PaymentIntent and its latest charge (refunds, capture time, decline). Requests are
        scoped by the connected account alone: the property is known only once the payment is."""
        scope = PropertyAccount(property_id="", provider_account=provider_account)
        if payment_id.startswith(CHARGE_ID_PREFIXES):
            charge = self.fetch_charge(scope, payment_id)
            return None if charge is None else state_of_charge(charge)
        intent = self.fetch_payment_intent(scope, payment_id)
        if intent is None:
            return None
        charge_id = latest_charge_id(intent)
        if charge_id is None:
            return state_of_payment_intent(intent, None)
        charge = expanded_latest_charge(intent) or self.fetch_charge(scope, charge_id)
        if charge is None:
            raise ProviderDataError(
                f"payment_intent {payment_id!r}: its latest charge {charge_id!r} is unknown"
            )
        return state_of_payment_intent(intent, charge)

    def authorization_holds(
        self, account: PropertyAccount, payment_ids: Sequence[str]
    ) -> list[AuthorizationHold]:
        """The holds among PaymentIntent and charge ids, read by id in their current state: an intent with
        its latest charge (which carries ``capture_before``). A charge of an intent is read as its intent,
        so a hold is named by its PaymentIntent whichever id the PMS keeps; ids of other objects are
        skipped. Raises IncompletePullError when Stripe cannot be read."""
        ids = list(dict.fromkeys(payment_ids))
        headers = _headers(account)
        with incomplete_pull(f"authorization holds of {account.property_id}"):
            charge_ids = [i for i in ids if i.startswith(CHARGE_ID_PREFIXES)]
            named = self._fetch_many("/v1/charges", charge_ids, headers)
            charges = {i: charge for i, charge in named.items() if charge is not None}
            intent_ids = [i for i in ids if i.startswith(PAYMENT_INTENT_ID_PREFIX)]
            intent_ids += [c["payment_intent"] for c in charges.values() if _intent_of(c)]
            fetched = self._fetch_many("/v1/payment_intents", list(dict.fromkeys(intent_ids)), headers)
            intents = [(intent, latest_charge_id(intent)) for intent in fetched.values() if intent]
            charges.update({c["id"]: c for i, _ in intents if (c := expanded_latest_charge(i)) is not None})
            latest = [i for _, i in intents if i is not None and i not in charges]
            charges.update({i: c for i, c in self._fetch_many("/v1/charges", latest, headers).items() if c})
            holds = [
                hold_of_payment_intent(intent, None if charge_id is None else charges.get(charge_id))
                for intent, charge_id in intents
            ]
            bare = [charges[i] for i in charge_ids if i in charges and not _intent_of(charges[i])]
            holds += [hold_of_charge(charge) for charge in bare]
        return [hold for hold in holds if hold is not None]

    def events_since(self, provider_account: str | None, created_gte: int) -> ListedEvents:
        """Every event of the platform (or of a connected account) created at or after ``created_gte``,
        read as a webhook delivery would be; a listed event that is not well-formed is skipped with a
        warning naming its id (never its body) and counted.

        Used to recover webhooks that never arrived; raises IncompletePullError rather than return part
        of the stream, so a recovery cursor never moves past events it did not see."""
        headers = _request_headers(provider_account)
        params = {"created[gte]": created_gte, "limit": PAGE_LIMIT}
        with incomplete_pull(f"events since {created_gte} ({provider_account or 'platform'})"):
            listed = self._list_all("/v1/events", params, headers, threading.Event())
        events, malformed = [], 0
        for raw in listed:
            body = json.dumps(raw)
            try:
                events.append(ReceivedEvent(parse_event(body), body))
            except EventFormatError as error:
                logger.warning(
                    "recovery skipped malformed event %.*s of %s: %s",
                    LOGGED_ID_CHARS,
                    raw.get("id"),
                    provider_account or "platform",
                    error,
                )
                malformed += 1
        return ListedEvents(events, malformed)

    def payouts_arriving(
        self, provider_account: str | None, arrival_gte: datetime, arrival_lt: datetime
    ) -> list[Payout]:
        """The scope's payouts expected at the bank in ``[arrival_gte, arrival_lt)`` (``payouts.py``)."""
        with incomplete_pull(f"payouts of {provider_account or 'platform'} arriving from {arrival_gte:%F}"):
            return payouts.payouts_arriving(
                self._lister(provider_account), provider_account, arrival_gte, arrival_lt
            )

    def payout_transactions(self, payout: Payout) -> list[PayoutTransaction] | None:
        """The payout's balance transactions; None for a manual payout, which Stripe does not itemise."""
        with incomplete_pull(f"balance transactions of payout {payout.payout_id}"):
            return payouts.payout_transactions(self._lister(payout.provider_account), payout)

    def _lister(self, provider_account: str | None) -> payouts.Lister:
        headers = _request_headers(provider_account)
        return lambda path, params: self._list_all(path, params, headers, threading.Event())

    def _following_rows(
        self,
        account: PropertyAccount,
        refunds: Sequence[StripeObject],
        movements: Sequence[DisputeMovement],
        known_charges: Fetched,
    ) -> list[Row]:
        """Rows of the refunds and dispute movements (with their charge's claim) whose charge names no
        other property: the charges neither in ``known_charges`` nor expanded in their dispute come from
        one list of the disputes (``_disputed_charges``), the rest by id, once for both."""
        fetch = functools.partial(self._fetch_many, "/v1/charges", headers=_headers(account))
        expanded = {c["id"]: c for _, d in movements if isinstance(c := d.get("charge"), dict)}
        known = {**expanded, **known_charges}
        unknown = {d["id"]: d for _, d in movements if dispute_charge_id(d) not in known}
        known.update(self._disputed_charges(list(unknown.values()), _headers(account)))
        needed = {refund_charge_id(r) for r in refunds} | {dispute_charge_id(d) for _, d in movements}
        charges = {**known, **fetch(sorted(needed - known.keys()))}
        return claimed_refund_rows(SHAPE, account, refunds, charges, fetch) + claimed_dispute_rows(
            account, movements, charges
        )

    def _disputed_charges(self, disputes: Sequence[StripeObject], headers: dict[str, str]) -> Fetched:
        """The charges of ``disputes`` (their ``charge`` an id, as a balance transaction's expanded source
        has it), by id, from one list of the account's disputes created from the first's ``created`` to
        the last's with ``expand[]=data.charge``: a night's disputes of earlier charges cost one request
        together rather than one each. A charge the list does not bring is read by id after."""
        if not disputes:
            return {}
        created = [field_value(d, "created", int, "dispute") for d in disputes]
        params = {
            "created[gte]": min(created),
            "created[lte]": max(created),
            "limit": PAGE_LIMIT,
            "expand[]": "data.charge",
        }
        wanted = {d["id"] for d in disputes}
        listed = self._list_all("/v1/disputes", params, headers, threading.Event())
        charges = [c for d in listed if d.get("id") in wanted and isinstance(c := d.get("charge"), dict)]
        return {record_id(charge, "charge of dispute"): charge for charge in charges}

    def _list_all(
        self, path: str, params: dict[str, Any], headers: dict[str, str] | None, abort: threading.Event
    ) -> list[StripeObject]:
        """Every object of a list, newest first, following ``starting_after`` until ``has_more`` is false
        (bounded and checked by ``pull.list_all``)."""

        def read_page(_page_number: int, last: StripeObject | None) -> Page:
            page_params = params if last is None else {**params, "starting_after": last["id"]}
            page = self._http.get_json(path, params=page_params, headers=headers)
            if page is None:
                raise ProviderDataError(f"{path}: list answered 404")
            data, has_more = page.get("data"), page.get("has_more")
            if page.get("object") != "list" or not isinstance(data, list) or not isinstance(has_more, bool):
                raise ProviderDataError(f"{path}: not a list response (keys {sorted(page)})")
            if has_more and not data:
                raise ProviderDataError(f"{path}: has_more is true with an empty page")
            return Page(data, has_more)

        return list_all(path, read_page, abort, self.max_pages)

    def _fetch_many(self, path: str, object_ids: Sequence[str], headers: dict[str, str] | None) -> Fetched:
        """``GET {path}/{id}`` for each id, concurrently; None for 404."""
        params = _RETRIEVE_EXPANSIONS.get(path)

        def fetch_one(object_id: str) -> StripeObject | None:
            obj = self._http.get_json(f"{path}/{quote(object_id, safe='')}", params=params, headers=headers)
            if obj is not None and obj.get("id") != object_id:
                raise ProviderDataError(f"{path}/{object_id}: answered with id {obj.get('id')!r}")
            return obj

        return fetch_each(object_ids, fetch_one, self._http)


def _intent_of(charge: StripeObject) -> bool:
    """Whether the charge is an attempt of a PaymentIntent (not a bare charge)."""
    return isinstance(charge.get("payment_intent"), str)


def _headers(account: PropertyAccount) -> dict[str, str]:
    return _request_headers(account.provider_account)


def _request_headers(provider_account: str | None) -> dict[str, str]:
    """Every request's headers: the pinned API version, and the connected account when there is one."""
    pinned = {VERSION_HEADER: API_VERSION}
    return {**pinned, "Stripe-Account": provider_account} if provider_account else pinned
