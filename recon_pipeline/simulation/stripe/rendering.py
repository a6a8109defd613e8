"""Store objects as Stripe sends them, in the API version a request asks for: pure.

The seeded store keeps what the pipeline needs; Stripe always sends more. A client that only ever saw the
store's keys could come to depend on a key Stripe leaves null, or break on one it never met, so every
field Stripe always sends is filled in here (its null, empty or derived value) unless the store holds
one: a charge's ``livemode``, ``disputed``, ``billing_details``, ``outcome``, ``payment_method_details``;
a balance transaction's ``type``, ``reporting_category``, ``available_on``, ``fee_details``,
``exchange_rate``; a dispute's evidence; a refund's, PaymentIntent's and event's own.

The version decides two shapes (Stripe's 2022-11-15 upgrade notes): before it a PaymentIntent carries a
``charges`` list of its latest charge and no ``latest_charge``, and a charge carries its ``refunds`` list;
from it on, ``latest_charge`` names the charge and ``refunds`` is absent unless expanded. A request without
``Stripe-Version`` gets the account's default (``ACCOUNT_DEFAULT_VERSION``, an old one, as a long-lived
account's is).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from recon_pipeline.simulation.host.cards import card_of
from recon_pipeline.simulation.host.store import StripeObject, defaults_of

ACCOUNT_DEFAULT_VERSION = "2020-08-27"
LATEST_CHARGE_SINCE = "2022-11-15"
_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}(\.[a-z]+)?")

Lookup = Callable[[str], list[StripeObject]]  # an id -> the store objects it names (refunds of a charge)


def valid_version(version: str) -> bool:
    """Whether ``version`` is a Stripe API version's shape (``2022-11-15``, ``2025-03-31.basil``)."""
    return _VERSION.fullmatch(version) is not None


def has_latest_charge(version: str) -> bool:
    return version[:10] >= LATEST_CHARGE_SINCE


def public(obj: StripeObject) -> StripeObject:
    """The object without the simulator's ``account`` key."""
    return {key: value for key, value in obj.items() if key != "account"}


def balance_transaction(transaction: StripeObject, source: StripeObject) -> StripeObject:
    """An expanded balance transaction of ``source`` (a charge or refund), with Stripe's always-present
    fields (those the store fills in for the list it serves: ``defaults_of``)."""
    kind = "refunds" if source.get("object") == "refund" else "charges"
    return {**defaults_of(source, kind, transaction), **transaction}


def listed_balance_transaction(stored: StripeObject) -> StripeObject:
    """A balance transaction of ``GET /v1/balance_transactions``, as the store serves it (its fields filled
    in: ``served_balance_transactions``), without the simulator's keys (``account``, ``payout``)."""
    return {key: value for key, value in stored.items() if key not in ("account", "payout")}


def _with_transaction(obj: StripeObject, expand_balance_transaction: bool) -> StripeObject:
    """A charge's or refund's ``balance_transaction``: its id, or expanded."""
    transaction = obj.get("balance_transaction")
    if isinstance(transaction, dict):
        obj["balance_transaction"] = (
            balance_transaction(transaction, obj) if expand_balance_transaction else transaction["id"]
        )
    return obj


def _outcome(charge: StripeObject) -> StripeObject:
    if charge.get("status") == "failed":
        return {
            "network_status": "declined_by_network",
            "reason": "generic_decline",
            "risk_level": "normal",
            "risk_score": 20,
            "seller_message": "The bank did not return any further details with this decline.",
            "type": "issuer_declined",
        }
    return {
        "network_status": "approved_by_network",
        "reason": None,
        "risk_level": "normal",
        "risk_score": 20,
        "seller_message": "Payment complete.",
        "type": "authorized",
    }


_NO_ADDRESS = dict.fromkeys(("city", "country", "line1", "line2", "postal_code", "state"))
_CARD = {
    "checks": {"address_line1_check": None, "address_postal_code_check": None, "cvc_check": "pass"},
    "country": "US",
    "exp_month": 12,
    "exp_year": 2030,
    "funding": "credit",
    "installments": None,
    "mandate": None,
    "three_d_secure": None,
    "wallet": None,
}


def _payment_method_details(charge: StripeObject) -> StripeObject:
    """A card payment's details: the charge's card (``host/cards.py``: brand, last four, the issuer's
    ``authorization_code``, null when declined), the rest a plain credit card's; what the world seeded in
    the charge's own details (a hold's ``capture_before``) kept."""
    stored = charge.get("payment_method_details")
    if isinstance(stored, dict) and stored.get("type", "card") != "card":
        return stored
    card = card_of(charge)
    seeded = stored.get("card") if isinstance(stored, dict) else None
    return {
        **(stored if isinstance(stored, dict) else {}),
        "card": {
            **_CARD,
            "authorization_code": card.approval_code,
            "brand": card.brand,
            "fingerprint": card.fingerprint,
            "last4": card.last4,
            "network": card.brand,
            **(seeded if isinstance(seeded, dict) else {}),
        },
        "type": "card",
    }


