"""The demo's PMS-style properties: a hotel night whose ledger is written as Apaleo, OPERA or Mews records it.

Why: a PMS's folio is more than card payments posted without the provider's id (``HotelNightBuilder``).
It holds money the provider never sees (cash, bank transfers, what an OTA collected and remits), spells
card types its own way, posts a refund as a negative payment, posts a card declined at the terminal and
reverses it on the folio, posts a group's one charge across the group's bookings, and now and then posts
one of two identical charges. What a careful hotel accountant expects of those: no finding for the money
the provider never saw, none for a reversal pair, a group split that sums exactly or a negative payment
matching a refund, and one ``missing_in_ledger``, with its money, for the charge nobody posted.

Each PMS is written through the adapter that fills the contract's columns (docs/design.md, "Ledgers as
PMSs keep them"): ``tender`` in the contract's vocabulary, in the case the adapter writes it (the pipeline
reads it case-insensitively), ``card_brand`` as the PMS spells the card type, ``reference``, and
``bookings.group_id``. The styles (``PMS_STYLES``), after the PMSs' public APIs:

- Apaleo (Finance API, folio payments): a payment's ``method`` is ``Cash``, ``BankTransfer``, a card
  (``VisaCredit``, ``MasterCard``, ``Amex``) or what an OTA collected (``BookingCom``, ``Airbnb``); a card
  payment carries the PSP reference, written to ``reference``, and a refund line names the original
  payment's PSP reference. Tenders written ``Cash``, ``BankTransfer``, ``OtaCollect``, ``Card``.
- OPERA Cloud (cashiering): card types as two-letter codes (``VA``, ``MC``, ``AX``) with the last four and
  the issuer's approval code; a card tender is recorded only where the card is (NULL otherwise: "not
  recorded", compared as before); a group's charge routed from the master folio to each member's; a
  payment declined at the terminal posted and reversed by the clerk. Tenders in capitals.
- Mews (Connector API, payments): a zero-decimal currency (JPY), credit card ``Type`` ``Visa``,
  ``MasterCard``, ``Amex``; external payments of ``Type`` ``Cash``, ``WireTransfer``, ``Reseller`` (an
  OTA's collection). Tenders in lower case with blanks (``bank transfer``).

Every style posts, beside the hotel night (its ordinary payments in the style's own mix, its split folio,
late posting and plants): its refunds as negative payments (a refund line, not a ``refund`` entry), one
payment of each tender the provider never sees, a declined terminal payment posted +X and reversed −X the
same night beside the provider's failed charge, a group's charge on its master booking posted across the
group's three bookings, and one of two identical charges (one booking, one card, one amount) posted. What
each matcher rule is to pair and the finding planted are counted as the hotel night's are.

Stripe only, as the hotel night is (``stripe/__init__.py`` names the properties).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

from recon_pipeline import categories as c
from recon_pipeline.properties import FEE_PER_PAYOUT, PropertyRow
from recon_pipeline.reconcile.matching.policy import BOOKING_AMOUNT, REFERENCE, SPLIT
from recon_pipeline.simulation.demo.hotel_night import HotelNightBuilder
from recon_pipeline.simulation.demo.night import NightBuilder, World, order_key
from recon_pipeline.simulation.host.cards import card_of
from recon_pipeline.simulation.interface import DemoWorld
from recon_pipeline.tenders import BANK_TRANSFER, CARD, CASH, OTA_COLLECT

# How a refund line names its money: the charge's PSP reference, the card, or the booking alone.
BY_REFERENCE: Final = "reference"
BY_CARD: Final = "card"
BY_BOOKING: Final = "booking"


@dataclass(frozen=True)
class PmsStyle:
    """How one PMS records a night's money (the module's docstring says each one's)."""

    name: str
    # How ordinary payments are posted: (``HotelNightBuilder`` style, cumulative share), tried in order.
    posting_styles: tuple[tuple[str, float], ...]
    reference_texts: tuple[str, ...]  # the free text naming a charge ({charge}, {intent}, {brand}, {last4})
    brands: Mapping[str, str]  # Stripe's card brand → the PMS's card type
    tenders: Mapping[str, str]  # the contract's tender → as the adapter writes it
    card_tender_with_card_only: bool  # a card tender recorded only where the card is (OPERA)
    refunds: str  # how a refund line names its money: BY_REFERENCE, BY_CARD or BY_BOOKING
    # The night's payments the provider never sees: (tender, the PMS's own name of the method).
    takings: tuple[tuple[str, str], ...]
    group_card: bool  # the group's master posting carries the card (OPERA's routing from the master folio)


