"""A charge's money belongs to the night it was captured in, not the night it was authorized in.

Stripe lists charges by ``created``: the authorization. A charge captured later (``capture_method``
``manual``: a hotel authorizes at check-in and captures at checkout, up to 30 days later with an extended
authorization) moves money only when it is captured, which is when its balance transaction (BT) is created;
Stripe's charge has no ``captured_at``, its BT's ``created`` is the capture time. So the night's pull

- leaves out a charge created tonight whose BT was created after the night (``captured_after``): its
  capture's night has it;
- adds each charge created on an earlier night whose BT was created tonight (``earlier_captures``), read
  from the night's list of balance transactions (every type, ``source`` expanded), which the pull reads for
  the dispute movements anyway: a capture costs no request of its own.

A capture's BT is of ``type`` ``charge`` (a card charge, ``ch_``) or ``payment`` (other payment methods and
a connected account's share of a destination charge, ``py_``); its ``source`` is the charge.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.objects import ProviderObject, created_at_field, field_value
from recon_pipeline.providers.stripe.balance import expanded_balance_transaction

CAPTURE_TRANSACTION_TYPES = frozenset({"charge", "payment"})


def moved_at(charge: ProviderObject) -> datetime:
    """When the charge's money moved: its BT's ``created`` (the capture), the charge's own ``created``
    while it has no BT (pending, failed or not captured yet); the charge's is checked either way. Needs
    ``balance_transaction`` expanded."""
    created = created_at_field(charge, "charge")
    transaction = expanded_balance_transaction(charge, "charge")
    if transaction is None:
        return created
    return created_at_field(transaction, f"balance transaction of charge {charge.get('id')!r}")


def captured_after(charge: ProviderObject, window_end: int) -> bool:
    """Whether the charge was captured (its BT created) at or after ``window_end``: an authorization of
    this night captured on a later one, whose pull has it (``earlier_captures``)."""
    transaction = expanded_balance_transaction(charge, "charge")
    return transaction is not None and moved_at(charge).timestamp() >= window_end


def earlier_captures(transactions: Iterable[ProviderObject], window_start: int) -> list[ProviderObject]:
    """The charges created before ``window_start`` that a capture among ``transactions`` (the night's BTs,
    ``source`` expanded) captured, each carrying that BT as its expanded ``balance_transaction``, as a
    charge listed with ``expand[]=data.balance_transaction`` does. A capture whose source is not an
    expanded charge is a broken pull."""
    captures = []
    for transaction in transactions:
        if transaction.get("type") not in CAPTURE_TRANSACTION_TYPES:
            continue
        charge = transaction.get("source")
        if not isinstance(charge, dict) or charge.get("object") != "charge":
            raise ProviderDataError(
                f"balance transaction {transaction.get('id')!r}: field 'source' is not an expanded charge "
                f"({str(charge)[:80]!r})"
            )
        if field_value(charge, "created", int, "charge") < window_start:
            held = {name: value for name, value in transaction.items() if name != "source"}
            captures.append({**charge, "balance_transaction": held})
    return captures
