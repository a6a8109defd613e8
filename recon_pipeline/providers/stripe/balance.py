"""Stripe balance transactions: what a movement did to the account's balance, in the balance's currency.

Every Stripe money movement (charge, refund, dispute withdrawal, dispute reversal) has a balance transaction
(BT). Its ``amount`` is signed by direction (positive: funds in, negative: funds out), which is how the
ledger signs the movement too, and is in the account's settlement currency; ``fee`` is what Stripe took for
the movement in that currency (negative when Stripe returns a fee). When the BT's currency differs from the
object's (a USD card charged on a EUR account: currency conversion at ``exchange_rate``), the frame keeps
the object's presentment figures in ``amount_minor``/``currency`` and the BT's in
``settlement_amount_minor``/``settlement_currency``, because the PMS may book either
(docs/design.md, "Money movements").
"""

from __future__ import annotations

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.objects import ProviderObject, Row, currency_field, signed_amount_field


def expanded_balance_transaction(obj: ProviderObject, what: str) -> ProviderObject | None:
    """The object's ``balance_transaction`` as requested with ``expand[]``; None while it has none (a
    pending or failed charge, a pending refund). An id where the object was asked for is a broken pull."""
    transaction = obj.get("balance_transaction")
    if transaction is None or isinstance(transaction, dict):
        return transaction
    raise ProviderDataError(
        f"{what} {obj.get('id')!r}: field 'balance_transaction' is not expanded ({transaction!r})"
    )


def settlement_columns(transaction: ProviderObject | None, presentment_currency: str, what: str) -> Row:
    """The frame's conversion columns of a movement presented in ``presentment_currency``: the BT's signed
    amount and upper-case currency when it settled in another currency, nothing otherwise (the columns
    stay null: the amount is the settlement figure already)."""
    if transaction is None:
        return {}
    currency = currency_field(transaction, what)
    if currency == presentment_currency:
        return {}
    return {
        "settlement_amount_minor": signed_amount_field(transaction, "amount", what),
        "settlement_currency": currency,
    }