APALEO: Final = PmsStyle(
    name="apaleo",
    posting_styles=(("keyed", 0.20), ("reference", 0.70), ("channel", 0.85), ("walk_in", 1.0)),
    reference_texts=("{charge}",),  # the PSP reference
    brands={"visa": "VisaCredit", "mastercard": "MasterCard", "amex": "Amex"},
    tenders={CARD: "Card", CASH: "Cash", BANK_TRANSFER: "BankTransfer", OTA_COLLECT: "OtaCollect"},
    card_tender_with_card_only=False,
    refunds=BY_REFERENCE,
    takings=(
        (CASH, "Cash"),
        (BANK_TRANSFER, "BankTransfer"),
        (OTA_COLLECT, "BookingCom"),
        (OTA_COLLECT, "Airbnb"),
    ),
    group_card=False,
)
OPERA: Final = PmsStyle(
    name="opera",
    posting_styles=(
        ("keyed", 0.05),
        ("folio", 0.60),
        ("channel", 0.70),
        ("terminal", 0.90),
        ("walk_in", 1.0),
    ),
    reference_texts=("CC {brand} XXXX{last4} {charge}",),
    brands={"visa": "VA", "mastercard": "MC", "amex": "AX"},
    tenders={CARD: "CARD", CASH: "CASH", BANK_TRANSFER: "BANK_TRANSFER", OTA_COLLECT: "OTA_COLLECT"},
    card_tender_with_card_only=True,
    refunds=BY_CARD,
    takings=((CASH, "CASH"), (BANK_TRANSFER, "WIRE"), (OTA_COLLECT, "EXPEDIA COLLECT")),
    group_card=True,
)
MEWS: Final = PmsStyle(
    name="mews",
    posting_styles=(
        ("keyed", 0.10),
        ("folio", 0.50),
        ("channel", 0.80),
        ("reference", 0.90),
        ("walk_in", 1.0),
    ),
    reference_texts=("{charge}", "Stripe {intent}"),  # the payment's ExternalIdentifier, or its notes
    brands={"visa": "Visa", "mastercard": "MasterCard", "amex": "Amex"},
    tenders={CARD: "card", CASH: "cash", BANK_TRANSFER: "bank transfer", OTA_COLLECT: "ota collect"},
    card_tender_with_card_only=False,
    refunds=BY_BOOKING,
    takings=((CASH, "Cash"), (BANK_TRANSFER, "WireTransfer"), (OTA_COLLECT, "Reseller")),
    group_card=False,
)
PMS_STYLES: Final = {style.name: style for style in (APALEO, OPERA, MEWS)}
# The matcher's rule that pairs a refund line with the provider's refund, per way of naming it.
REFUND_RULES: Final = {BY_REFERENCE: REFERENCE, BY_CARD: BOOKING_AMOUNT, BY_BOOKING: BOOKING_AMOUNT}
GROUP_SIZE: Final = 3


def pms_night_builder(
    style: str, world: World, prop: PropertyRow, night: date, rng: random.Random, ids: DemoWorld
) -> NightBuilder:
    """The night builder of a property whose PMS is ``style`` (a key of ``PMS_STYLES``)."""
    return PmsNightBuilder(world, prop, night, rng, ids, PMS_STYLES[style])


