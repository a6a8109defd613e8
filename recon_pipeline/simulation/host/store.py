"""The simulator's data: Stripe-shaped objects, indexed by id and pre-sorted for list pagination.

Objects are kept exactly as Stripe renders them plus one simulator-only key, ``"account"`` (a connected
account id, or None for the platform), which the app uses for ``Stripe-Account`` filtering and strips from
responses. Charges keep ``balance_transaction`` expanded (a dict); the app renders it as its id unless the
request asks for the expansion. Disputes keep their ``balance_transactions`` in full, as Stripe renders
them. The balance transactions list (``GET /v1/balance_transactions``) serves the stored ones (those a
payout carried) and those the movements hold (``served_balance_transactions``), so a world states each
movement once.

The Razorpay flavour (``simulation/razorpay/api.py``) serves the same charges and refunds rendered as
Razorpay payments and refunds, so one world can be served in either flavour. Its settlement recon needs
what Stripe objects do not say: when money settles (``settlement_delay_days`` after the day it was
created, T+2 as Razorpay's domestic cycle), the fee a settlement booked where it differs from the
charge's (``settled_fees``), and what time it is (``clock``: settlements in the future are not served).

Lists are served from ``SortedView``s built once per (kind, account[, filter]) so that paging through
~100k charges costs a bisect and a slice per page, not a scan.
"""

from __future__ import annotations

import bisect
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from recon_pipeline.simulation.host.money import balance_transaction

StripeObject = dict[str, Any]
Kind = Literal[
    "charges", "refunds", "payment_intents", "events", "disputes", "payouts", "balance_transactions"
]
KINDS: tuple[Kind, ...] = (
    "charges",
    "refunds",
    "payment_intents",
    "events",
    "disputes",
    "payouts",
    "balance_transactions",
)
SETTLEMENT_DELAY_DAYS = 2  # Razorpay's domestic settlement cycle, T+2


@dataclass(frozen=True)
class SortedView:
    """Objects ascending by (created, id); lists are served from the end (Stripe lists newest first)."""

    objects: list[StripeObject]
    created: list[int]
    position: dict[str, int]

    @classmethod
    def of(cls, objects: list[StripeObject]) -> SortedView:
        ordered = sorted(objects, key=lambda obj: (obj["created"], obj["id"]))
        return cls(
            objects=ordered,
            created=[obj["created"] for obj in ordered],
            position={obj["id"]: index for index, obj in enumerate(ordered)},
        )

    def page(
        self, gte: int | None, lt: int | None, starting_after: str | None, limit: int
    ) -> tuple[list[StripeObject], bool]:
        """Newest-first page of objects with ``gte <= created < lt`` after the cursor, and has_more.

        Raises KeyError when ``starting_after`` is not an object of this view.
        """
        low, high = self._bounds(gte, lt)
        if starting_after is not None:
            high = min(high, self.position[starting_after])
        start = max(low, high - limit)
        return self.objects[start:high][::-1], start > low

    def skipped_page(self, gte: int | None, lt: int | None, skip: int, count: int) -> list[StripeObject]:
        """Newest-first page of objects with ``gte <= created < lt``, after skipping the ``skip`` newest
        (Razorpay's ``skip``/``count`` paging)."""
        low, high = self._bounds(gte, lt)
        end = max(low, high - skip)
        return self.objects[max(low, end - count) : end][::-1]

    def between(self, gte: int, lt: int) -> list[StripeObject]:
        """Objects with ``gte <= created < lt``, oldest first."""
        low, high = self._bounds(gte, lt)
        return self.objects[low:high]

    def _bounds(self, gte: int | None, lt: int | None) -> tuple[int, int]:
        low = 0 if gte is None else bisect.bisect_left(self.created, gte)
        high = len(self.objects) if lt is None else bisect.bisect_left(self.created, lt)
        return low, high


_EMPTY_VIEW = SortedView(objects=[], created=[], position={})


