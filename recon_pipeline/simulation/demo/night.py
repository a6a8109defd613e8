"""One property-night of the demo world as a keyed PMS books it (``NightBuilder``), and the ``World`` the
builders write into: both halves of the demo data and what was planted.

A night's ordinary activity (payments, refunds, fees, all booked under the provider's ids), the
discrepancies planted in it and counted in ``World.expected``, the timing differences across its edges,
the authorization holds, and on Stripe its disputes, conversion and payouts. ``world.py`` builds worlds of
these nights; ``hotel_night.py`` and ``pms_ledgers.py`` write the hotel-style ledgers on top of them.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from recon_pipeline import categories as c
from recon_pipeline.nights import NightWindow, night_window
from recon_pipeline.payouts.deposit import DEFAULT_DEPOSIT_DAYS, arrivals_due_on
from recon_pipeline.properties import PropertyRow
from recon_pipeline.simulation.host.money import DISPUTE_FEE_MINOR, convert, dispute, settle_refund
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.interface import DemoWorld
from recon_pipeline.simulation.razorpay.api import SETTLEMENT_TZ, created_days, settlement_id_of
from recon_pipeline.simulation.stripe.api import balance_transaction_object, payout_object

# A foreign guest's card presented in USD and settled in the property's currency at this rate (USD → it).
USD_RATES = {"EUR": 0.92, "GBP": 0.79, "AUD": 1.52}
AMOUNT_RANGE = {"JPY": (9_000, 60_000), "INR": (350_000, 2_500_000)}
DEFAULT_AMOUNT_RANGE = (8_000, 45_000)


@dataclass
class World:
    """Both halves of the demo data, plus how many findings of each category were planted."""

    properties: list[dict[str, Any]] = field(default_factory=list)
    bookings: list[dict[str, Any]] = field(default_factory=list)
    payment_orders: list[dict[str, Any]] = field(default_factory=list)
    ledger_entries: list[dict[str, Any]] = field(default_factory=list)
    store: SimulatorStore = field(default_factory=SimulatorStore)
    expected: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (property, night, category)
    # Payout findings, kept apart: the ``payouts`` asset finds them, not the night's reconciliation.
    expected_payouts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    # What the matcher is to pair in a hotel-style property's night (``HotelNightBuilder``), per rule:
    # (property, night, rule) → matches; the provider's id ("exact_id") is not counted here.
    expected_matches: Counter[tuple[str, str, str]] = field(default_factory=Counter)


def unix(moment: datetime) -> int:
    return int(moment.timestamp())


def fee_for(amount: int, currency: str) -> int:
    """A card fee shaped like a card network's (a percentage plus a fixed part in the currency's minor
    unit), or for INR like an Indian gateway's (2% plus 18% GST on it)."""
    if currency == "INR":
        return round(amount * 0.02 * 1.18)
    return round(amount * 0.036) if currency == "JPY" else round(amount * 0.029) + 30


def order_key(charge: dict[str, Any]) -> str:
    """The ``payment_orders`` key of a charge: its PaymentIntent, else the payment itself."""
    key: str = charge["payment_intent"] or charge["id"]
    return key


