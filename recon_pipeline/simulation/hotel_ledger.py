"""A labelled world of hotel ledgers kept the way hotels keep them, with its ground truth (issue 26).

Why it exists: precision is measured, not hoped. A PMS posts payments per booking, often from a terminal
or a channel manager that never hands it the provider's id; it records the card as brand + last four and
the issuer's approval code, splits folios, posts late, and books fees per charge, per payout or not at
all. Each property-night generated here is a pair of pure frames (the provider-record frame with its
optional card columns, and the ledger frame with ``card_brand``, ``card_last4``, ``approval_code`` and
``reference``) together with what a perfect reconciliation says about them:

- ``groups``: the records and entries that belong together (one charge and its posting, a split folio, a
  pair of interchangeable charges and postings), whatever rule finds them; their amounts balance;
- ``planted``: the real discrepancies, each as the ``(category, record_key)`` of the finding that states
  it, the other findings that state it as well (either of two identical charges, say) and the ids involved;
- ``fees_elsewhere``: provider fee rows of a hotel that books fees per payout or not at all (not compared
  per movement), ``unsettled`` records (failed charges: nobody books them) and ``adjacent`` entries (the
  neighbouring nights' postings of other bookings, loaded as the pipeline loads them, ``in_night`` False).

The mix per property-night: keyed postings, postings by booking only, by booking with card and approval
code, with the id only inside ``reference`` text, terminal sales with no booking on either side (card and
time only), split folios both ways, interchangeable pairs, look-alikes (same card and amount, different
bookings), late postings on the next night, refunds, failed charges and the three fee bookings. Planted:
payments nobody posted, postings the provider never saw, amounts off, look-alikes that must not be paired,
and one of two identical charges unposted. Everything follows from ``(property_nights, seed)``.

Not generated (yet): an unkeyed posting of tonight for an earlier night's charge (it needs the earlier
night's match, ``KnownMatch``), per-payout fee entries (the payout's, compared by ``reconcile/fees.py``).
Part of the simulated world (floor 6): production never imports it; ``benchmarks/matching.py`` scores a
reconciliation over it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Final

import pandas as pd

from recon_pipeline.categories import AMOUNT_MISMATCH, MISSING_AT_PROVIDER, MISSING_IN_LEDGER
from recon_pipeline.frames import typed_frame
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS

FEE_BOOKINGS: Final = ("per_movement", "per_payout", "none")
CARD_COLUMNS: Final = ("card_brand", "card_last4", "approval_code")
HOTEL_PROVIDER_COLUMNS: Final[dict[str, str]] = PROVIDER_RECORD_COLUMNS | dict.fromkeys(
    CARD_COLUMNS, "object"
)
HOTEL_LEDGER_COLUMNS: Final[dict[str, str]] = LEDGER_RECORD_COLUMNS | dict.fromkeys(
    (*CARD_COLUMNS, "reference"), "object"
)
FIRST_NIGHT: Final = date(2026, 10, 1)

# How a booking's payments are posted (weights per booking), then the discrepancies planted per night.
STYLES: Final[dict[str, float]] = {
    "keyed": 0.30,
    "keyed_late": 0.04,
    "booking": 0.17,
    "booking_late": 0.03,
    "strong": 0.10,
    "strong_no_booking": 0.04,
    "reference": 0.06,
    "card_window": 0.04,
    "split_postings": 0.04,
    "split_charges": 0.03,
    "identical_pair": 0.03,
    "look_alike_pair": 0.03,
    "walk_in_twins": 0.02,
    "deposit_earlier": 0.03,
    "failed": 0.02,
}
PLANTS: Final[dict[str, float]] = {  # expected plants of each label per property-night
    "unposted_payment": 0.25,
    "phantom_posting": 0.12,
    "amount_off": 0.12,
    "look_alike": 0.08,
    "identical_short": 0.04,
}
_CURRENCIES: Final = ("EUR", "USD", "GBP", "JPY", "CHF")
_FEE_WEIGHTS: Final = (0.5, 0.3, 0.2)
_BRANDS: Final = ("visa", "mastercard", "amex")
_CODE_LETTERS: Final = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
_NIGHT_CUTOFF: Final = timedelta(hours=4)  # the night runs from 04:00 UTC to 04:00 UTC
_REFUND_SHARE: Final = 0.08


@dataclass(frozen=True)
class Group:
    """Provider records (``"<id>:<kind>"``) and ledger entries that belong together; sums agree."""

    style: str
    records: tuple[str, ...]
    entries: tuple[str, ...]
    amount_minor: int
    currency: str


@dataclass(frozen=True)
class Planted:
    """A real discrepancy: the finding that states it, any other that states it as well, the ids involved.

    ``records`` and ``entries`` are the rows it concerns (a finding naming one of them in an ambiguity or
    a suggestion points a person at it); none of them is matched money.
    """

    label: str
    category: str
    key: str
    accepted: frozenset[tuple[str, str]]
    records: tuple[str, ...]
    entries: tuple[str, ...]


@dataclass(frozen=True)
class HotelNight:
    """One property-night: the frames a reconciliation reads and what a perfect one says about them."""

    property_id: str
    night: date
    currency: str
    fee_booking: str
    provider_records: pd.DataFrame  # HOTEL_PROVIDER_COLUMNS
    ledger_records: pd.DataFrame  # HOTEL_LEDGER_COLUMNS, in-night and adjacent-night entries
    provider_elsewhere: pd.DataFrame  # HOTEL_PROVIDER_COLUMNS: the earlier-night records late keyed ids name
    groups: tuple[Group, ...]
    planted: tuple[Planted, ...]
    fees_elsewhere: tuple[str, ...]  # fee record keys not compared per movement (per_payout, none)
    unsettled: tuple[str, ...]  # record keys of failed charges
    adjacent: tuple[str, ...]  # entry ids of other nights' postings loaded around this one

    @property
    def matched_records(self) -> frozenset[str]:
        """Record keys a perfect reconciliation leaves alone (matched, or fees booked elsewhere)."""
        return frozenset(key for group in self.groups for key in group.records) | frozenset(
            self.fees_elsewhere
        )

    @property
    def matched_entries(self) -> frozenset[str]:
        """Entry ids a perfect reconciliation leaves alone (matched, or another night's)."""
        return frozenset(entry for group in self.groups for entry in group.entries) | frozenset(self.adjacent)


@dataclass(frozen=True)
class HotelWorld:
    nights: tuple[HotelNight, ...]
    seed: int

    def planted_by_label(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for night in self.nights:
            for plant in night.planted:
                counts[plant.label] = counts.get(plant.label, 0) + 1
        return dict(sorted(counts.items()))

    def rows(self) -> tuple[int, int]:
        """Provider records and ledger entries in all nights."""
        return (
            sum(len(night.provider_records) for night in self.nights),
            sum(len(night.ledger_records) for night in self.nights),
        )


def build_hotel_world(
    property_nights: int, seed: int = 1, nights_per_property: int = 10, bookings: tuple[int, int] = (8, 30)
) -> HotelWorld:
    """``property_nights`` labelled nights, ``nights_per_property`` consecutive ones per property; the
    same arguments give the same world (ids carry the night's serial, so no two nights share one)."""
    if property_nights < 1 or nights_per_property < 1:
        raise ValueError("property_nights and nights_per_property must be positive")
    world = random.Random(seed)
    shapes: list[tuple[str, str]] = []
    nights = []
    for serial in range(property_nights):
        index, offset = divmod(serial, nights_per_property)
        while len(shapes) <= index:
            currency = _CURRENCIES[len(shapes) % len(_CURRENCIES)]
            shapes.append((currency, world.choices(FEE_BOOKINGS, _FEE_WEIGHTS)[0]))
        currency, fee_booking = shapes[index]
        night_rng = random.Random(seed * 1_000_003 + serial)
        builder = _NightBuilder(
            night_rng,
            serial,
            f"hotel{index:04d}",
            FIRST_NIGHT + timedelta(days=offset),
            currency,
            fee_booking,
        )
        nights.append(builder.build(night_rng.randint(*bookings)))
    return HotelWorld(tuple(nights), seed)


# --- one night ---------------------------------------------------------------------------------------


@dataclass
class _Card:
    brand: str
    last4: str


@dataclass
class _NightBuilder:
    rng: random.Random
    serial: int
    property_id: str
    night: date
    currency: str
    fee_booking: str
    records: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)
    fees_elsewhere: list[str] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)
    adjacent: list[str] = field(default_factory=list)
    counter: int = 0

    @property
    def start(self) -> pd.Timestamp:
        return pd.Timestamp(self.night, tz="UTC") + _NIGHT_CUTOFF

    @property
    def per_movement(self) -> bool:
        return self.fee_booking == "per_movement"

    def build(self, bookings: int) -> HotelNight:
        styles = list(STYLES)
        for style in self.rng.choices(styles, [STYLES[s] for s in styles], k=bookings):
            getattr(self, f"_style_{style}")()
        for label, expected in PLANTS.items():
            for _ in range(_count(self.rng, expected)):
                getattr(self, f"_plant_{label}")()
        for _ in range(self.rng.randint(0, 4)):
            self._adjacent_noise()
        return HotelNight(
            property_id=self.property_id,
            night=self.night,
            currency=self.currency,
            fee_booking=self.fee_booking,
            provider_records=_frame(self.records, HOTEL_PROVIDER_COLUMNS, "created_at"),
            ledger_records=_frame(self.entries, HOTEL_LEDGER_COLUMNS, "posted_at"),
            provider_elsewhere=_frame([], HOTEL_PROVIDER_COLUMNS, "created_at"),
            groups=tuple(self.groups),
            planted=tuple(self.planted),
            fees_elsewhere=tuple(self.fees_elsewhere),
            unsettled=tuple(self.unsettled),
            adjacent=tuple(self.adjacent),
        )

    # --- ids, amounts, cards, times ------------------------------------------------------------------

    def _id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.serial:06d}x{self.counter:03d}"

    def _booking(self) -> str:
        return self._id("BK").replace("_", "-")

    def _amount(self) -> int:
        """Hotel amounts: whole multiples of 5.00 (100 yen), so that equal amounts happen as they do."""
        if self.currency == "JPY":
            return self.rng.randint(30, 1800) * 100
        return self.rng.randint(4, 300) * 500

    def _fee(self, amount: int) -> int:
        fixed = 0 if self.currency == "JPY" else 25
        return -(amount * 14 // 1000 + fixed)

    def _card(self) -> _Card:
        return _Card(self.rng.choice(_BRANDS), f"{self.rng.randint(0, 9999):04d}")

    def _approval(self) -> str:
        return "".join(self.rng.choices(_CODE_LETTERS, k=6))

    def _created(self) -> pd.Timestamp:
        return self.start + timedelta(minutes=self.rng.randint(60, 21 * 60))

    # --- rows ----------------------------------------------------------------------------------------

    def _charge(
        self,
        booking: str | None,
        amount: int | None = None,
        card: _Card | None = None,
        *,
        settled: bool = True,
        created: pd.Timestamp | None = None,
    ) -> dict[str, Any]:
        """A payment record and, when it settled, its fee row; returns the payment row."""
        charge_id = self._id("ch")
        card = card or self._card()
        row = {
            "provider_record_id": charge_id,
            "kind": "payment",
            "charge_id": charge_id,
            "property_id": self.property_id,
            "booking_id": booking,
            "payment_intent_id": charge_id.replace("ch_", "pi_"),
            "amount_minor": amount if amount is not None else self._amount(),
            "currency": self.currency,
            "status": "succeeded" if settled else "failed",
            "settled": settled,
            "created_at": created if created is not None else self._created(),
            "settlement_amount_minor": None,
            "settlement_currency": None,
            "card_brand": card.brand,
            "card_last4": card.last4,
            "approval_code": self._approval() if settled else None,
        }
        self.records.append(row)
        if settled:
            self.records.append(row | {"kind": "fee", "amount_minor": self._fee(row["amount_minor"])})
            if not self.per_movement:
                self.fees_elsewhere.append(f"{charge_id}:fee")
        return row

    def _fee_record(self, charge: dict[str, Any]) -> dict[str, Any]:
        """The fee row of a charge, as far as the ground truth needs it (its key and amount)."""
        return {
            "provider_record_id": charge["provider_record_id"],
            "kind": "fee",
            "amount_minor": self._fee(charge["amount_minor"]),
        }

    def _refund(self, charge: dict[str, Any]) -> dict[str, Any]:
        share = self.rng.choice((0.25, 0.5, 1.0))
        amount = -max(100, int(charge["amount_minor"] * share) // 100 * 100)
        row = charge | {
            "provider_record_id": self._id("re"),
            "kind": "refund",
            "amount_minor": amount,
            "created_at": charge["created_at"] + timedelta(minutes=self.rng.randint(5, 90)),
            "approval_code": None,
        }
        self.records.append(row)
        return row

    def _post(
        self,
        record: dict[str, Any],
        *,
        keyed: bool = False,
        booking: bool = True,
        card: bool = False,
        approval: bool = False,
        reference: str | None = None,
        late: bool = False,
        amount: int | None = None,
        kind: str | None = None,
    ) -> str:
        """A ledger entry posting ``record`` (or its fee row, ``kind`` fee) with the keys a PMS kept."""
        entry_id = self._id("le")
        kind = kind or record["kind"]
        if amount is None:
            amount = self._fee(record["amount_minor"]) if kind == "fee" else record["amount_minor"]
        posted = record["created_at"] + timedelta(minutes=self.rng.randint(1, 120))
        if late:
            posted = self.start + timedelta(days=1, minutes=self.rng.randint(30, 360))
        self.entries.append(
            {
                "entry_id": entry_id,
                "property_id": self.property_id,
                "booking_id": record["booking_id"] if booking else None,
                "provider_record_id": record["provider_record_id"] if keyed else None,
                "kind": kind,
                "amount_minor": amount,
                "currency": self.currency,
                "posted_at": posted,
                "in_night": not late,
                "card_brand": record["card_brand"] if card else None,
                "card_last4": record["card_last4"] if card else None,
                "approval_code": record["approval_code"] if approval else None,
                "reference": reference,
            }
        )
        return entry_id

    def _posted_with_fee(self, style: str, record: dict[str, Any], **keys: Any) -> None:
        """Post a record as one group, and under per_movement its fee the same way as a group of its own."""
        entry = self._post(record, **keys)
        self._group(style, [record], [entry])
        if self.per_movement and record["kind"] == "payment":
            fee = self._post(record, kind="fee", **keys)
            self._group(style, [self._fee_record(record)], [fee])

    def _group(self, style: str, records: Sequence[dict[str, Any]], entries: Sequence[str]) -> None:
        amount = sum(int(row["amount_minor"]) for row in records)
        self.groups.append(
            Group(style, tuple(_key(row) for row in records), tuple(entries), amount, self.currency)
        )

    def _plant(
        self,
        label: str,
        category: str,
        key: str,
        records: Iterable[str] = (),
        entries: Iterable[str] = (),
        also: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.planted.append(
            Planted(label, category, key, frozenset({(category, key), *also}), tuple(records), tuple(entries))
        )

    def _maybe_refund(self, charge: dict[str, Any], **keys: Any) -> None:
        if self.rng.random() < _REFUND_SHARE:
            refund = self._refund(charge)
            self._group("refund", [refund], [self._post(refund, **keys)])

    # --- posting styles (one booking each) -----------------------------------------------------------

    def _style_keyed(self) -> None:
        """Keyed; a refund of it is keyed too, or posted by booking alone (refunded at the terminal)."""
        charge = self._charge(self._booking())
        self._posted_with_fee("keyed", charge, keyed=True, card=self.rng.random() < 0.5)
        self._maybe_refund(charge, keyed=self.rng.random() < 0.5)

    def _style_keyed_late(self) -> None:
        self._posted_with_fee("keyed_late", self._charge(self._booking()), keyed=True, late=True)

    def _style_booking(self) -> None:
        booking = self._booking()
        for _ in range(self.rng.choice((1, 1, 1, 2))):  # a second charge of another amount, sometimes
            charge = self._charge(booking, self._distinct_amount(booking))
            self._posted_with_fee("booking", charge)
            self._maybe_refund(charge)

    def _style_booking_late(self) -> None:
        self._posted_with_fee("booking_late", self._charge(self._booking()), late=True)

    def _style_strong(self) -> None:
        self._posted_with_fee("strong", self._charge(self._booking()), card=True, approval=True)

    def _style_strong_no_booking(self) -> None:
        """The provider never got the booking (a terminal); the PMS did, with card and approval code."""
        charge = self._charge(None)
        charge_booking = self._booking()
        keys: dict[str, Any] = {"card": True, "approval": True, "booking": False}
        entry = self._post(charge | {"booking_id": charge_booking}, booking=True, card=True, approval=True)
        self._group("strong_no_booking", [charge], [entry])
        if self.per_movement:
            self._group(
                "strong_no_booking", [self._fee_record(charge)], [self._post(charge, kind="fee", **keys)]
            )

    def _style_reference(self) -> None:
        charge = self._charge(self._booking())
        text = self.rng.choice(
            (
                "Stripe {id} / folio {booking}",
                "CC {brand} {last4} ref {id}",
                "{id}",
                "deposit {booking} (psp {id})",
            )
        )
        reference = text.format(
            id=charge["provider_record_id"],
            booking=charge["booking_id"],
            brand=charge["card_brand"].upper(),
            last4=charge["card_last4"],
        )
        self._posted_with_fee("reference", charge, reference=reference)

    def _style_card_window(self) -> None:
        """A walk-in sale: no booking on either side, card and time only."""
        self._posted_with_fee("card_window", self._charge(None), booking=False, card=True)

    def _style_split_postings(self) -> None:
        """One charge, posted as N parts of the folio (room, extras...)."""
        charge = self._charge(self._booking())
        parts = self.rng.randint(2, 3)
        amounts = _split_amount(self.rng, charge["amount_minor"], parts, self.currency)
        entries = [self._post(charge, amount=amount) for amount in amounts]
        self._group("split_postings", [charge], entries)
        if self.per_movement:
            self._group("split_postings", [self._fee_record(charge)], [self._post(charge, kind="fee")])

    def _style_split_charges(self) -> None:
        """Deposit and balance charged apart, posted as one folio payment."""
        booking = self._booking()
        card = self._card()
        total = self._amount() * 2
        amounts = _split_amount(self.rng, total, self.rng.randint(2, 3), self.currency)
        charges = [self._charge(booking, amount, card) for amount in amounts]
        entry = self._post(charges[0], amount=total)
        self._group("split_charges", charges, [entry])
        if self.per_movement:
            for charge in charges:
                self._group("split_charges", [self._fee_record(charge)], [self._post(charge, kind="fee")])

    def _style_identical_pair(self) -> None:
        """Two charges of one amount on one booking, posted twice by booking alone: interchangeable."""
        booking, amount, card = self._booking(), self._amount(), self._card()
        charges = [self._charge(booking, amount, card) for _ in range(2)]
        entries = [self._post(charge) for charge in charges]
        self._group("identical_pair", charges, entries)
        if self.per_movement:
            fees = [self._post(charge, kind="fee") for charge in charges]
            self._group("identical_pair", [self._fee_record(charge) for charge in charges], fees)

    def _style_look_alike_pair(self) -> None:
        """One card, one amount, two bookings (a guest paying two rooms): each posted on its booking."""
        amount, card = self._amount(), self._card()
        for _ in range(2):
            self._posted_with_fee("look_alike_pair", self._charge(self._booking(), amount, card), card=True)

    def _style_walk_in_twins(self) -> None:
        """Two walk-in sales of one amount on two cards, no booking anywhere: the card tells them apart."""
        amount = self._amount()
        for _ in range(2):
            self._posted_with_fee("walk_in_twins", self._charge(None, amount), booking=False, card=True)

    def _style_deposit_earlier(self) -> None:
        """A booking whose deposit was charged and posted the night before (that posting is loaded with
        this night's ledger, ``in_night`` False) and whose balance is charged and posted tonight."""
        booking = self._booking()
        balance = self._charge(booking, self._amount())
        deposit = balance | {"provider_record_id": self._id("ch"), "amount_minor": self._amount()}
        self._post(deposit, late=True)
        self.entries[-1]["posted_at"] = self.start - timedelta(minutes=self.rng.randint(30, 600))
        self.adjacent.append(self.entries[-1]["entry_id"])
        self._posted_with_fee("deposit_earlier", balance)

    def _style_failed(self) -> None:
        charge = self._charge(self._booking(), settled=False)
        self.unsettled.append(_key(charge))

    def _distinct_amount(self, booking: str) -> int:
        taken = {row["amount_minor"] for row in self.records if row["booking_id"] == booking}
        while (amount := self._amount()) in taken:
            pass
        return amount

    # --- planted discrepancies -----------------------------------------------------------------------

    def _plant_unposted_payment(self) -> None:
        charge = self._charge(self._booking() if self.rng.random() < 0.8 else None)
        self._plant_unposted(charge, "unposted_payment")

    def _plant_unposted(
        self, charge: dict[str, Any], label: str, also: Sequence[dict[str, Any]] = ()
    ) -> None:
        """A charge nobody posted: its payment is missing, and under per_movement its fee too."""
        rows = [charge, *also]
        self._plant(
            label,
            MISSING_IN_LEDGER,
            _key(charge),
            records=[_key(row) for row in rows],
            also=[(MISSING_IN_LEDGER, _key(row)) for row in rows],
        )
        if self.per_movement:
            fees = [self._fee_record(row) for row in rows]
            self._plant(
                label,
                MISSING_IN_LEDGER,
                _key(fees[0]),
                records=[_key(row) for row in fees],
                also=[(MISSING_IN_LEDGER, _key(row)) for row in fees],
            )

    def _plant_phantom_posting(self) -> None:
        """A posting the provider never saw: by booking (and card, sometimes), or under an id it lacks."""
        card = self._card()
        ghost = {
            "provider_record_id": self._id("ch"),
            "kind": "payment",
            "booking_id": self._booking(),
            "amount_minor": self._amount(),
            "created_at": self._created(),
            "card_brand": card.brand,
            "card_last4": card.last4,
            "approval_code": None,
        }
        if self.rng.random() < 0.25:
            entry = self._post(ghost, keyed=True)
            self._plant("phantom_posting", MISSING_AT_PROVIDER, _key(ghost), entries=[entry])
        else:
            entry = self._post(ghost, card=self.rng.random() < 0.5)
            self._plant("phantom_posting", MISSING_AT_PROVIDER, f"entry:{entry}", entries=[entry])

    def _plant_amount_off(self) -> None:
        """Posted with an amount off by a few units: keyed, or by booking with card and approval code."""
        charge = self._charge(self._booking())
        step = 1 if self.currency == "JPY" else 100
        amount = charge["amount_minor"] + self.rng.choice((-1, 1)) * self.rng.randint(1, 20) * step * 5
        keys: dict[str, Any] = (
            {"keyed": True} if self.rng.random() < 0.4 else {"card": True, "approval": True}
        )
        entry = self._post(charge, amount=amount, **keys)
        self._plant("amount_off", AMOUNT_MISMATCH, _key(charge), records=[_key(charge)], entries=[entry])
        if self.per_movement:
            self._group("amount_off", [self._fee_record(charge)], [self._post(charge, kind="fee", **keys)])

    def _plant_look_alike(self) -> None:
        """A charge nobody posted, and a posting the provider never saw of the same card and amount on
        another booking: the two must not be paired (their bookings are known and differ)."""
        charge = self._charge(self._booking())
        posting = charge | {"provider_record_id": None, "booking_id": self._booking(), "approval_code": None}
        entry = self._post(posting, card=True)
        self._plant_unposted(charge, "look_alike")
        self._plant("look_alike", MISSING_AT_PROVIDER, f"entry:{entry}", entries=[entry])

    def _plant_identical_short(self) -> None:
        """Two charges of one amount on one booking, one posting: one of them is unposted, either."""
        booking, amount, card = self._booking(), self._amount(), self._card()
        first, second = (self._charge(booking, amount, card) for _ in range(2))
        entry = self._post(first)
        fee_entry = self._post(first, kind="fee") if self.per_movement else None
        label = "identical_short"
        self.planted.append(
            Planted(
                label,
                MISSING_IN_LEDGER,
                _key(second),
                frozenset((MISSING_IN_LEDGER, _key(row)) for row in (first, second)),
                (_key(first), _key(second)),
                (entry,),
            )
        )
        if fee_entry is not None:
            fees = [self._fee_record(first), self._fee_record(second)]
            self.planted.append(
                Planted(
                    label,
                    MISSING_IN_LEDGER,
                    _key(fees[1]),
                    frozenset((MISSING_IN_LEDGER, _key(row)) for row in fees),
                    tuple(_key(row) for row in fees),
                    (fee_entry,),
                )
            )

    # --- the neighbours' postings --------------------------------------------------------------------

    def _adjacent_noise(self) -> None:
        """A posting of another booking on the previous or next night, loaded with this night's ledger."""
        before = self.rng.random() < 0.5
        stranger = {
            "provider_record_id": self._id("ch"),
            "kind": "payment",
            "booking_id": self._booking(),
            "amount_minor": self._amount(),
            "created_at": self.start,
            "card_brand": self.rng.choice(_BRANDS),
            "card_last4": f"{self.rng.randint(0, 9999):04d}",
            "approval_code": self._approval(),
        }
        entry = self._post(stranger, keyed=self.rng.random() < 0.5, card=True, late=True)
        if before:
            self.entries[-1]["posted_at"] = self.start - timedelta(minutes=self.rng.randint(30, 600))
        self.adjacent.append(entry)


# --- helpers -------------------------------------------------------------------------------------------


def _key(row: dict[str, Any]) -> str:
    return f"{row['provider_record_id']}:{row['kind']}"


def _count(rng: random.Random, expected: float) -> int:
    """0 or more, ``expected`` on average (one draw per whole unit plus one for the fraction)."""
    whole, fraction = divmod(expected, 1.0)
    return int(whole) + (rng.random() < fraction)


def _split_amount(rng: random.Random, total: int, parts: int, currency: str) -> list[int]:
    """``total`` in ``parts`` positive amounts of whole units that sum to it exactly."""
    unit = 100  # one euro, one hundred yen
    units = total // unit
    cuts = sorted(rng.sample(range(1, units), parts - 1))
    amounts = [b - a for a, b in zip([0, *cuts], [*cuts, units], strict=True)]
    amounts = [amount * unit for amount in amounts]
    amounts[-1] += total - units * unit
    return amounts


def _frame(rows: list[dict[str, Any]], columns: dict[str, str], time_column: str) -> pd.DataFrame:
    """A typed frame in the contract's columns, rows in time order as a loader reads them."""
    rows = sorted(rows, key=lambda row: row[time_column])
    return typed_frame({name: [row.get(name) for row in rows] for name in columns}, columns, len(rows))