@dataclass
class SimulatorStore:
    """Stripe-shaped charges, refunds, payment intents, events, payouts and the balance transactions
    payouts carried (each with the simulator-only key ``"payout"``, its payout's id). Call ``reindex()``
    after adding or removing objects or changing an id, ``created`` or ``account`` (in-place status
    changes need not).

    ``settled_fees`` maps a charge id to the fee (tax included) its settlement booked when that differs
    from the charge's own fee; ``failed_payouts`` maps the id of a payout the bank refused, in the flavours
    whose payouts are derived from the movements (a Razorpay settlement, an Adyen batch's payout), to its
    failure; ``clock`` gives the current unix time (tests fix it)."""

    charges: list[StripeObject] = field(default_factory=list)
    refunds: list[StripeObject] = field(default_factory=list)
    payment_intents: list[StripeObject] = field(default_factory=list)
    events: list[StripeObject] = field(default_factory=list)
    disputes: list[StripeObject] = field(default_factory=list)  # with their balance_transactions expanded
    payouts: list[StripeObject] = field(default_factory=list)
    balance_transactions: list[StripeObject] = field(default_factory=list)
    settlement_delay_days: int = SETTLEMENT_DELAY_DAYS
    settled_fees: dict[str, int] = field(default_factory=dict)
    failed_payouts: dict[str, str] = field(default_factory=dict)
    clock: Callable[[], float] = field(default=time.time, repr=False, compare=False)
    _by_id: dict[str, dict[str, StripeObject]] = field(init=False, repr=False, compare=False)
    _views: dict[tuple[str, str | None, str | None], dict[Any, SortedView]] = field(
        init=False, repr=False, compare=False
    )
    _accounts: dict[str, dict[str | None, list[StripeObject]]] = field(init=False, repr=False, compare=False)
    _transactions: list[StripeObject] | None = field(init=False, repr=False, compare=False)
    _served_transactions: dict[str, StripeObject] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.reindex()

    def reindex(self) -> None:
        """Rebuild the id indexes and drop the sorted views (rebuilt lazily); reject duplicate ids."""
        by_id: dict[str, dict[str, StripeObject]] = {}
        for kind in KINDS:
            index: dict[str, StripeObject] = {}
            for obj in getattr(self, kind):
                if obj["id"] in index:
                    raise ValueError(f"duplicate {kind} id {obj['id']!r}")
                index[obj["id"]] = obj
            by_id[kind] = index
        self._by_id = by_id
        self._views = {}
        self._accounts = {}
        self._transactions = None

    def served_balance_transactions(self) -> list[StripeObject]:
        """Every balance transaction ``GET /v1/balance_transactions`` serves, built once per ``reindex``: the
        stored ones (those payouts carried, which win on an id they share with a movement's) and those the
        movements hold that are not stored (a charge's or refund's ``balance_transaction``, a dispute's
        ``balance_transactions``), each with its movement's ``account`` and, where the held one leaves
        them out, the fields of Stripe's shape (``source``, ``type``, ``reporting_category``, ``created``,
        ``fee_details``…: ``defaults_of``)."""
        if self._transactions is None:
            stored = self._by_id["balance_transactions"]
            held = [
                {**defaults_of(owner, kind, transaction), **transaction, "account": owner.get("account")}
                for kind in ("charges", "refunds", "disputes")
                for owner in getattr(self, kind)
                for transaction in held_transactions(owner)
                if transaction["id"] not in stored
            ]
            self._transactions = [*self.balance_transactions, *held]
            self._served_transactions = {t["id"]: t for t in self._transactions}
        return self._transactions

    def absorb(self, other: SimulatorStore) -> None:
        """Add every stored object of ``other``, and its settled fees and failed payouts (worlds of several
        nights are built night by night and merged); call ``reindex()`` once all are in."""
        for kind in KINDS:
            getattr(self, kind).extend(getattr(other, kind))
        self.settled_fees.update(other.settled_fees)
        self.failed_payouts.update(other.failed_payouts)

    def get(self, kind: Kind, object_id: str) -> StripeObject | None:
        """The stored object (with its ``account`` key) or None."""
        if kind == "balance_transactions":
            self.served_balance_transactions()
            return self._served_transactions.get(object_id)
        return self._by_id[kind].get(object_id)

    def view(
        self, kind: Kind, account: str | None, field_name: str | None = None, value: Any = None
    ) -> SortedView:
        """The sorted view of ``kind`` objects of ``account``, optionally only those with
        ``obj[field_name] == value`` (the refunds list's ``charge=``, the events list's ``type=``).

        A filtered view is built for every value of the field in one pass, so that many ``charge=``
        queries cost one partition of the list, not one scan each."""
        key = (kind, account, field_name)
        groups = self._views.get(key)
        if groups is None:
            members = self._of_account(kind).get(account, [])
            if field_name is None:
                groups = {None: SortedView.of(members)}
            else:
                partition: dict[Any, list[StripeObject]] = {}
                for obj in members:
                    partition.setdefault(obj.get(field_name), []).append(obj)
                groups = {group: SortedView.of(objs) for group, objs in partition.items()}
            self._views[key] = groups
        return groups.get(value) or _EMPTY_VIEW

    def _of_account(self, kind: Kind) -> dict[str | None, list[StripeObject]]:
        """``kind``'s objects by account, partitioned in one pass the first time any account asks: one
        scan per account would make a world of many connected accounts cost its size squared."""
        accounts = self._accounts.get(kind)
        if accounts is None:
            objects = (
                self.served_balance_transactions() if kind == "balance_transactions" else getattr(self, kind)
            )
            accounts = {}
            for obj in objects:
                accounts.setdefault(obj.get("account"), []).append(obj)
            self._accounts[kind] = accounts
        return accounts

    def to_json(self, path: str | os.PathLike[str]) -> None:
        settlement = {"settlement_delay_days": self.settlement_delay_days, "settled_fees": self.settled_fees}
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({**{kind: getattr(self, kind) for kind in KINDS}, **settlement}, handle)

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> SimulatorStore:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return cls(
            **{kind: data.get(kind, []) for kind in KINDS},
            settlement_delay_days=data.get("settlement_delay_days", SETTLEMENT_DELAY_DAYS),
            settled_fees=data.get("settled_fees", {}),
        )


