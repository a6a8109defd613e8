"""A labelled world of hotel ledgers kept the way PMSs keep them, with its ground truth.

Why it exists: precision is measured, not hoped. A PMS posts payments per booking, often from a terminal
or a channel manager that never hands it the provider's id; it records the card as brand + last four and
the issuer's approval code, splits folios, posts late, and books fees per charge, per payout or not at
all. Each property-night generated here is a pair of pure frames (the provider-record frame with its
optional card columns, and the ledger frame with ``card_brand``, ``card_last4``, ``approval_code``,
``reference``, ``tender`` and ``group_id`` as the PMS wrote them, unread) together with what a perfect
reconciliation says about them:

- ``groups``: the records and entries that belong together (one charge and its posting, a split folio, a
  group's charge posted across its bookings, a refund posted as a negative payment, the two legs of a
  reversal, a pair of interchangeable charges and postings), whatever rule finds them; their amounts
  balance;
- ``planted``: the real discrepancies, each as the ``(category, record_key)`` of the finding that states
  it, the other findings that state it as well (either of two identical charges, say) and the ids
  involved; a ``certain`` one is stated only by its finding, never by an ambiguity naming its rows;
- ``fees_elsewhere``: provider fee rows of a hotel that books fees per payout or not at all (not compared
  per movement), ``unsettled`` records (failed charges: nobody books them), ``adjacent`` entries (the
  neighbouring nights' postings of other bookings, loaded as the pipeline loads them, ``in_night`` False)
  and ``takings``: entries of tenders the provider never sees (cash, bank transfer, OTA-collected money,
  vouchers, others), never a finding.

Each property keeps its ledger in one PMS's style (``PMS_STYLES``), after what their public APIs emit:
Apaleo (the PSP reference of a card payment in ``reference``, card brands as its payment methods name
them, ``VisaCredit``, ``Amex``; custom payments with a method, ``Cash``, ``BankTransfer``, ``BookingCom``),
OPERA (card-type codes ``VA``, ``MC``, ``AX``, the card number masked to its last four, approval codes,
and often no tender recorded on a card payment) and Mews (zero-decimal currencies, JPY and KRW; external
payment types, ``WireTransfer``, ``GiftCard``, ``Invoice``). Tenders are written in each PMS's case.

The mix per property-night: keyed postings, postings by booking only, by booking with card and approval
code, with the id only inside ``reference`` text, terminal sales with no booking on either side (card and
time only), split folios both ways, interchangeable pairs, look-alikes (same card and amount, different
bookings), late postings on the next night, refunds (as refund entries, or as negative payments: keyed,
by booking, split in two, or naming the refunded charge in ``reference``), a dispute's withdrawal posted as
a negative payment, failed charges, the three fee bookings, and the PMS shapes: non-card takings (a cash
payment of the same booking and amount as a card charge, sometimes), a group's one charge posted across
its bookings (with ``group_id``, the master's own part missing sometimes, so that only
``booking_groups``, ``bookings.group_id``, says the master is of the group when it has no entry at all; or
without a group id, with the charge's card and approval code on every posting), and declined-then-reversed
postings (+X and -X on one booking and card, beside a failed charge or nothing, then a successful retry,
sometimes on the same card and of the same amount). Planted: payments nobody posted, postings the
provider never saw, amounts off, look-alikes that must not be paired, one of two or three identical
charges unposted (certain: its money, not an ambiguity), an unposted charge beside a cash payment of its
booking and amount, a group's postings that do not sum to its charge, a negative payment nobody refunded,
and a reversal whose legs differ. Everything follows from ``(property_nights, seed)``.

What this world cannot show: it is ours, written from the same reading of the PMSs as the matcher it
scores, so a perfect score here proves the matcher keeps to that reading, not that the reading is right.
Not generated (yet): an unkeyed posting of tonight for an earlier night's charge (it needs the earlier
night's match, ``KnownMatch``), per-payout fee entries (the payout's, compared by ``reconcile/fees.py``),
partial captures, currency conversions, a group charge posted across bookings on different nights, a
reversal whose legs fall on two nights, a tender the PMS recorded wrong (cash written as card), and
bookings shared by two properties.
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

from recon_pipeline.categories import (
    AMOUNT_MISMATCH,
    MISSING_AT_PROVIDER,
    MISSING_IN_LEDGER,
    STATUS_MISMATCH,
)
from recon_pipeline.frames import typed_frame
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.money import minor_unit_exponent
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS

FEE_BOOKINGS: Final = ("per_movement", "per_payout", "none")
PMS_STYLES: Final = ("apaleo", "opera", "mews")
CARD_COLUMNS: Final = ("card_brand", "card_last4", "approval_code")
HOTEL_PROVIDER_COLUMNS: Final[dict[str, str]] = PROVIDER_RECORD_COLUMNS | dict.fromkeys(
    CARD_COLUMNS, "object"
)
HOTEL_LEDGER_COLUMNS: Final[dict[str, str]] = LEDGER_RECORD_COLUMNS | dict.fromkeys(
    (*CARD_COLUMNS, "reference"), "object"
)
FIRST_NIGHT: Final = date(2026, 10, 1)
NIGHT_CUTOFF: Final = "04:00"  # the world's nights run from 04:00 UTC to 04:00 UTC

# How a booking's payments are posted (weights per booking), then the discrepancies planted per night.
STYLES: Final[dict[str, float]] = {
    "keyed": 0.24,
    "keyed_late": 0.03,
    "booking": 0.14,
    "booking_late": 0.03,
    "strong": 0.09,
    "strong_no_booking": 0.03,
    "reference": 0.05,
    "card_window": 0.03,
    "split_postings": 0.03,
    "split_charges": 0.03,
    "identical_pair": 0.03,
    "look_alike_pair": 0.03,
    "walk_in_twins": 0.02,
    "deposit_earlier": 0.03,
    "failed": 0.02,
    # the PMS shapes
    "takings": 0.12,
    "mixed_tender": 0.03,
    "group_folio": 0.04,
    "group_by_card": 0.03,
    "reversal": 0.04,
    "dispute_withdrawal": 0.01,
}
PLANTS: Final[dict[str, float]] = {  # expected plants of each label per property-night
    "unposted_payment": 0.25,
    "phantom_posting": 0.12,
    "amount_off": 0.12,
    "look_alike": 0.08,
    "identical_short": 0.06,
    "cash_beside_unposted": 0.05,
    "group_short": 0.05,
    "negative_unrefunded": 0.08,
    "reversal_uneven": 0.08,
}
# Group styles and plant labels of the PMS shapes (with the takings, the share ``HotelWorld`` reports).
PMS_SHAPES: Final = frozenset(
    {
        "mixed_tender",
        "group_folio",
        "group_member",
        "group_by_card",
        "negative_refund",
        "dispute_withdrawal",
        "reversal",
        "identical_pair",
        "identical_short",
        "cash_beside_unposted",
        "group_short",
        "negative_unrefunded",
        "reversal_uneven",
    }
)
TAKINGS: Final = "takings"  # the shape of an entry of a tender the provider never sees
_CURRENCIES: Final[dict[str, tuple[str, ...]]] = {
    "apaleo": ("EUR", "CHF", "GBP"),
    "opera": ("USD", "GBP", "EUR"),
    "mews": ("JPY", "EUR", "KRW", "CHF"),
}
_FEE_WEIGHTS: Final = (0.5, 0.3, 0.2)
_BRANDS: Final = ("visa", "mastercard", "amex", "jcb")
_BRAND_WEIGHTS: Final = (0.45, 0.35, 0.15, 0.05)
# Card brands as each PMS writes them: Apaleo's payment methods, OPERA's card-type codes, Mews' names.
_WRITTEN_BRANDS: Final[dict[str, dict[str, tuple[str, ...]]]] = {
    "apaleo": {
        "visa": ("Visa", "VisaCredit", "VisaDebit"),
        "mastercard": ("MasterCard", "MasterCardDebit"),
        "amex": ("Amex",),
        "jcb": ("Jcb",),
    },
    "opera": {"visa": ("VA", "VA", "VI"), "mastercard": ("MC",), "amex": ("AX",), "jcb": ("JC",)},
    "mews": {
        "visa": ("Visa", "VISA"),
        "mastercard": ("MasterCard", "Mastercard"),
        "amex": ("Amex", "American Express"),
        "jcb": ("Jcb", "JCB"),
    },
}
_WRITTEN_LAST4: Final[dict[str, tuple[str, ...]]] = {
    "apaleo": ("{}",),
    "opera": ("XXXXXXXXXXXX{}", "XXXX{}"),
    "mews": ("{}", "**** {}"),
}
# How each PMS writes the tender of a card payment (None: OPERA often records none).
_CARD_TENDERS: Final[dict[str, tuple[str | None, ...]]] = {
    "apaleo": ("Card", "card"),
    "opera": (None, None, "CARD"),
    "mews": ("card", "Card"),
}
# The takings the provider never sees, per PMS: (tender as the PMS writes it, its own name of the method,
# kept in ``reference``): Apaleo's payment methods, OPERA's payment-method codes, Mews' external types.
_TAKINGS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "apaleo": (
        ("Cash", "Cash"),
        ("Cash", "Cash"),
        ("BankTransfer", "BankTransfer"),
        ("OtaCollect", "BookingCom"),
        ("OtaCollect", "Expedia"),
        ("OTACollect", "Airbnb"),
        ("Voucher", "Voucher"),
        ("Other", "Cheque"),
    ),
    "opera": (
        ("CASH", "CA Cash"),
        ("CASH", "CA Cash"),
        ("BANK TRANSFER", "BT Bank Transfer"),
        ("OTA COLLECT", "EXP Expedia Collect"),
        ("OTA-COLLECT", "BDC Payments by Booking.com"),
        ("VOUCHER", "GC Gift Certificate"),
        ("OTHER", "DB Direct Bill"),
    ),
    "mews": (
        ("cash", "Cash"),
        ("cash", "DepositCash"),
        ("bank_transfer", "WireTransfer"),
        ("Bank_Transfer", "Bacs"),
        ("ota_collect", "Prepayment"),
        ("voucher", "GiftCard"),
        ("Voucher", "Voucher"),
        ("other", "Invoice"),
    ),
}
# How Apaleo writes the PSP reference of a card payment it took through its payment service.
_PSP_REFERENCES: Final = (
    "{id}",
    "PSP {id}",
    "pspReference: {id}",
    "Adyen {id} / {booking}",
    "{booking}-{id}",
)
_CODE_LETTERS: Final = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
_NIGHT_START: Final = timedelta(hours=4)
_NIGHT_LENGTH: Final = timedelta(hours=24)
_REFUND_SHARE: Final = 0.12


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
    a suggestion points a person at it, unless the discrepancy is ``certain``: its money is known, so only
    a finding of ``accepted`` states it); none of them is matched money.
    """

    label: str
    category: str
    key: str
    accepted: frozenset[tuple[str, str]]
    records: tuple[str, ...]
    entries: tuple[str, ...]
    certain: bool = False