def charge(
    stored: StripeObject, version: str, refunds_of: Lookup, expand_balance_transaction: bool = False
) -> StripeObject:
    """A charge as Stripe sends it in ``version``; ``balance_transaction`` is its id unless expanded."""
    obj = _with_transaction(public(stored), expand_balance_transaction)
    charge_id = obj.get("id")
    defaults: StripeObject = {
        "object": "charge",
        "amount_refunded": 0,
        "application": None,
        "application_fee": None,
        "application_fee_amount": None,
        "balance_transaction": None,
        "billing_details": {"address": dict(_NO_ADDRESS), "email": None, "name": None, "phone": None},
        "calculated_statement_descriptor": "SIMULATOR HOTELS",
        "customer": None,
        "description": None,
        "disputed": False,
        "failure_balance_transaction": None,
        "failure_code": "card_declined" if obj.get("status") == "failed" else None,
        "failure_message": "Your card was declined." if obj.get("status") == "failed" else None,
        "fraud_details": {},
        "invoice": None,
        "livemode": False,
        "metadata": {},
        "on_behalf_of": None,
        "outcome": _outcome(obj),
        "paid": obj.get("status") == "succeeded",
        "payment_intent": None,
        "payment_method": f"pm_{charge_id}",
        "payment_method_details": _payment_method_details(obj),
        "receipt_email": None,
        "receipt_number": None,
        "receipt_url": None,
        "refunded": False,
        "review": None,
        "shipping": None,
        "source_transfer": None,
        "statement_descriptor": None,
        "statement_descriptor_suffix": None,
        "transfer_data": None,
        "transfer_group": None,
    }
    if not has_latest_charge(version):
        refunds = [refund(r) for r in refunds_of(str(charge_id))]
        defaults["refunds"] = _sublist(refunds, f"/v1/charges/{charge_id}/refunds")
    return {**defaults, **obj, "payment_method_details": defaults["payment_method_details"]}


def refund(stored: StripeObject, expand_balance_transaction: bool = False) -> StripeObject:
    """A refund as Stripe sends it (its shape is the same in every version served); its
    ``balance_transaction`` is its id unless expanded."""
    return {
        "object": "refund",
        "balance_transaction": None,
        "metadata": {},
        "payment_intent": None,
        "reason": None,
        "receipt_number": None,
        "source_transfer_reversal": None,
        "transfer_reversal": None,
        **_with_transaction(public(stored), expand_balance_transaction),
    }


def payment_intent(stored: StripeObject, version: str, charge_of: Lookup, refunds_of: Lookup) -> StripeObject:
    """A PaymentIntent as Stripe sends it in ``version``: ``latest_charge`` from 2022-11-15 on, before it
    the ``charges`` list of that charge (rendered in the same version)."""
    obj = public(stored)
    intent_id = obj.get("id")
    manual = obj.get("status") == "requires_capture"
    defaults: StripeObject = {
        "object": "payment_intent",
        "amount_capturable": obj.get("amount", 0) if manual else 0,
        "amount_received": 0,
        "application": None,
        "application_fee_amount": None,
        "automatic_payment_methods": None,
        "canceled_at": None,
        "cancellation_reason": None,
        "capture_method": "manual" if manual else "automatic",
        "client_secret": f"{intent_id}_secret_simulator",
        "confirmation_method": "automatic",
        "customer": None,
        "description": None,
        "invoice": None,
        "last_payment_error": None,
        "latest_charge": None,
        "livemode": False,
        "metadata": {},
        "next_action": None,
        "on_behalf_of": None,
        "payment_method": None,
        "payment_method_options": {},
        "payment_method_types": ["card"],
        "processing": None,
        "receipt_email": None,
        "review": None,
        "setup_future_usage": None,
        "shipping": None,
        "statement_descriptor": None,
        "statement_descriptor_suffix": None,
        "transfer_data": None,
        "transfer_group": None,
    }
    out = {**defaults, **obj}
    if not has_latest_charge(version):
        latest = out.pop("latest_charge")
        charges = [charge(c, version, refunds_of) for c in charge_of(latest)] if latest else []
        out["charges"] = _sublist(charges, f"/v1/charges?payment_intent={intent_id}")
    return out


_DISPUTE_EVIDENCE = (
    "access_activity_log",
    "billing_address",
    "cancellation_policy",
    "cancellation_policy_disclosure",
    "cancellation_rebuttal",
    "customer_communication",
    "customer_email_address",
    "customer_name",
    "customer_purchase_ip",
    "customer_signature",
    "duplicate_charge_documentation",
    "duplicate_charge_explanation",
    "duplicate_charge_id",
    "product_description",
    "receipt",
    "refund_policy",
    "refund_policy_disclosure",
    "refund_refusal_explanation",
    "service_date",
    "service_documentation",
    "shipping_address",
    "shipping_carrier",
    "shipping_date",
    "shipping_documentation",
    "shipping_tracking_number",
    "uncategorized_file",
    "uncategorized_text",
)


def dispute(stored: StripeObject) -> StripeObject:
    """A dispute as Stripe sends it (the same in every version served): every evidence field (null unless
    given), its evidence details, and its balance transactions in full."""
    obj = public(stored)
    details = {"due_by": None, "has_evidence": False, "past_due": False, "submission_count": 0}
    return {
        "object": "dispute",
        "balance_transactions": [],
        "is_charge_refundable": False,
        "livemode": False,
        "metadata": {},
        "payment_intent": None,
        "reason": "general",
        **obj,
        "evidence": {**dict.fromkeys(_DISPUTE_EVIDENCE), **(obj.get("evidence") or {})},
        "evidence_details": {**details, **(obj.get("evidence_details") or {})},
    }


def event(stored: StripeObject) -> StripeObject:
    """An event as Stripe lists it: its ``data`` as rendered when it happened (in its ``api_version``)."""
    return {
        "object": "event",
        "api_version": ACCOUNT_DEFAULT_VERSION,
        "livemode": False,
        "pending_webhooks": 0,
        "request": {"id": None, "idempotency_key": None},
        **public(stored),
    }


def _sublist(data: list[StripeObject], url: str) -> StripeObject:
    """A list embedded in an object (a charge's refunds, a PaymentIntent's charges)."""
    return {"object": "list", "data": data, "has_more": False, "total_count": len(data), "url": url}