class NightBuilder:
    """Writes one property-night of ordinary activity, then plants one set of known discrepancies."""

    def __init__(
        self, world: World, prop: PropertyRow, night: date, rng: random.Random, ids: DemoWorld
    ) -> None:
        self.world, self.prop, self.rng, self.ids = world, prop, rng, ids
        self.night = night.isoformat()
        self.window: NightWindow = night_window(night, prop.timezone, prop.night_cutoff)
        self.tag = f"{prop.property_id.split('-')[0]}{night:%Y%m%d}"
        self.serial = 0
        # This night's payment orders by key: a refund finds its order here, not by scanning the world's
        # (a world of thousands of property-nights would make building it quadratic).
        self.orders: dict[str, dict[str, Any]] = {}

    # ----- ids, times, amounts -------------------------------------------------------------------
    def next_id(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}_{self.tag}{self.serial:05d}"

    def inside(self, margin_s: int = 900) -> datetime:
        span = int(self.window.duration.total_seconds()) - 2 * margin_s
        return self.window.start + timedelta(seconds=margin_s + self.rng.randrange(span))

    def first_half(self, margin_s: int = 900) -> datetime:
        """A moment in the first half of the night, ``margin_s`` from its start."""
        span = int(self.window.duration.total_seconds()) // 2 - margin_s
        return self.window.start + timedelta(seconds=margin_s + self.rng.randrange(span))

    def amount(self) -> int:
        low, high = AMOUNT_RANGE.get(self.prop.currency, DEFAULT_AMOUNT_RANGE)
        return self.rng.randrange(low, high, self.amount_step())

    def amount_step(self) -> int:
        return 100 if self.prop.currency == "JPY" else 50

    def amount_apart_from(self, taken: set[int]) -> int:
        """An amount as :meth:`amount` draws it, stepped past those ``taken`` (no further draw, so the rest
        of the world is as it was)."""
        amount = self.amount()
        while amount in taken:
            amount += self.amount_step()
        return amount

    # ----- the two halves ---------------------------------------------------------------------------
    def payment(
        self, created: datetime, amount: int, *, status: str = "succeeded", booking_status: str = "confirmed"
    ) -> dict[str, Any]:
        """A booking paid by one charge: provider objects, booking, payment order. No ledger entries."""
        booking_id, pi_id = self.next_id("bk"), self.next_id("pi")
        charge_id = self.next_id(self.ids.charge_prefix)
        intent_id = pi_id if self.ids.payment_intents else None
        succeeded = status == "succeeded"
        fee = fee_for(amount, self.prop.currency) if succeeded else 0
        cur = self.prop.currency.lower()
        metadata = {"booking_id": booking_id}
        if self.prop.provider_account is None:
            metadata["property_id"] = self.prop.property_id
        charge = {
            "id": charge_id,
            "object": "charge",
            "amount": amount,
            "amount_captured": amount if succeeded else 0,
            "amount_refunded": 0,
            "currency": cur,
            "created": unix(created),
            "status": status,
            "captured": succeeded,
            "paid": succeeded,
            "refunded": False,
            "payment_intent": intent_id,
            "metadata": metadata,
            "account": self.prop.provider_account,
            "balance_transaction": (
                {
                    "id": self.next_id("txn"),
                    "object": "balance_transaction",
                    "amount": amount,
                    "fee": fee,
                    "net": amount - fee,
                    "currency": cur,
                }
                if succeeded
                else None
            ),
        }
        self.world.store.charges.append(charge)
        if intent_id is not None:
            self.payment_intent(charge, intent_id, created)
        self.world.bookings.append(
            {
                "booking_id": booking_id,
                "property_id": self.prop.property_id,
                "status": booking_status if succeeded else "pending",
                "amount_minor": amount,
                "currency": self.prop.currency,
                "created_at": created - timedelta(minutes=10),
                "updated_at": created + timedelta(minutes=1),
            }
        )
        order = self.orders[order_key(charge)] = {
            "provider_payment_id": order_key(charge),
            "property_id": self.prop.property_id,
            "booking_id": booking_id,
            "amount_minor": amount,
            "amount_refunded_minor": 0,
            "currency": self.prop.currency,
            "status": "captured" if succeeded else "failed",
            "captured_at": created if succeeded else None,
            "updated_at": created + timedelta(minutes=1),
        }
        self.world.payment_orders.append(order)
        return charge

    def payment_intent(self, charge: dict[str, Any], intent_id: str, created: datetime) -> None:
        """The payment intent the charge is the latest (and only) attempt of."""
        succeeded = charge["status"] == "succeeded"
        self.world.store.payment_intents.append(
            {
                "id": intent_id,
                "object": "payment_intent",
                "amount": charge["amount"],
                "amount_received": charge["amount"] if succeeded else 0,
                "currency": charge["currency"],
                "status": "succeeded" if succeeded else "requires_payment_method",
                "latest_charge": charge["id"],
                "metadata": charge["metadata"],
                "created": unix(created) - 5,
                "account": self.prop.provider_account,
            }
        )

    def refund(self, charge: dict[str, Any], created: datetime, amount: int) -> dict[str, Any]:
        refund = {
            "id": self.next_id(self.ids.refund_prefix),
            "object": "refund",
            "amount": amount,
            "charge": charge["id"],
            "payment_intent": charge["payment_intent"],
            "currency": charge["currency"],
            "created": unix(created),
            "status": "succeeded",
            "metadata": {},
            "account": self.prop.provider_account,
        }
        self.world.store.refunds.append(refund)
        charge["amount_refunded"] += amount
        charge["refunded"] = charge["amount_refunded"] >= charge["amount"]
        order = self.orders[order_key(charge)]
        order["amount_refunded_minor"] = charge["amount_refunded"]
        order["status"] = "refunded" if charge["refunded"] else "partially_refunded"
        return refund

    def entry(
        self,
        kind: str,
        record_id: str | None,
        amount: int,
        posted: datetime,
        booking_id: str | None = None,
        currency: str | None = None,
    ) -> None:
        self.world.ledger_entries.append(
            {
                "entry_id": self.next_id("le"),
                "property_id": self.prop.property_id,
                "booking_id": booking_id,
                "provider_record_id": record_id,
                "kind": kind,
                "amount_minor": amount,
                "currency": currency or self.prop.currency,
                "posted_at": posted,
            }
        )

    def book_charge(
        self,
        charge: dict[str, Any],
        delay: timedelta,
        *,
        amount: int | None = None,
        currency: str | None = None,
        with_fee: bool = True,
    ) -> None:
        """The ledger's entries for a charge: its payment, and its fee."""
        posted = datetime.fromtimestamp(charge["created"], UTC) + delay
        booking_id = charge["metadata"]["booking_id"]
        self.entry(
            "payment",
            charge["id"],
            charge["amount"] if amount is None else amount,
            posted,
            booking_id,
            currency,
        )
        fee = (charge["balance_transaction"] or {}).get("fee", 0)
        if with_fee and fee:
            self.entry("fee", charge["id"], -fee, posted + timedelta(seconds=1), booking_id)

    def book_refund(self, refund: dict[str, Any], charge: dict[str, Any], delay: timedelta) -> None:
        posted = datetime.fromtimestamp(refund["created"], UTC) + delay
        self.entry("refund", refund["id"], -refund["amount"], posted, charge["metadata"]["booking_id"])

    def plant(self, category: str, count: int = 1) -> None:
        self.world.expected[(self.prop.property_id, self.night, category)] += count

    # ----- the night -------------------------------------------------------------------------------
    def build(self, bookings: int, plant: bool) -> None:
        first_refund = len(self.world.store.refunds)
        charges = [self.ordinary_booking() for _ in range(bookings)]
        refunds = [r for r in self.world.store.refunds[first_refund:] if r["status"] == "succeeded"]
        if plant:
            self.plant_discrepancies(charges)
        self.plant_timing_differences()
        if plant:
            self.plant_authorization_holds()
        if self.ids.balance_transactions:
            self.balance_movements(plant)
        self.pay_out(charges, refunds)
        if plant and self.ids.balance_transactions and self.prop.provider_account:
            self.plant_payout_findings()
        if plant and self.ids.settled_payouts:
            self.plant_settlement_findings()

    def plant_payout_findings(self) -> None:
        """For the payouts asset, on this property's own connected account: a payout arriving tonight that
        failed (the bank account was closed), ``payout_failed``; and when tonight is a deposit deadline, a
        payout paid ``DEFAULT_DEPOSIT_DAYS`` business days ago that no bank credit pays,
        ``payout_not_deposited``. Both manual (not itemised by Stripe, so nothing to trace)."""
        night, account, currency = self.window.night, self.prop.provider_account, self.prop.currency
        failed = self.next_id("po")
        self.world.store.payouts.append(
            payout_object(
                failed,
                self.amount(),
                currency,
                unix(_midnight(night)),
                unix(self.window.start),
                account,
                status="failed",
                automatic=False,
                failure_code="account_closed",
            )
        )
        self.plant_payout(c.PAYOUT_FAILED)
        due = arrivals_due_on(night, DEFAULT_DEPOSIT_DAYS, frozenset())
        if due:
            arrival = _midnight(due[-1])
            self.world.store.payouts.append(
                payout_object(
                    self.next_id("po"),
                    self.amount(),
                    currency,
                    unix(arrival),
                    unix(arrival - timedelta(days=2)),
                    account,
                    automatic=False,
                    statement_descriptor=f"RECON {self.tag.upper()}",
                )
            )
            self.plant_payout(c.PAYOUT_NOT_DEPOSITED)

    def plant_settlement_findings(self) -> None:
        """For the payouts asset, on a provider that pays out daily settlements of the payments captured
        some working days before (Razorpay): a payment of an earlier night whose settlement arrives
        tonight and is refused by the bank, ``payout_failed``; and when tonight is a deposit deadline, one
        whose settlement arrived ``DEFAULT_DEPOSIT_DAYS`` business days ago that no bank credit pays,
        ``payout_not_deposited``. Each is booked in the ledger on its own night (not tonight's)."""
        night = self.window.night
        if self.settled_payment(night):
            self.world.store.failed_payouts[settlement_id_of(night)] = "refused by the bank"
            self.plant_payout(c.PAYOUT_FAILED)
        due = arrivals_due_on(night, DEFAULT_DEPOSIT_DAYS, frozenset())
        if any(self.settled_payment(day) for day in reversed(due)):  # the latest that settles anything
            self.plant_payout(c.PAYOUT_NOT_DEPOSITED)

    def settled_payment(self, settlement_day: date) -> bool:
        """A payment (and its ledger entries) made at noon on the day whose money settles on
        ``settlement_day``; False when nothing settles that day (no working day)."""
        created_on = created_days(self.world.store, settlement_day)
        if not created_on:
            return False
        noon = datetime.combine(created_on[-1], time(12), SETTLEMENT_TZ)
        self.book_charge(self.payment(noon, self.amount()), timedelta(minutes=5))
        return True

    def plant_payout(self, category: str) -> None:
        self.world.expected_payouts[(self.prop.property_id, self.night, category)] += 1

    def pay_out(self, charges: list[dict[str, Any]], refunds: list[dict[str, Any]]) -> None:
        """One automatic payout of the night's ordinary charges and refunds, paid two days after the
        night, with the balance transactions it carried (last: its ids change no other object's)."""
        moved = [charge for charge in charges if isinstance(charge["balance_transaction"], dict)]
        if not moved:
            return
        payout_id = self.next_id("po")
        account, currency = self.prop.provider_account, self.prop.currency
        transactions = [
            balance_transaction_object(
                charge["balance_transaction"]["id"],
                payout_id,
                charge["id"],
                "charge",
                charge["balance_transaction"]["amount"],
                charge["balance_transaction"]["fee"],
                currency,
                charge["balance_transaction"].get("created", charge["created"]),  # a hold: its capture
                account,
            )
            for charge in moved
        ] + [
            balance_transaction_object(
                self.next_id("txn"),
                payout_id,
                refund["id"],
                "refund",
                -refund["amount"],
                0,
                currency,
                refund["created"],
                account,
            )
            for refund in refunds
        ]
        arrival = _midnight(self.window.night + timedelta(days=2))
        amount = sum(transaction["net"] for transaction in transactions)
        self.world.store.payouts.append(
            payout_object(
                payout_id,
                amount,
                currency,
                unix(arrival),
                unix(self.window.end),
                account,
                statement_descriptor=f"RECON {self.tag.upper()}",
            )
        )
        payout_withdrawal = balance_transaction_object(
            f"txn_{payout_id}",
            payout_id,
            payout_id,
            "payout",
            -amount,
            0,
            currency,
            unix(self.window.end),
            account,
        )
        self.world.store.balance_transactions += [*transactions, payout_withdrawal]

    def ordinary_booking(self) -> dict[str, Any]:
        charge = self.payment(self.inside(), self.amount())
        self.book_charge(charge, timedelta(seconds=self.rng.randrange(30, 300)))
        roll = self.rng.random()
        if roll < 0.10:  # partial refunds; one in five charges gets a second one
            for share in (0.25, 0.15) if roll < 0.02 else (0.3,):
                self.refund_in_night(charge, round(charge["amount"] * share))
        return charge

    def refund_in_night(self, charge: dict[str, Any], amount: int) -> None:
        created = datetime.fromtimestamp(charge["created"], UTC) + timedelta(
            minutes=self.rng.randrange(5, 90)
        )
        if created >= self.window.end - timedelta(minutes=5):
            return
        refund = self.refund(charge, created, amount)
        self.book_refund(refund, charge, timedelta(seconds=20))

    def plant_discrepancies(self, charges: list[dict[str, Any]]) -> None:
        unbooked_amounts: set[int] = set()
        for _ in range(3):
            charge = self.payment(self.inside(), self.amount())
            self.book_charge(charge, timedelta(seconds=60), with_fee=True)
            self.world.ledger_entries.pop(-2)  # the payment entry goes missing, its fee stays
            unbooked_amounts.add(charge["amount"])
            self.plant(c.MISSING_IN_LEDGER)
        unbooked = self.refund(
            charges[0],
            datetime.fromtimestamp(charges[0]["created"], UTC) + timedelta(minutes=3),
            round(charges[0]["amount"] * 0.1),
        )
        assert unbooked["amount"] > 0
        self.plant(c.MISSING_IN_LEDGER)
        for _ in range(2):
            ghost_id = self.next_id(f"{self.ids.charge_prefix}_ghost")
            self.entry("payment", ghost_id, self.amount(), self.inside())
            self.plant(c.MISSING_AT_PROVIDER)
        # A posting with no provider id, of no unbooked charge's amount: one of the same amount is a
        # look-alike the matcher rightly suggests pairing (its own discrepancy, not two unrelated ones).
        self.entry("payment", None, self.amount_apart_from(unbooked_amounts), self.inside())
        self.plant(c.MISSING_AT_PROVIDER)
        for _ in range(2):
            charge = self.payment(self.inside(), self.amount())
            self.book_charge(charge, timedelta(seconds=45), amount=charge["amount"] - 500)
            self.plant(c.AMOUNT_MISMATCH)
        charge = self.payment(self.inside(), self.amount())
        self.book_charge(
            charge, timedelta(seconds=45), currency="GBP" if self.prop.currency != "GBP" else "EUR"
        )
        self.plant(c.CURRENCY_MISMATCH)
        for _ in range(2):
            charge = self.payment(self.inside(), self.amount())
            self.book_charge(charge, timedelta(seconds=45))
            self.book_charge(charge, timedelta(seconds=105), with_fee=False)
            self.plant(c.DUPLICATE_IN_LEDGER)
        failed = self.payment(self.inside(), self.amount(), status="failed")
        self.book_charge(failed, timedelta(seconds=45))
        self.plant(c.STATUS_MISMATCH if self.ids.reports_failed_payments else c.MISSING_AT_PROVIDER)
        for _ in range(2):
            # In the night's first half: a capture within the orphan grace (an hour) of the run is still in
            # flight, and the demo may run within an hour of the night's end.
            charge = self.payment(self.first_half(), self.amount(), booking_status="confirming")
            self.book_charge(charge, timedelta(seconds=45))
            self.plant(c.ORPHANED_CAPTURED_PAYMENT)

    def plant_timing_differences(self) -> None:
        """Records on one side of the night's edge whose other half is on the other side: not findings."""
        for seconds_before_end in (40, 90, 150):
            charge = self.payment(self.window.end - timedelta(seconds=seconds_before_end), self.amount())
            self.book_charge(charge, timedelta(seconds=seconds_before_end + 120))
        for seconds_before_start in (60, 200):
            charge = self.payment(self.window.start - timedelta(seconds=seconds_before_start), self.amount())
            self.book_charge(charge, timedelta(seconds=seconds_before_start + 30))
        earlier = self.payment(self.window.start - timedelta(hours=5), self.amount())
        self.book_charge(earlier, timedelta(seconds=30))
        refund = self.refund(earlier, self.window.start + timedelta(hours=2), round(earlier["amount"] * 0.5))
        self.book_refund(refund, earlier, timedelta(seconds=30))

    # ----- balance-transaction movements (``DemoWorld.balance_transactions``) -------------------------
    def balance_movements(self, plant: bool) -> None:
        """Disputes and a currency conversion, each booked as the PMS books it: a dispute of an earlier
        charge lost tonight (withdrawal and dispute fee), one opened four days ago and won tonight
        (reversal, and the dispute fee Stripe returns), and where the property's currency has a USD rate a
        foreign card presented in USD, settled in the property's currency and partly refunded. ``plant``:
        the reversal is never booked (``missing_in_ledger`` of a ``dispute_reversal``) and the foreign card's
        payment is booked at its settlement figure, 75 minor units short (``fx_difference``)."""
        lost_charge = self.payment(self.window.start - timedelta(days=3), self.amount())
        self.book_charge(lost_charge, timedelta(seconds=30))
        lost = dispute(self.next_id("du"), lost_charge, unix(self.inside()))
        won_charge = self.payment(self.window.start - timedelta(days=6), self.amount())
        self.book_charge(won_charge, timedelta(seconds=30))
        opened = unix(self.window.start - timedelta(days=4))
        won = dispute(
            self.next_id("du"), won_charge, opened, won_at=unix(self.inside()), returned_fee=DISPUTE_FEE_MINOR
        )
        for disputed, charge in ((lost, lost_charge), (won, won_charge)):
            self.world.store.disputes.append(disputed)
            unbooked = ("dispute_reversal",) if plant and disputed is won else ()
            self.book_dispute(disputed, charge["metadata"]["booking_id"], unbooked)
        if plant:
            self.plant(c.MISSING_IN_LEDGER)
        if self.prop.currency in USD_RATES:
            self.foreign_card_booking(USD_RATES[self.prop.currency], settled_short=75 if plant else None)
            if plant:
                self.plant(c.FX_DIFFERENCE)

    def book_dispute(self, disputed: dict[str, Any], booking_id: str, unbooked: tuple[str, ...] = ()) -> None:
        """The ledger's entries for each of a dispute's movements as it happens: the withdrawal and its fee
        under the dispute's id, the reversal under it too and a returned fee under the reversal's
        balance transaction (``providers/stripe/disputes.py``); the movements of ``unbooked`` kinds are
        left out (their fees are still booked)."""
        for transaction in disputed["balance_transactions"]:
            posted = datetime.fromtimestamp(transaction["created"], UTC) + timedelta(seconds=90)
            kind = transaction["reporting_category"]
            if kind not in unbooked:
                self.entry(kind, disputed["id"], transaction["amount"], posted, booking_id)
            fee_id = disputed["id"] if transaction["reporting_category"] == "dispute" else transaction["id"]
            if transaction["fee"]:
                self.entry("fee", fee_id, -transaction["fee"], posted + timedelta(seconds=1), booking_id)

    def foreign_card_booking(self, rate: float, settled_short: int | None = None) -> None:
        """A booking paid in USD and settled in the property's currency at ``rate``: the ledger books the
        payment and refund at the guest's USD figures and the fee in the settlement currency; with
        ``settled_short`` it books the payment in the settlement currency, that many minor units short."""
        charge = self.payment(self.inside(margin_s=4 * 3600), self.amount())
        charge["currency"] = "usd"
        for record in (self.world.bookings[-1], self.orders[order_key(charge)]):
            record["currency"] = "USD"
        if self.ids.payment_intents:
            self.world.store.payment_intents[-1]["currency"] = "usd"
        convert(charge, self.prop.currency.lower(), rate)
        if settled_short is None:
            self.book_charge(charge, timedelta(seconds=40), currency="USD")
        else:
            settled = charge["balance_transaction"]["amount"] - settled_short
            self.book_charge(charge, timedelta(seconds=40), amount=settled, currency=self.prop.currency)
        refund = self.refund(
            charge, datetime.fromtimestamp(charge["created"], UTC) + timedelta(hours=2), 2_000
        )
        settle_refund(refund, charge)
        posted = datetime.fromtimestamp(refund["created"], UTC) + timedelta(seconds=20)
        self.entry("refund", refund["id"], -refund["amount"], posted, charge["metadata"]["booking_id"], "USD")

    # ----- authorization holds (Stripe: PaymentIntents captured manually) -----------------------------
    def authorization_hold(
        self, authorized: datetime, capture_before: datetime, booking_status: str = "confirmed"
    ) -> dict[str, Any]:
        """A stay pre-authorized at check-in, not captured yet: the intent ``requires_capture``, its charge
        uncaptured with the card's ``capture_before``, the payment order ``authorized``."""
        charge = self.payment(authorized, self.amount(), booking_status=booking_status)
        charge.update(
            captured=False, amount_captured=0, balance_transaction=None, **_card_hold(capture_before)
        )
        if charge["payment_intent"] is not None:
            self.world.store.payment_intents[-1].update(
                status="requires_capture",
                amount_received=0,
                amount_capturable=charge["amount"],
                capture_method="manual",
            )
        self.orders[order_key(charge)].update(status="authorized", captured_at=None)
        return charge

    def captured_hold(self, authorized: datetime, captured: datetime, period: timedelta) -> dict[str, Any]:
        """A hold captured at checkout tonight and booked then: its charge dates from the check-in, its
        balance transaction (made by the capture) from tonight."""
        charge = self.payment(authorized, self.amount())
        charge.update(_card_hold(authorized + period))
        charge["balance_transaction"]["created"] = unix(captured)
        if charge["payment_intent"] is not None:
            self.world.store.payment_intents[-1]["capture_method"] = "manual"
        order = self.orders[order_key(charge)]
        order.update(captured_at=captured, updated_at=captured + timedelta(minutes=1))
        self.book_charge(charge, captured - authorized)
        return charge

    def plant_authorization_holds(self) -> None:
        """One hold captured at checkout, one open for days, one lapsing before the next night ends (the
        finding) and one of a cancelled booking (none), each lasting the provider's authorization period;
        none for a provider whose API shows no holds."""
        period = self.ids.authorization_period
        if period is None:
            return
        checkout = self.first_half()
        self.captured_hold(checkout - timedelta(days=2), checkout, period)
        # Open for days yet (extended where the card can): taken half a day before the night, or as late
        # as a hold of the provider's period needs to outlast the next two nights (Razorpay's three days:
        # tonight), so that neither's run judges it (a demo run after midnight serves tonight's world too).
        opened = max(self.window.start - timedelta(hours=12), self.window.start + OUTLASTS - period)
        self.authorization_hold(opened, opened + max(period, EXTENDED_AUTHORIZATION))
        lapses = self.window.end + timedelta(hours=5)
        self.authorization_hold(lapses - period, lapses)
        self.plant(c.AUTHORIZATION_EXPIRING)
        cancelled_lapses = lapses + timedelta(hours=1)
        self.authorization_hold(cancelled_lapses - period, cancelled_lapses, booking_status="cancelled")


EXTENDED_AUTHORIZATION = timedelta(days=30)  # Stripe's extended authorization for lodging
OUTLASTS = timedelta(days=3, hours=1)  # from a night's start, past the end of the two nights after it


def _card_hold(capture_before: datetime) -> dict[str, Any]:
    """A card charge's ``payment_method_details`` with the deadline of its capture."""
    return {"payment_method_details": {"type": "card", "card": {"capture_before": unix(capture_before)}}}


def _midnight(day: date) -> datetime:
    """Midnight UTC of ``day``: a Stripe payout's ``arrival_date``."""
    return datetime.combine(day, datetime.min.time(), tzinfo=UTC)