@dataclass(frozen=True)
class HotelNight:
    """One property-night: the frames a reconciliation reads and what a perfect one says about them."""

    property_id: str
    night: date
    pms: str
    currency: str
    fee_booking: str
    provider_records: pd.DataFrame  # HOTEL_PROVIDER_COLUMNS
    ledger_records: pd.DataFrame  # HOTEL_LEDGER_COLUMNS as the PMS wrote them, in-night and adjacent
    provider_elsewhere: pd.DataFrame  # HOTEL_PROVIDER_COLUMNS: the earlier-night records late keyed ids name
    groups: tuple[Group, ...]
    planted: tuple[Planted, ...]
    fees_elsewhere: tuple[str, ...]  # fee record keys not compared per movement (per_payout, none)
    unsettled: tuple[str, ...]  # record keys of failed charges
    adjacent: tuple[str, ...]  # entry ids of other nights' postings loaded around this one
    takings: tuple[str, ...]  # entry ids of tenders the provider never sees
    booking_groups: dict[str, str]  # booking → its group, as ``bookings.group_id`` says (entries or none)

    @property
    def matched_records(self) -> frozenset[str]:
        """Record keys a perfect reconciliation leaves alone (matched, or fees booked elsewhere)."""
        return frozenset(key for group in self.groups for key in group.records) | frozenset(
            self.fees_elsewhere
        )

    @property
    def matched_entries(self) -> frozenset[str]:
        """Entry ids a perfect reconciliation leaves alone (matched, set aside as a reversal, or another
        night's); the takings apart (:attr:`takings`)."""
        return frozenset(entry for group in self.groups for entry in group.entries) | frozenset(self.adjacent)

    def shapes(self) -> dict[str, str]:
        """The shape of every record key and entry id: its group's style, its plant's label, ``takings``,
        ``adjacent``, ``fees_elsewhere`` or ``unsettled`` (what a false finding is read against)."""
        shape: dict[str, str] = {}
        for group in self.groups:
            shape.update(dict.fromkeys((*group.records, *group.entries), group.style))
        for plant in self.planted:
            shape.update(dict.fromkeys((*plant.records, *plant.entries), plant.label))
        for name, rows in (
            ("adjacent", self.adjacent),
            ("fees_elsewhere", self.fees_elsewhere),
            ("unsettled", self.unsettled),
            (TAKINGS, self.takings),
        ):
            shape.update(dict.fromkeys(rows, name))
        return shape


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

    def pms_shape_entries(self) -> int:
        """Ledger entries in the PMS shapes (``PMS_SHAPES`` and the takings), in all nights."""
        return sum(
            sum(1 for entry in night.ledger_records["entry_id"] if shapes.get(entry) in _COUNTED)
            for night in self.nights
            for shapes in (night.shapes(),)
        )


