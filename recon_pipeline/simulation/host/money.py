"""Stripe-shaped money movements beyond a plain charge and refund, for the simulator's store: disputes with
their balance transactions, and currency conversion of a charge's or refund's balance transaction.

The demo world and the tests both seed through these, so both hold what Stripe would send: a dispute with
its withdrawal (and, once won, its reversal) as full balance transactions of ``type`` ``adjustment``, the
dispute fee in the withdrawal's ``fee``/``fee_details``; a converted movement whose balance transaction is
in the account's settlement currency at an ``exchange_rate`` (presentment amount × rate), its fee and net in
that currency too.
"""

from __future__ import annotations

from typing import Any

StripeObject = dict[str, Any]

DISPUTE_FEE_MINOR = 1_500  # Stripe's dispute fee: 15.00 in the account's currency
AVAILABLE_AFTER_S = 2 * 86_400  # a card payment's funds become available two days after it


def balance_transaction(
    transaction_id: str,
    source_id: str,
    created: int,
    amount: int,
    currency: str,
    *,
    reporting_category: str,
    transaction_type: str,
    fee: int = 0,
    fee_description: str = "Stripe processing fees",
    exchange_rate: float | None = None,
    description: str | None = None,
) -> StripeObject:
    """A full balance transaction (signed ``amount``; ``net`` = amount − fee)."""
    return {
        "id": transaction_id,
        "object": "balance_transaction",
        "amount": amount,
        "available_on": created + AVAILABLE_AFTER_S,
        "created": created,
        "currency": currency,
        "description": description,
        "exchange_rate": exchange_rate,
        "fee": fee,
        "fee_details": (
            [
                {
                    "amount": fee,
                    "application": None,
                    "currency": currency,
                    "description": fee_description,
                    "type": "stripe_fee",
                }
            ]
            if fee
            else []
        ),
        "net": amount - fee,
        "reporting_category": reporting_category,
        "source": source_id,
        "status": "available",
        "type": transaction_type,
    }


def dispute(
    dispute_id: str,
    charge: StripeObject,
    opened: int,
    *,
    won_at: int | None = None,
    fee: int = DISPUTE_FEE_MINOR,
    returned_fee: int = 0,
    amount: int | None = None,
) -> StripeObject:
    """A dispute of ``charge`` opened at ``opened`` (the withdrawal and its fee), lost unless ``won_at``
    (the reversal, returning ``returned_fee`` of the fee). Its balance transactions settle as the charge's
    did: in its currency at its exchange rate. Stored under the charge's account, as its charge is."""
    disputed = charge["amount_captured"] if amount is None else amount
    charge_transaction = charge["balance_transaction"] or {}
    currency = str(charge_transaction.get("currency", charge["currency"]))
    rate = charge_transaction.get("exchange_rate")
    settled = disputed if rate is None else round(disputed * rate)
    transactions = [
        balance_transaction(
            f"txn_{dispute_id[3:]}w",
            dispute_id,
            opened,
            -settled,
            currency,
            reporting_category="dispute",
            transaction_type="adjustment",
            fee=fee,
            fee_description="Dispute fee",
            exchange_rate=rate,
            description=f"Chargeback withdrawal for {charge['id']}",
        )
    ]
    if won_at is not None:
        transactions.append(
            balance_transaction(
                f"txn_{dispute_id[3:]}r",
                dispute_id,
                won_at,
                settled,
                currency,
                reporting_category="dispute_reversal",
                transaction_type="adjustment",
                fee=-returned_fee,
                fee_description="Dispute fee refund",
                exchange_rate=rate,
                description=f"Chargeback reversal for {charge['id']}",
            )
        )
    return {
        "id": dispute_id,
        "object": "dispute",
        "amount": disputed,
        "balance_transactions": transactions,
        "charge": charge["id"],
        "created": opened,
        "currency": charge["currency"],
        "evidence": {"customer_name": None, "receipt": None, "uncategorized_text": None},
        "evidence_details": {"due_by": opened + 7 * 86_400, "has_evidence": won_at is not None},
        "is_charge_refundable": False,
        "livemode": False,
        "metadata": {},
        "payment_intent": charge.get("payment_intent"),
        "reason": "fraudulent",
        "status": "lost" if won_at is None else "won",
        "account": charge.get("account"),
    }


def convert(charge: StripeObject, currency: str, exchange_rate: float) -> StripeObject:
    """``charge`` settled in ``currency`` (lower case) at ``exchange_rate``: its balance transaction's amount
    and fee in that currency (the fee re-priced in proportion), as Stripe converts a foreign card."""
    transaction = charge["balance_transaction"]
    amount = round(transaction["amount"] * exchange_rate)
    fee = round(transaction["fee"] * exchange_rate)
    transaction.update(
        amount=amount, currency=currency, exchange_rate=exchange_rate, fee=fee, net=amount - fee
    )
    return charge


def settle_refund(refund: StripeObject, charge: StripeObject) -> StripeObject:
    """``refund`` with its balance transaction, in the charge's settlement currency at its rate."""
    charge_transaction = charge["balance_transaction"]
    rate = charge_transaction.get("exchange_rate")
    amount = refund["amount"] if rate is None else round(refund["amount"] * rate)
    refund["balance_transaction"] = balance_transaction(
        f"txn_{refund['id']}",  # never its charge's (``txn_`` + the charge id's tail): ids are unique
        refund["id"],
        refund["created"],
        -amount,
        charge_transaction["currency"],
        reporting_category="refund",
        transaction_type="refund",
        exchange_rate=rate,
        description="REFUND FOR CHARGE",
    )
    return refund