# What a movement's balance transaction is, by the kind of movement that holds it (Stripe's ``type`` and
# ``reporting_category``); a dispute's are stored in full (withdrawal and reversal differ).
_TRANSACTION_KINDS = {"charges": ("charge", "charge"), "refunds": ("refund", "refund")}


def held_transactions(owner: StripeObject) -> list[StripeObject]:
    """The balance transactions a movement holds: a charge's or refund's one (when it has one), a
    dispute's list."""
    if owner.get("object") == "dispute":
        return list(owner.get("balance_transactions") or [])
    transaction = owner.get("balance_transaction")
    return [transaction] if isinstance(transaction, dict) else []


def defaults_of(owner: StripeObject, kind: str, transaction: StripeObject) -> StripeObject:
    """What a stored charge's or refund's balance transaction may leave out (a seeded charge's holds only
    its amounts and currency), from the movement that holds it: Stripe's full shape."""
    if kind not in _TRANSACTION_KINDS:
        return {"source": owner["id"]}
    transaction_type, category = _TRANSACTION_KINDS[kind]
    return balance_transaction(
        transaction["id"],
        owner["id"],
        transaction.get("created") or owner["created"],
        transaction.get("amount", 0),
        str(transaction.get("currency", owner.get("currency"))),
        reporting_category=category,
        transaction_type=transaction_type,
        fee=transaction.get("fee", 0),
    )