_COUNTED: Final = PMS_SHAPES | {TAKINGS}


def build_hotel_world(
    property_nights: int, seed: int = 1, nights_per_property: int = 10, bookings: tuple[int, int] = (8, 30)
) -> HotelWorld:
    """``property_nights`` labelled nights, ``nights_per_property`` consecutive ones per property; the
    same arguments give the same world (ids carry the night's serial, so no two nights share one).
    Properties take the PMS styles in turn, and each style its currencies in turn."""
    if property_nights < 1 or nights_per_property < 1:
        raise ValueError("property_nights and nights_per_property must be positive")
    world = random.Random(seed)
    shapes: list[tuple[str, str, str]] = []
    nights = []
    for serial in range(property_nights):
        index, offset = divmod(serial, nights_per_property)
        while len(shapes) <= index:
            pms = PMS_STYLES[len(shapes) % len(PMS_STYLES)]
            currencies = _CURRENCIES[pms]
            currency = currencies[len(shapes) // len(PMS_STYLES) % len(currencies)]
            shapes.append((pms, currency, world.choices(FEE_BOOKINGS, _FEE_WEIGHTS)[0]))
        pms, currency, fee_booking = shapes[index]
        night_rng = random.Random(seed * 1_000_003 + serial)
        builder = _NightBuilder(
            night_rng,
            serial,
            f"hotel{index:04d}",
            FIRST_NIGHT + timedelta(days=offset),
            pms,
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
    pms: str
    currency: str
    fee_booking: str
    records: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)
    fees_elsewhere: list[str] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)
    adjacent: list[str] = field(default_factory=list)
    takings: list[str] = field(default_factory=list)
    group_of: dict[str, str] = field(default_factory=dict)  # booking → its group (bookings.group_id)
    counter: int = 0

    @property
    def start(self) -> pd.Timestamp:
        return pd.Timestamp(self.night, tz="UTC") + _NIGHT_START

    @property
    def per_movement(self) -> bool:
        return self.fee_booking == "per_movement"

    @property
    def zero_decimal(self) -> bool:
        return minor_unit_exponent(self.currency) == 0

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
            pms=self.pms,
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
            takings=tuple(self.takings),
            booking_groups=dict(self.group_of),
        )

    # --- ids, amounts, cards, times ------------------------------------------------------------------

    def _id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.serial:06d}x{self.counter:03d}"

    def _booking(self) -> str:
        return self._id("BK").replace("_", "-")

    def _group_bookings(self, low: int = 2, high: int = 4) -> list[str]:
        """A group's bookings (its master first), each of the group from now on (``group_id``)."""
        group = self._id("GRP").replace("_", "-")
        members = [self._booking() for _ in range(self.rng.randint(low, high))]
        self.group_of.update(dict.fromkeys(members, group))
        return members

    def _amount(self) -> int:
        """Hotel amounts: whole multiples of 5.00 (100 yen, 1,000 won), so that equal amounts happen as
        they do."""
        if self.zero_decimal:
            return self.rng.randint(30, 1800) * (100 if self.currency == "JPY" else 1000)
        return self.rng.randint(4, 300) * 500

    def _off(self, amount: int) -> int:
        """A few units off ``amount`` (at most half of it, so that the posting keeps its sign): what a
        mistyped or short posting differs by."""
        step = 5 if self.zero_decimal else 500
        return min(self.rng.randint(1, 20), max(1, amount // 2 // step)) * step

    def _fee(self, amount: int) -> int:
        fixed = 0 if self.zero_decimal else 25
        return -(amount * 14 // 1000 + fixed)

    def _card(self) -> _Card:
        return _Card(self.rng.choices(_BRANDS, _BRAND_WEIGHTS)[0], f"{self.rng.randint(0, 9999):04d}")

    def _approval(self) -> str:
        return "".join(self.rng.choices(_CODE_LETTERS, k=6))

    def _created(self) -> pd.Timestamp:
        return self.start + timedelta(minutes=self.rng.randint(60, 21 * 60))

    # --- as the PMS writes it ------------------------------------------------------------------------

    def _written_brand(self, brand: str) -> str:
        return self.rng.choice(_WRITTEN_BRANDS[self.pms][brand])

    def _written_last4(self, last4: str) -> str:
        return self.rng.choice(_WRITTEN_LAST4[self.pms]).format(last4)

    def _card_tender(self) -> str | None:
        return self.rng.choice(_CARD_TENDERS[self.pms])

    def _psp_reference(self, record: dict[str, Any]) -> str | None:
        """Apaleo's PSP reference of a payment it took (the provider's id, in one of its spellings)."""
        booking = record["booking_id"] or "walk-in"
        return self.rng.choice(_PSP_REFERENCES).format(id=record["provider_record_id"], booking=booking)

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
        after: timedelta | None = None,
    ) -> str:
        """A ledger entry posting ``record`` (or its fee row, ``kind`` fee) with the keys a PMS kept, as
        the property's PMS writes them; posted ``after`` the record's creation (a few minutes to two
        hours when not given), within the night unless ``late``."""
        entry_id = self._id("le")
        kind = kind or record["kind"]
        if amount is None:
            amount = self._fee(record["amount_minor"]) if kind == "fee" else record["amount_minor"]
        posted = record["created_at"] + (after or timedelta(minutes=self.rng.randint(1, 120)))
        posted = min(posted, self.start + _NIGHT_LENGTH - timedelta(minutes=1))
        if late:
            posted = self.start + timedelta(days=1, minutes=self.rng.randint(30, 360))
        booking_id = record["booking_id"] if booking else None
        self.entries.append(
            {
                "entry_id": entry_id,
                "property_id": self.property_id,
                "booking_id": booking_id,
                "provider_record_id": record["provider_record_id"] if keyed else None,
                "kind": kind,
                "amount_minor": amount,
                "currency": self.currency,
                "posted_at": posted,
                "in_night": not late,
                "card_brand": self._written_brand(record["card_brand"]) if card else None,
                "card_last4": self._written_last4(record["card_last4"]) if card else None,
                "approval_code": record["approval_code"] if approval else None,
                "reference": reference,
                "tender": None if kind == "fee" else self._card_tender(),
                "group_id": self.group_of.get(booking_id) if booking_id else None,
            }
        )
        return entry_id

    def _taking(self, booking: str | None, amount: int, written: tuple[str, str] | None = None) -> str:
        """An entry of a tender the provider never sees (cash, a bank transfer, an OTA's collection...);
        an OTA's payment keeps the channel's own id in ``provider_record_id`` sometimes."""
        tender, method = written or self.rng.choice(_TAKINGS[self.pms])
        entry_id = self._id("le")
        channel_id = None
        if "ota" in tender.lower() and self.rng.random() < 0.3:
            channel_id = f"BDC-{self.rng.randint(10**8, 10**9 - 1)}"
        self.entries.append(
            {
                "entry_id": entry_id,
                "property_id": self.property_id,
                "booking_id": booking,
                "provider_record_id": channel_id,
                "kind": "payment",
                "amount_minor": amount,
                "currency": self.currency,
                "posted_at": self._created(),
                "in_night": True,
                "card_brand": None,
                "card_last4": None,
                "approval_code": None,
                "reference": method,
                "tender": tender,
                "group_id": self.group_of.get(booking) if booking else None,
            }
        )
        self.takings.append(entry_id)
        return entry_id

    def _posted_with_fee(self, style: str, record: dict[str, Any], **keys: Any) -> None:
        """Post a record as one group, and under per_movement its fee the same way as a group of its own."""
        entry = self._post(record, **keys)
        self._group(style, [record], [entry])
        if self.per_movement and record["kind"] == "payment":
            fee = self._post(record, kind="fee", **keys)
            self._group(style, [self._fee_record(record)], [fee])

    def _fee_posted(self, style: str, charges: Sequence[dict[str, Any]], **keys: Any) -> None:
        """Under per_movement, each charge's fee posted as a group of its own."""
        if self.per_movement:
            for charge in charges:
                self._group(style, [self._fee_record(charge)], [self._post(charge, kind="fee", **keys)])

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
        """A refund of the charge, sometimes: posted as a refund entry, or, as PMSs mostly do, as a negative
        payment (keyed by the refund's id, by booking, in two parts by booking, or naming the refunded charge
        in ``reference``)."""
        if self.rng.random() >= _REFUND_SHARE:
            return
        refund = self._refund(charge)
        way = self.rng.random()
        if way < 0.3:
            self._group("refund", [refund], [self._post(refund, **keys)])
            return
        if way < 0.5:
            entry = self._post(refund, kind="payment", keyed=True)
        elif -refund["amount_minor"] >= 1000 and self.rng.random() < 0.15:  # split over the folio's windows
            amounts = _split_amount(self.rng, -refund["amount_minor"], 2, self.currency)
            parts = [self._post(refund, kind="payment", amount=-part) for part in amounts]
            self._group("negative_refund", [refund], parts)
            return
        elif way < 0.85 or self.pms != "apaleo":
            entry = self._post(refund, kind="payment", card=self.rng.random() < 0.5)
        else:
            text = self.rng.choice(("Refund {id}", "refund of psp {id}", "{id} refund"))
            entry = self._post(refund, kind="payment", reference=text.format(id=charge["provider_record_id"]))
        self._group("negative_refund", [refund], [entry])

    # --- posting styles (one booking each) -----------------------------------------------------------

    def _style_keyed(self) -> None:
        """Keyed; a refund of it is keyed too, or posted by booking alone (refunded at the terminal)."""
        charge = self._charge(self._booking())
        self._posted_with_fee("keyed", charge, keyed=True, card=self.rng.random() < 0.5)
        self._maybe_refund(charge, keyed=self.rng.random() < 0.5)

    def _style_keyed_late(self) -> None:
        self._posted_with_fee("keyed_late", self._charge(self._booking()), keyed=True, late=True)

    def _style_booking(self) -> None:
        """By booking; Apaleo keeps the PSP reference of what it took through its payment service."""
        booking = self._booking()
        for _ in range(self.rng.choice((1, 1, 1, 2))):  # a second charge of another amount, sometimes
            charge = self._charge(booking, self._distinct_amount(booking))
            reference = None
            if self.pms == "apaleo" and self.rng.random() < 0.4:
                reference = self._psp_reference(charge)
            self._posted_with_fee("booking", charge, reference=reference)
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
        self._fee_posted("strong_no_booking", [charge], **keys)

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
            brand=self._written_brand(charge["card_brand"]).upper(),
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
        self._fee_posted("split_postings", [charge])

    def _style_split_charges(self) -> None:
        """Deposit and balance charged apart, posted as one folio payment."""
        booking = self._booking()
        card = self._card()
        total = self._amount() * 2
        amounts = _split_amount(self.rng, total, self.rng.randint(2, 3), self.currency)
        charges = [self._charge(booking, amount, card) for amount in amounts]
        entry = self._post(charges[0], amount=total)
        self._group("split_charges", charges, [entry])
        self._fee_posted("split_charges", charges)

    def _style_identical_pair(self) -> None:
        """Two charges of one amount on one booking and card, posted twice by booking (and card, sometimes):
        interchangeable."""
        booking, amount, card = self._booking(), self._amount(), self._card()
        charges = [self._charge(booking, amount, card) for _ in range(2)]
        with_card = self.rng.random() < 0.5
        entries = [self._post(charge, card=with_card) for charge in charges]
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

    def _style_takings(self) -> None:
        """A booking (or a walk-in) paid without the provider: cash, a bank transfer, an OTA's collection,
        a voucher; a part of it given back in the same tender, sometimes."""
        booking = self._booking() if self.rng.random() < 0.85 else None
        amount = self._amount()
        written = self.rng.choice(_TAKINGS[self.pms])
        self._taking(booking, amount, written)
        if self.rng.random() < 0.15:
            self._taking(booking, -max(100, amount // 200 * 100), written)

    def _style_mixed_tender(self) -> None:
        """A booking paid partly by card (posted by booking) and partly without the provider, often of the
        same amount: only the card's is the provider's."""
        booking = self._booking()
        amount = self._amount()
        self._posted_with_fee("mixed_tender", self._charge(booking, amount))
        self._taking(booking, amount if self.rng.random() < 0.6 else self._amount())

    def _style_group_folio(self) -> None:
        """A group's one charge (its master booking's) posted across the group's bookings, each part under
        its own booking (OPERA's routing to a master folio, an Apaleo block): ``group_id`` says they are one
        group. The master keeps no part of it, sometimes (then the ledger names its group only if it pays
        its own extras by card); the card is on every part, sometimes; a member pays its own extras too,
        sometimes."""
        members = self._group_bookings(2, 4)
        master_posts = self.rng.random() < 0.75
        posting = (
            members
            if master_posts
            else [*members[1:], *([self._member(members)] if len(members) < 3 else [])]
        )
        shares = [self._amount() for _ in posting]
        charge = self._charge(members[0], sum(shares))
        with_card = self.rng.random() < 0.5
        entries = [
            self._post(charge | {"booking_id": member}, amount=share, card=with_card)
            for member, share in zip(posting, shares, strict=True)
        ]
        self._group("group_folio", [charge], entries)
        self._fee_posted("group_folio", [charge])
        extras = [member for member in members[1:] if self.rng.random() < 0.3]
        if not master_posts and self.rng.random() < 0.5:
            extras.append(members[0])
        for member in extras:
            extra = self._charge(member, self._distinct_amount(member, *shares))
            self._posted_with_fee("group_member", extra)

    def _member(self, members: list[str]) -> str:
        """One more booking of the group of ``members``."""
        member = self._booking()
        self.group_of[member] = self.group_of[members[0]]
        members.append(member)
        return member

    def _style_group_by_card(self) -> None:
        """A group's one charge posted across its bookings by a PMS that keeps no group: every part carries
        the charge's card and approval code, and the parts sum to it exactly."""
        members = [self._booking() for _ in range(self.rng.randint(2, 3))]
        shares = [self._amount() for _ in members]
        charge = self._charge(members[0] if self.rng.random() < 0.7 else None, sum(shares))
        entries = [
            self._post(charge | {"booking_id": member}, amount=share, card=True, approval=True)
            for member, share in zip(members, shares, strict=True)
        ]
        self._group("group_by_card", [charge], entries)
        self._fee_posted("group_by_card", [charge], card=True, approval=True)

    def _style_reversal(self) -> None:
        """Declined at the terminal, then reversed: the PMS posted +X and -X on one booking and card the
        same night, beside the provider's failed charge or nothing; the guest paid again, sometimes with
        the same card and of the same amount, posted by booking (and card, sometimes)."""
        booking, amount, card = self._booking(), self._amount(), self._card()
        declined = self._declined(booking, amount, card)
        if declined["provider_record_id"] is not None:
            self.unsettled.append(_key(declined))
        legs = self._reversal_legs(declined, amount)
        self.groups.append(Group("reversal", (), legs, 0, self.currency))
        if self.rng.random() < 0.5:  # the retry: the same card, sometimes (the issuer let it through)
            again = card if self.rng.random() < 0.5 else None
            retry = self._charge(booking, amount if self.rng.random() < 0.7 else self._amount(), again)
            self._posted_with_fee("reversal", retry, card=self.rng.random() < 0.5)

    def _declined(self, booking: str, amount: int, card: _Card) -> dict[str, Any]:
        """The provider's failed charge of a declined card, or, half the time, nothing at the provider:
        the record as the PMS saw it (its ``provider_record_id`` None then)."""
        if self.rng.random() < 0.5:
            return self._charge(booking, amount, card, settled=False)
        return {
            "provider_record_id": None,
            "kind": "payment",
            "booking_id": booking,
            "amount_minor": amount,
            "created_at": self._created(),
            "card_brand": card.brand,
            "card_last4": card.last4,
            "approval_code": None,
        }

    def _reversal_legs(
        self, declined: dict[str, Any], amount: int, back: int | None = None
    ) -> tuple[str, str]:
        """+amount, then -back (the amount itself unless given) a few minutes later, booking and card kept."""
        after = timedelta(minutes=self.rng.randint(1, 30))
        plus = self._post(declined, amount=amount, card=True, after=after)
        minus = self._post(
            declined,
            amount=-(amount if back is None else back),
            card=True,
            after=after + timedelta(minutes=2),
        )
        return plus, minus

    def _style_dispute_withdrawal(self) -> None:
        """A charge disputed: the provider withdraws its money (a ``dispute`` record) and the PMS posts the
        withdrawal as a negative payment on the booking."""
        charge = self._charge(self._booking())
        self._posted_with_fee("booking", charge)
        dispute = charge | {
            "provider_record_id": self._id("dp"),
            "kind": "dispute",
            "amount_minor": -charge["amount_minor"],
            "status": "needs_response",
            "created_at": charge["created_at"] + timedelta(minutes=self.rng.randint(5, 90)),
            "approval_code": None,
        }
        self.records.append(dispute)
        self._group("dispute_withdrawal", [dispute], [self._post(dispute, kind="payment")])

    def _distinct_amount(self, booking: str, *taken_too: int) -> int:
        taken = {row["amount_minor"] for row in self.records if row["booking_id"] == booking}
        taken.update(taken_too)
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
        amount = charge["amount_minor"] + self.rng.choice((-1, 1)) * self._off(charge["amount_minor"])
        keys: dict[str, Any] = (
            {"keyed": True} if self.rng.random() < 0.4 else {"card": True, "approval": True}
        )
        entry = self._post(charge, amount=amount, **keys)
        self._plant("amount_off", AMOUNT_MISMATCH, _key(charge), records=[_key(charge)], entries=[entry])
        self._fee_posted("amount_off", [charge], **keys)

    def _plant_look_alike(self) -> None:
        """A charge nobody posted, and a posting the provider never saw of the same card and amount on
        another booking: the two must not be paired (their bookings are known and differ)."""
        charge = self._charge(self._booking())
        posting = charge | {"provider_record_id": None, "booking_id": self._booking(), "approval_code": None}
        entry = self._post(posting, card=True)
        self._plant_unposted(charge, "look_alike")
        self._plant("look_alike", MISSING_AT_PROVIDER, f"entry:{entry}", entries=[entry])

    def _plant_identical_short(self) -> None:
        """Two (or three) charges of one amount on one booking and card, one posting fewer (by booking, with
        the card sometimes): one of them is unposted, any, and its money is certain."""
        booking, amount, card = self._booking(), self._amount(), self._card()
        charges = [self._charge(booking, amount, card) for _ in range(2 if self.rng.random() < 0.75 else 3)]
        with_card = self.rng.random() < 0.5
        entries = tuple(self._post(charge, card=with_card) for charge in charges[1:])
        rows = [charges]
        postings = [entries]
        if self.per_movement:
            rows.append([self._fee_record(charge) for charge in charges])
            postings.append(tuple(self._post(charge, kind="fee") for charge in charges[1:]))
        for records, posted in zip(rows, postings, strict=True):
            self.planted.append(
                Planted(
                    "identical_short",
                    MISSING_IN_LEDGER,
                    _key(records[0]),
                    frozenset((MISSING_IN_LEDGER, _key(row)) for row in records),
                    tuple(_key(row) for row in records),
                    posted,
                    certain=True,
                )
            )

    def _plant_cash_beside_unposted(self) -> None:
        """A card charge nobody posted, on a booking that also paid the same amount without the provider
        (cash, an OTA): the cash is no posting of the charge."""
        charge = self._charge(self._booking())
        self._taking(charge["booking_id"], charge["amount_minor"])
        self._plant_unposted(charge, "cash_beside_unposted")

    def _plant_group_short(self) -> None:
        """A group's charge posted across its bookings (``group_id``) for less than was charged: no split
        sums to it, so the charge is unposted and each part is a posting the provider never saw (a person
        reading one ambiguity over them all states every one)."""
        members = self._group_bookings()
        shares = [self._amount() for _ in members]
        charge = self._charge(members[0], sum(shares) + self._off(sum(shares)))
        entries = [
            self._post(charge | {"booking_id": member}, amount=share)
            for member, share in zip(members, shares, strict=True)
        ]
        self._plant(
            "group_short",
            MISSING_IN_LEDGER,
            _key(charge),
            records=[_key(charge)],
            also=[(AMOUNT_MISMATCH, _key(charge))],
        )
        for entry in entries:
            self._plant("group_short", MISSING_AT_PROVIDER, f"entry:{entry}", entries=[entry])
        self._fee_posted("group_short", [charge])

    def _plant_negative_unrefunded(self) -> None:
        """A negative payment on a booking whose charge is posted, and no refund at the provider: the PMS
        shows money given back that never went back."""
        charge = self._charge(self._booking())
        self._posted_with_fee("booking", charge)
        back = -max(100, int(charge["amount_minor"] * self.rng.choice((0.25, 0.5, 1.0))) // 100 * 100)
        entry = self._post(charge, amount=back, card=self.rng.random() < 0.5, after=timedelta(minutes=150))
        self._plant("negative_unrefunded", MISSING_AT_PROVIDER, f"entry:{entry}", entries=[entry])

    def _plant_reversal_uneven(self) -> None:
        """+X then -Y on one booking and card, Y not X, beside a failed charge or nothing: no reversal, two
        postings the provider never took (the first, beside a failed charge, its status mismatch)."""
        booking, amount, card = self._booking(), self._amount(), self._card()
        declined = self._declined(booking, amount, card)
        back = amount - self._off(amount)
        plus, minus = self._reversal_legs(declined, amount, back)
        failed = declined["provider_record_id"] is not None
        records = [_key(declined)] if failed else []
        also = [(STATUS_MISMATCH, _key(declined))] if failed else []
        self._plant("reversal_uneven", MISSING_AT_PROVIDER, f"entry:{plus}", records, [plus], also)
        self._plant("reversal_uneven", MISSING_AT_PROVIDER, f"entry:{minus}", entries=[minus])

    # --- the neighbours' postings --------------------------------------------------------------------

    def _adjacent_noise(self) -> None:
        """A posting of another booking on the previous or next night, loaded with this night's ledger."""
        before = self.rng.random() < 0.5
        card = self._card()
        stranger = {
            "provider_record_id": self._id("ch"),
            "kind": "payment",
            "booking_id": self._booking(),
            "amount_minor": self._amount(),
            "created_at": self.start,
            "card_brand": card.brand,
            "card_last4": card.last4,
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
