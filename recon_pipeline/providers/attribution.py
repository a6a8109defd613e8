"""Whose payment is it: the one attribution rule of docs/design.md, for every provider.

Several properties may share one provider account (a Stripe connected account, the platform, a Razorpay
merchant). A pulled record belongs to a property by what the payment itself says (Stripe
``metadata.property_id``, Razorpay ``notes.property_id``), else by the PMS's ``payment_orders`` (keyed by
charge or PaymentIntent/order id), else it is nobody's. A property alone on a connected account keeps
everything on it unless the metadata names another property. Refunds and fees carry their charge's claim
and ids, so they follow their charge.

Adapters read the claim into the frame's ``property_id`` (None when the payment names no property) and
leave the decision to :func:`attribute`, so that no property can ever reconcile another's payment, and a
payment nobody can be given is reported once: by the first property (by id) on the account.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from recon_pipeline.frames import present, rows_at
from recon_pipeline.providers.objects import PropertyAccount, Row

PaymentOwners = Mapping[str, str]  # payment_orders: provider_payment_id (ch_/pi_/pay_/order_) -> property_id


@dataclass(frozen=True)
class Attribution:
    """A pulled frame split by owner: the property's own records, and the records nobody owns."""

    own: pd.DataFrame
    unattributed: pd.DataFrame


def claim_of(metadata: object) -> str | None:
    """The property a payment's metadata (Stripe ``metadata``, Razorpay ``notes``) names, None when it
    names none. Lenient on purpose: an adapter reads every payment of a shared account, and another
    property's corrupt metadata must not fail this property's pull (what nobody claims is reported)."""
    claim = metadata.get("property_id") if isinstance(metadata, dict) else None
    return claim if isinstance(claim, str) and claim else None


def claimable(claim: str | None, account: PropertyAccount) -> bool:
    """Whether a payment with this claim may be the property's: unclaimed, or claimed by it. Adapters
    build rows only for these, so another property's payments are never even parsed here."""
    return claim is None or account.serves(claim)


def unclaimed_payment_ids(claimed: pd.DataFrame) -> list[str]:
    """Charge and intent ids of the records whose payment names no property: what ``payment_orders``
    is asked about."""
    columns = (claimed[name].tolist() for name in ("property_id", "charge_id", "payment_intent_id"))
    return sorted(
        {
            payment_id
            for claim, *payment_ids in zip(*columns, strict=True)
            if not present(claim)
            for payment_id in payment_ids
            if present(payment_id)
        }
    )


def reports_unattributed(account: PropertyAccount) -> bool:
    """Whether this property reports its account's unattributable payments: the first property on it."""
    return account.property_id == min(account.account_properties, default=account.property_id)


def attribute(claimed: pd.DataFrame, account: PropertyAccount, owners: PaymentOwners) -> Attribution:
    """Split ``claimed`` (``property_id`` = the payment's own claim, or None) into the property's records
    (``property_id`` set to it) and the records nobody can be given (``property_id`` None)."""
    alone = account.provider_account is not None and set(account.account_properties) <= {account.property_id}
    fallback = account.property_id if alone else None
    # A night holds a few dozen records: plain Python over the three columns costs less than the
    # half-dozen Series operations (map, fillna, where) the same rule takes, and a pull that is all the
    # property's (a connected account's) is handed on as it is.
    claims = claimed["property_id"].tolist()
    owner = [
        claim if present(claim) else _first_owner(owners, charge, intent, fallback)
        for claim, charge, intent in zip(
            claims, claimed["charge_id"].tolist(), claimed["payment_intent_id"].tolist(), strict=True
        )
    ]
    own = [at for at, claim in enumerate(owner) if claim == account.property_id]
    mine = rows_at(claimed, own)
    if any(claims[at] != account.property_id for at in own):  # given by payment_orders, or alone on it
        mine = _owned_by(mine, account.property_id)
    return Attribution(
        own=mine, unattributed=rows_at(claimed, [at for at, claim in enumerate(owner) if claim is None])
    )


def _first_owner(owners: PaymentOwners, charge: Any, intent: Any, otherwise: str | None) -> str | None:
    """The owner ``payment_orders`` give the charge, else the intent, else ``otherwise``."""
    for payment_id in (charge, intent):
        if present(payment_id) and (owner := owners.get(payment_id)) is not None:
            return owner
    return otherwise


def _owned_by(records: pd.DataFrame, property_id: str) -> pd.DataFrame:
    """``records`` with ``property_id`` set, kept in the frame contract's dtype (object, not str)."""
    return records.assign(property_id=pd.Series(property_id, index=records.index, dtype="object"))


def named_rows(rows: Sequence[Row], account: PropertyAccount) -> list[Row]:
    """Of the records a by-id lookup found for ids the property's ledger names, its own and those nobody
    else owns (the ledger naming it is the only claim there is), each now the property's; another
    property's are dropped. Taken over the rows before their frame (``records_frame`` orders them)."""
    return [
        row if row["property_id"] == account.property_id else {**row, "property_id": account.property_id}
        for row in rows
        if not present(row["property_id"]) or row["property_id"] == account.property_id
    ]