class PmsNightBuilder(HotelNightBuilder):
    """A hotel night written as ``style``'s PMS records it (see the module's docstring)."""

    def __init__(
        self,
        world: World,
        prop: PropertyRow,
        night: date,
        rng: random.Random,
        ids: DemoWorld,
        style: PmsStyle,
    ) -> None:
        super().__init__(world, prop, night, rng, ids)
        self.style = style
        self.posting_styles = style.posting_styles
        self.reference_texts = style.reference_texts

    def card_brand(self, brand: str) -> str:
        return self.style.brands.get(brand, brand.upper())

    # ----- the adapter's columns ---------------------------------------------------------------------
    def entry(
        self,
        kind: str,
        record_id: str | None,
        amount: int,
        posted: datetime,
        booking_id: str | None = None,
        currency: str | None = None,
    ) -> None:
        """As the hotel night's, a payment with the card tender as the adapter writes it (none where the
        PMS records a card tender only beside the card)."""
        before = len(self.world.ledger_entries)
        super().entry(kind, record_id, amount, posted, booking_id, currency)
        if kind == "payment" and len(self.world.ledger_entries) > before:
            card_tender = None if self.style.card_tender_with_card_only else self.style.tenders[CARD]
            self.world.ledger_entries[-1]["tender"] = card_tender

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
        super().posting(
            charge, posted, amount=amount, booking=booking, card=card, approval=approval, reference=reference
        )
        if card:
            self.world.ledger_entries[-1]["tender"] = self.style.tenders[CARD]

    def book_refund(self, refund: dict[str, Any], charge: dict[str, Any], delay: timedelta) -> None:
        """A refund as this PMS posts it: a negative payment on the booking's folio, naming the charge's
        PSP reference, or carrying its card, or the booking alone."""
        posted = datetime.fromtimestamp(refund["created"], UTC) + delay
        by = self.style.refunds
        self.posting(
            charge,
            posted,
            amount=-refund["amount"],
            booking=charge["metadata"]["booking_id"],
            card=by == BY_CARD,
            reference=charge["id"] if by == BY_REFERENCE else None,
        )
        self.expect(REFUND_RULES[by])

    def pay_out(self, charges: list[dict[str, Any]], refunds: list[dict[str, Any]]) -> None:
        """The hotel night's payout and its fee entry where the PMS books fees per payout; else the payout
        alone (the ledger books gross, no fee at all)."""
        if self.prop.fee_booking_mode == FEE_PER_PAYOUT:
            super().pay_out(charges, refunds)
        else:
            NightBuilder.pay_out(self, charges, refunds)

    # ----- the night ---------------------------------------------------------------------------------
    def build(self, bookings: int, plant: bool) -> None:
        """The hotel night, then this PMS's own shapes: the money the provider never sees, a reversed
        declined payment and a group's charge (none of them a finding), and with ``plant`` the identical
        charges of which one is posted."""
        super().build(bookings, plant)
        self.takings_the_provider_never_sees()
        self.declined_then_reversed()
        self.group_charge()
        if plant:
            self.identical_charges()

    def takings_the_provider_never_sees(self) -> None:
        """One payment of each of the style's other methods, on a booking of its own: counted per tender,
        never compared with the provider."""
        for tender, method in self.style.takings:
            paid = self.inside(margin_s=3600)
            booking = self.booking(paid, self.amount())
            amount, booking_id = booking["amount_minor"], booking["booking_id"]
            self.entry("payment", None, amount, paid + timedelta(minutes=5), booking_id)
            self.world.ledger_entries[-1].update(tender=self.style.tenders[tender], reference=method)

    def declined_then_reversed(self) -> None:
        """A card declined at the terminal (the provider's failed charge) that the clerk posted anyway and
        reversed minutes later: +X and −X on the booking and card."""
        failed = self.payment(self.inside(margin_s=3600), self.amount(), status="failed")
        created = datetime.fromtimestamp(failed["created"], UTC)
        booking = failed["metadata"]["booking_id"]
        self.posting(failed, created + timedelta(minutes=1), booking=booking, card=True)
        self.posting(
            failed, created + timedelta(minutes=3), amount=-failed["amount"], booking=booking, card=True
        )

    def group_charge(self) -> None:
        """One charge on a group's master booking, posted to each of the group's bookings (its share):
        one split across the group."""
        shares = [self.amount() for _ in range(GROUP_SIZE)]
        charge = self.payment(self.inside(margin_s=3600), sum(shares))
        group = self.next_id("grp")
        self.world.bookings[-1]["group_id"] = group  # the master booking, which the charge names
        created = datetime.fromtimestamp(charge["created"], UTC)
        members = [charge["metadata"]["booking_id"]]
        members += [self.booking(created, share, group)["booking_id"] for share in shares[1:]]
        for at, (booking, share) in enumerate(zip(members, shares, strict=True)):
            card = self.style.group_card and at == 0
            self.posting(
                charge, created + timedelta(minutes=2 + at), amount=share, booking=booking, card=card
            )
        self.expect(SPLIT)

    def identical_charges(self) -> None:
        """The guest's card charged twice for one stay, the same amount minutes apart, and one posting:
        the earlier pairs, the other is a payment nobody posted (its money certain, whichever it is)."""
        first = self.payment(self.inside(margin_s=3600), self.amount())
        created = datetime.fromtimestamp(first["created"], UTC)
        second = self.payment(created + timedelta(minutes=2), first["amount"])
        booking = first["metadata"]["booking_id"]
        self.world.bookings.pop()  # the second charge's stay is the first's
        second["metadata"]["booking_id"] = booking
        self.orders[order_key(second)]["booking_id"] = booking
        card = card_of(first)
        for charge in (first, second):
            charge["payment_method_details"] = {
                "type": "card",
                "card": {"brand": card.brand, "last4": card.last4, "fingerprint": card.fingerprint},
            }
        self.posting(first, created + timedelta(minutes=5), booking=booking, card=True)
        self.expect(BOOKING_AMOUNT)
        self.plant(c.MISSING_IN_LEDGER)

    def booking(self, created: datetime, amount: int, group: str | None = None) -> dict[str, Any]:
        """A confirmed booking the provider is not told of (paid otherwise, or a group member's)."""
        row = {
            "booking_id": self.next_id("bk"),
            "property_id": self.prop.property_id,
            "status": "confirmed",
            "amount_minor": amount,
            "currency": self.prop.currency,
            "created_at": created - timedelta(minutes=10),
            "updated_at": created + timedelta(minutes=1),
            "group_id": group,
        }
        self.world.bookings.append(row)
        return row
