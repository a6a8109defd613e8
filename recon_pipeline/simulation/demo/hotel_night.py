"""The hotel-style property's night: a PMS that posts most payments per booking without the provider's id.

``HotelNightBuilder`` (its docstring says what it writes and why); ``pms_ledgers.py`` writes named PMSs'
ledgers on top of it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

from recon_pipeline import categories as c
from recon_pipeline.reconcile.matching.policy import (
    BOOKING_AMOUNT,
    CARD_WINDOW,
    REFERENCE,
    SPLIT,
    STRONG_KEYS,
)
from recon_pipeline.simulation.demo.night import NightBuilder
from recon_pipeline.simulation.host.cards import card_of

# How an ordinary payment is posted: (style, cumulative share of the night's payments), tried in order.
HOTEL_STYLES: Final = (
    ("keyed", 0.15),  # the provider's id, as the keyed properties post everything: the diff's exact id
    ("folio", 0.60),  # booking, amount, card and approval code: booking_amount
    ("channel", 0.72),  # booking and amount alone: booking_amount
    ("reference", 0.82),  # the charge's (or its intent's) id inside free text only: reference
    ("terminal", 0.92),  # card and approval code, no booking: strong_keys
    ("walk_in", 1.0),  # card alone, no booking: card_window
)
HOTEL_STYLE_RULES: Final = {
    "folio": BOOKING_AMOUNT,
    "channel": BOOKING_AMOUNT,
    "reference": REFERENCE,
    "terminal": STRONG_KEYS,
    "walk_in": CARD_WINDOW,
}
HOTEL_REFERENCE_TEXTS: Final = (
    "Stripe {charge}",
    "CC {brand} {last4} ref {charge}",
    "deposit, intent {intent}",
)
AMOUNT_OFF_MINOR: Final = 500  # the planted amount mismatch: 5.00 short


class HotelNightBuilder(NightBuilder):
    """One hotel-style property-night: a PMS that posts most payments per booking without the provider's id.

    Why: the other demo properties book every movement under the provider's id, so the diff pairs them
    by id alone and the matcher (``reconcile/matching``) has nothing to do. A hotel's PMS is rarely so
    kind: its folio records the card as brand + last four and the issuer's approval code, a channel
    manager posts by booking alone, a clerk types the charge id into a free-text reference, a walk-in sale
    has no booking, a folio is split, a posting lands on the next night. This builder writes such a night
    and counts in ``World.expected_matches`` what each matching rule is to pair, so that ``recon demo``
    (and its tests) can check that the matcher pairs exactly those and that only planted findings remain.

    Built on the keyed night: the same payments, refunds, timing differences, holds, disputes,
    conversion and payouts, booked as before (keyed); what differs:

    - ordinary payments are posted the hotel's way (``HOTEL_STYLES``): keyed by the integration; per
      booking with the card and approval code (the folio); per booking alone (a channel manager); with
      the charge or payment intent id only inside ``reference``; card and approval code without a booking
      (a terminal sale); card alone without a booking (a walk-in, paired by card, amount and time);
    - one split folio (two postings by booking for one charge) and one late posting (the night after);
    - fees are booked per payout (``fee_booking`` per_payout): no fee entry per movement, one per payout
      under its id, compared by the payouts asset (``payouts/fees.py``), never by the night's diff;
    - planted instead of the keyed night's discrepancies: a payment nobody posted, a posting the provider
      never saw (a booking nobody paid), an amount off by 5.00 (paired by the approval code, so one
      ``amount_mismatch``), and a look-alike pair: a payment nobody posted and a posting of the same card
      and amount on another booking, which must not be paired (two findings, no match).

    Stripe only (``stripe/__init__.py`` names the property): the card keys every flavour serves are the
    same (``host/cards.py``), but the keyed night it builds on plants Stripe-only money movements too.
    The demo's PMS-style properties (``pms_ledgers.py``) change how it posts: ``posting_styles``,
    ``reference_texts`` and ``card_brand``.
    """

    posting_styles: tuple[tuple[str, float], ...] = HOTEL_STYLES
    reference_texts: tuple[str, ...] = HOTEL_REFERENCE_TEXTS

    def card_brand(self, brand: str) -> str:
        """The card's brand as this PMS writes it (Stripe's ``visa`` as ``VISA``)."""
        return brand.upper()

    # ----- the hotel's postings ----------------------------------------------------------------------
    def posting(
        self,
        charge: dict[str, Any],
        posted: datetime,
        *,
        amount: int | None = None,
        booking: str | None = None,
        card: bool = False,
        approval: bool = False,
        reference: str | None = None,
    ) -> None:
        """A payment entry naming no provider id, with the keys the PMS kept: the card as its folio writes
        it (brand in capitals, last four), the approval code, a free-text reference."""
        self.entry("payment", None, charge["amount"] if amount is None else amount, posted, booking)
        known = card_of(charge)
        self.world.ledger_entries[-1].update(
            card_brand=self.card_brand(known.brand) if card else None,
            card_last4=known.last4 if card else None,
            approval_code=known.approval_code if approval else None,
            reference=reference,
        )

    def expect(self, rule: str) -> None:
        self.world.expected_matches[(self.prop.property_id, self.night, rule)] += 1

    def ordinary_booking(self) -> dict[str, Any]:
        charge = self.payment(self.inside(), self.amount())
        delay = timedelta(seconds=self.rng.randrange(30, 300))
        posted = datetime.fromtimestamp(charge["created"], UTC) + delay
        roll = self.rng.random()
        style = next(name for name, share in self.posting_styles if roll < share)
        booking = charge["metadata"]["booking_id"]
        if style == "keyed":
            self.book_charge(charge, delay)
        elif style == "folio":
            self.posting(charge, posted, booking=booking, card=True, approval=True)
        elif style == "channel":
            self.posting(charge, posted, booking=booking)
        elif style == "reference":
            text = self.rng.choice(self.reference_texts)
            card = card_of(charge)
            said = text.format(
                charge=charge["id"],
                intent=_order_id(charge),
                brand=self.card_brand(card.brand),
                last4=card.last4,
            )
            self.posting(charge, posted, reference=said)
        elif style == "terminal":
            self.posting(charge, posted, card=True, approval=True)
        else:
            self.posting(charge, posted, card=True)
        if style in HOTEL_STYLE_RULES:
            self.expect(HOTEL_STYLE_RULES[style])
        if self.rng.random() < 0.10:  # a partial refund, booked under its id as the keyed night's are
            self.refund_in_night(charge, round(charge["amount"] * 0.3))
        return charge

    def plant_timing_differences(self) -> None:
        """The keyed night's, then a split folio and a late posting: paired, not findings."""
        super().plant_timing_differences()
        split = self.payment(self.inside(margin_s=3600), self.amount())
        created = datetime.fromtimestamp(split["created"], UTC)
        room = split["amount"] * 3 // 5 // 50 * 50
        booking = split["metadata"]["booking_id"]
        self.posting(split, created + timedelta(minutes=2), amount=room, booking=booking)
        self.posting(split, created + timedelta(minutes=3), amount=split["amount"] - room, booking=booking)
        self.expect(SPLIT)
        late = self.payment(self.window.end - timedelta(minutes=40), self.amount())
        self.posting(
            late,
            self.window.end + timedelta(minutes=50),
            booking=late["metadata"]["booking_id"],
            card=True,
            approval=True,
        )
        self.expect(BOOKING_AMOUNT)

    def plant_discrepancies(self, charges: list[dict[str, Any]]) -> None:
        """The hotel's own discrepancies (see the module's docstring) instead of the keyed night's."""
        self.payment(self.inside(), self.amount())  # nobody posted it
        self.plant(c.MISSING_IN_LEDGER)
        phantom = {"id": self.next_id("ch_phantom"), "amount": self.amount(), "status": "succeeded"}
        self.posting(phantom, self.inside(), booking=self.next_id("bk"), card=True)  # nobody paid it
        self.plant(c.MISSING_AT_PROVIDER)
        short = self.payment(self.inside(), self.amount())
        posted = datetime.fromtimestamp(short["created"], UTC) + timedelta(minutes=4)
        self.posting(
            short,
            posted,
            amount=short["amount"] - AMOUNT_OFF_MINOR,
            booking=short["metadata"]["booking_id"],
            card=True,
            approval=True,
        )
        self.plant(c.AMOUNT_MISMATCH)
        self.expect(STRONG_KEYS)  # the approval code pairs it; the diff states the 5.00
        guest = self.payment(self.inside(), self.amount())  # nobody posted it...
        posted = datetime.fromtimestamp(guest["created"], UTC) + timedelta(minutes=6)
        self.posting(guest, posted, booking=self.next_id("bk"), card=True)  # ...but its look-alike
        self.plant(c.MISSING_IN_LEDGER)
        self.plant(c.MISSING_AT_PROVIDER)

    # ----- fees per payout ---------------------------------------------------------------------------
    def entry(
        self,
        kind: str,
        record_id: str | None,
        amount: int,
        posted: datetime,
        booking_id: str | None = None,
        currency: str | None = None,
    ) -> None:
        """As the keyed night's, but no fee per movement: this PMS books fees per payout."""
        if kind != "fee":
            super().entry(kind, record_id, amount, posted, booking_id, currency)

    def pay_out(self, charges: list[dict[str, Any]], refunds: list[dict[str, Any]]) -> None:
        """The keyed night's payout, and one fee entry under its id for the fees its charges paid."""
        before = len(self.world.store.payouts)
        super().pay_out(charges, refunds)
        if len(self.world.store.payouts) == before:
            return
        payout = self.world.store.payouts[-1]
        fees = sum(
            charge["balance_transaction"]["fee"]
            for charge in charges
            if isinstance(charge["balance_transaction"], dict)
        )
        super().entry("fee", payout["id"], -fees, self.window.end + timedelta(minutes=1))


def _order_id(charge: dict[str, Any]) -> str:
    """The id a PMS may have been handed instead of the charge's: its payment intent, else the charge."""
    return str(charge["payment_intent"] or charge["id"])
