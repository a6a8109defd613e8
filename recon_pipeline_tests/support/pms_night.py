"""A night of a hotel whose ledger is kept PMS-style (issue 26), for the batch-path tests of the matcher.

Rome, EUR, on its own Stripe connected account, ``fee_booking = per_payout``: the folio posts payments
per booking, mostly without the provider's id, records the card as brand + last four and sometimes the
issuer's approval code, splits folios both ways, and books the provider's fees once per payout. Each
charge is built with the card the simulator serves for it (``payment_method_details``), so the provider
frame the client reads over loopback carries the same keys the ledger wrote.

What every row is for is stated once, here (``LABELS``), so a test reads the expected outcome as words:
which tier pairs what, which pairs are look-alikes that must never pair, which rows are held back in a
suggestion or an ambiguity, and the real discrepancies planted. Amounts are chosen so that no two free
rows meet by accident (a tier pairing rows it was not meant to would show as a changed finding).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Engine, Table, insert, select

from recon_pipeline.batches.work import BatchRequest, BatchResult, reconcile_batch
from recon_pipeline.db.schema import (
    adjustments,
    bookings,
    discrepancies,
    ledger_entries,
    match_decisions,
    matches,
    properties,
)
from recon_pipeline.nights import night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.provider_fixtures import (
    FAST_RETRY,
    StartSimulator,
    make_charge,
    make_refund,
)

NIGHT: Final = date(2026, 11, 30)
ACCOUNT: Final = "acct_1PmsRomeTrastevere"
PROPERTY: Final = PropertyRow(
    "rome-trastevere",
    "Rome Trastevere (PMS ledger)",
    "Europe/Rome",
    "EUR",
    "00:00",
    ACCOUNT,
    fee_booking="per_payout",
)
WINDOW: Final = night_window(NIGHT, PROPERTY.timezone, PROPERTY.night_cutoff)
PAYOUT_FEE_ENTRY: Final = "le_fees_po_rome_1128"  # the per-payout fee entry: set aside, never a finding


def at(hours: float) -> datetime:
    """A moment ``hours`` after the night's start (negative or past 24: the nights either side)."""
    return WINDOW.start + timedelta(hours=hours)


@dataclass
class PmsNight:
    """The provider half (a Stripe store) and the PMS half (ledger rows) of the night."""

    store: SimulatorStore = field(default_factory=SimulatorStore)
    entries: list[dict[str, Any]] = field(default_factory=list)
    charges: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)  # booking id -> its group (block, master folio)

    def charge(
        self,
        charge_id: str,
        hours: float,
        amount: int,
        booking: str | None,
        card: tuple[str, str, str],
        status: str = "succeeded",
    ) -> dict[str, Any]:
        """A card charge on the property's account (succeeded unless ``status`` says it failed); its
        metadata names the booking when the channel handed Stripe one (a terminal sale names none)."""
        created = int(at(hours).timestamp())
        fee = amount * 29 // 1000 + 30 if status == "succeeded" else None
        charge = make_charge(
            charge_id, created, amount=amount, property_id=None, account=ACCOUNT, fee=fee, status=status
        )
        charge["metadata"] = {"booking_id": booking} if booking else {}
        brand, last4, code = card
        charge["payment_method_details"] = {
            "type": "card",
            "card": {"brand": brand, "last4": last4, "authorization_code": code},
        }
        self.store.charges.append(charge)
        self.charges[charge_id] = charge
        return charge

    def refund(self, refund_id: str, charge_id: str, minutes_later: int, amount: int) -> None:
        charge = self.charges[charge_id]
        self.store.refunds.append(
            make_refund(refund_id, charge, charge["created"] + 60 * minutes_later, amount)
        )
        charge["amount_refunded"] += amount

    def post(
        self,
        entry_id: str,
        hours: float,
        amount: int,
        *,
        booking: str | None = None,
        kind: str = "payment",
        record: str | None = None,
        brand: str | None = None,
        last4: str | None = None,
        approval: str | None = None,
        reference: str | None = None,
        tender: str | None = None,
    ) -> None:
        """A folio posting, with only the keys the PMS kept (``tender`` as the PMS writes it)."""
        self.entries.append(
            {
                "entry_id": entry_id,
                "property_id": PROPERTY.property_id,
                "booking_id": booking,
                "provider_record_id": record,
                "kind": kind,
                "amount_minor": amount,
                "currency": "EUR",
                "posted_at": at(hours),
                "card_brand": brand,
                "card_last4": last4,
                "approval_code": approval,
                "reference": reference,
                "tender": tender,
            }
        )

    def bookings(self) -> list[dict[str, Any]]:
        """Every booking a charge or a posting names, confirmed: the stays are real (no orphan)."""
        named = {c["metadata"].get("booking_id") for c in self.charges.values()}
        named |= {entry["booking_id"] for entry in self.entries}
        return [
            {
                "booking_id": booking,
                "property_id": PROPERTY.property_id,
                "status": "confirmed",
                "amount_minor": 0,
                "currency": "EUR",
                "created_at": at(-48),
                "updated_at": at(-47),
                "group_id": self.groups.get(booking),
            }
            for booking in sorted(b for b in named if b)
        ]

    def seed(self, engine: Engine) -> None:
        """The property, its ledger and its bookings in the database (the PMS half)."""
        with engine.begin() as connection:
            connection.execute(insert(properties), [PROPERTY.row()])
            connection.execute(insert(ledger_entries), self.entries)
            connection.execute(insert(bookings), self.bookings())


# What each provider record and ledger entry is for (the tests' expectations read these words).
LABELS: Final[dict[str, str]] = {
    "ch_k1": "keyed by charge id",
    "ch_k2": "keyed by PaymentIntent id",
    "ch_r1": "reference names the charge",
    "ch_r2": "reference names the PaymentIntent",
    "ch_b1": "booking + amount",
    "re_b1": "refund by booking + amount",
    "ch_b2": "booking + amount",
    "ch_td": "booking + amount, posted the next night (timing difference)",
    "ch_s1": "approval code (terminal sale, no booking at Stripe)",
    "ch_s2": "booking + card, amount off by 5.00 (one amount_mismatch)",
    "ch_sp1": "one charge, two folio postings",
    "ch_sp2a": "deposit and balance, one folio posting",
    "ch_cw": "bar terminal: amount + card within the window, no booking at Stripe",
    "ch_am1": "three identical charges, two postings (the third: missing in the ledger)",
    "ch_sg1": "suggestion: amount within the window, no card on the posting",
    "ch_sg2": "suggestion: amount within the window, no card on the posting",
    "ch_hb": "booking typo on the posting: a person pairs it by hand",
    "ch_u1": "planted: nobody posted it",
    "ch_u2": "planted: nobody posted it",
    "ch_la": "planted look-alike: same card and amount as le_la, another booking",
    "le_p1": "planted: a posting Stripe never saw",
    "le_la": "planted look-alike of ch_la",
}


def build_pms_night() -> PmsNight:
    """The night (see LABELS): 22 charges and a refund at Stripe, 25 postings in the folio."""
    night = PmsNight()
    c, p = night.charge, night.post
    # exact id: the provider's id is on the posting (by charge, or by PaymentIntent: an alias)
    c("ch_k1", 1.0, 21_000, "BK-K1", ("visa", "4000", "K1K1K1"))
    p("le_k1", 1.1, 21_000, booking="BK-K1", record="ch_k1")
    c("ch_k2", 1.5, 9_550, "BK-K2", ("visa", "4001", "K2K2K2"))
    p("le_k2", 1.6, 9_550, booking="BK-K2", record="pi_k2")
    # reference: the id only inside the PMS's free text
    c("ch_r1", 2.0, 13_400, "BK-R1", ("visa", "4002", "R1R1R1"))
    p("le_r1", 2.2, 13_400, reference="Stripe ch_r1 / folio 4411")
    c("ch_r2", 2.5, 6_100, "BK-R2", ("mastercard", "5002", "R2R2R2"))
    p("le_r2", 2.6, 6_100, reference="deposit (psp pi_r2)")
    # booking + amount (a payment, its partial refund, another payment, one posted the next night)
    c("ch_b1", 3.0, 32_000, "BK-B1", ("visa", "4003", "B1B1B1"))
    p("le_b1", 3.1, 32_000, booking="BK-B1")
    night.refund("re_b1", "ch_b1", 50, 8_000)
    p("le_b1r", 4.0, -8_000, booking="BK-B1", kind="refund")
    c("ch_b2", 4.5, 14_500, "BK-B2", ("amex", "3004", "B2B2B2"))
    p("le_b2", 4.6, 14_500, booking="BK-B2")
    c("ch_td", 23.8, 17_200, "BK-TD", ("visa", "4005", "TDTDTD"))
    p("le_td", 24.4, 17_200, booking="BK-TD")  # the next night's folio: in_night False
    # strong keys: the approval code (no booking at Stripe); booking + card with the amount off
    c("ch_s1", 5.0, 9_900, None, ("visa", "4242", "A1B2C3"))
    p("le_s1", 5.2, 9_900, booking="BK-S1", brand="VISA", last4="4242", approval="a1b2c3")
    c("ch_s2", 5.5, 20_000, "BK-S2", ("mastercard", "5454", "M5M5M5"))
    p("le_s2", 5.6, 19_500, booking="BK-S2", brand="MasterCard", last4="**** 5454")
    # split folios, both ways
    c("ch_sp1", 6.0, 30_000, "BK-SP1", ("visa", "4006", "SP1SP1"))
    p("le_sp1a", 6.1, 17_000, booking="BK-SP1")
    p("le_sp1b", 6.2, 13_000, booking="BK-SP1")
    c("ch_sp2a", 7.0, 10_000, "BK-SP2", ("visa", "4007", "SP2A00"))
    c("ch_sp2b", 7.5, 15_000, "BK-SP2", ("visa", "4007", "SP2B00"))
    p("le_sp2", 7.6, 25_000, booking="BK-SP2")
    # card + amount within the window, no booking at Stripe (the bar's terminal; the folio charged a room)
    c("ch_cw", 10.0, 4_250, None, ("amex", "3782", "CW0001"))
    p("le_cw", 10.3, 4_250, booking="BK-CW", brand="AMEX", last4="3782")
    # three identical charges of one booking, two postings: two pair, the third is missing in the ledger
    for n, hours in ((1, 11.0), (2, 11.5), (3, 12.0)):
        c(f"ch_am{n}", hours, 11_000, "BK-AM", ("visa", "4008", f"AM000{n}"))
    p("le_am1", 11.2, 11_000, booking="BK-AM")
    p("le_am2", 11.7, 11_000, booking="BK-AM")
    # suggestions: amount within the window, the posting knows no booking nor card (0.5 < the threshold 0.8)
    c("ch_sg1", 14.0, 7_700, "BK-SG1", ("visa", "1881", "SG1000"))
    p("le_sg1", 14.5, 7_700)
    c("ch_sg2", 16.0, 5_600, "BK-SG2", ("mastercard", "2992", "SG2000"))
    p("le_sg2", 15.0, 5_600)
    # a booking typo: the bookings differ, so no tier pairs them; a person will
    c("ch_hb", 17.0, 8_800, "BK-HB1", ("visa", "6006", "HB0001"))
    p("le_hb", 17.2, 8_800, booking="BK-HB-1")
    # planted: unposted payments, a posting Stripe never saw, look-alikes (one card, one amount, two
    # bookings: a charge nobody posted and a posting nobody charged)
    c("ch_u1", 18.0, 26_000, "BK-U1", ("visa", "4009", "U1U1U1"))
    c("ch_u2", 3.0, 3_900, "BK-U2", ("visa", "7117", "U2U2U2"))
    p("le_p1", 19.0, 15_000, booking="BK-P1")
    c("ch_la", 20.0, 18_000, "BK-LA1", ("mastercard", "5100", "LA0001"))
    p("le_la", 20.2, 18_000, booking="BK-LA2", brand="mastercard", last4="5100")
    # the fees of a payout, booked once under the payout's id (per_payout): the payouts asset's to compare
    p(PAYOUT_FEE_ENTRY, 9.0, -1_234, kind="fee", record="po_rome_1128")
    # the previous night's folio, loaded around this one: no provider id, nothing of tonight's
    p("le_prev", -5.0, 51_000, booking="BK-OLD")
    night.store.reindex()
    return night


@dataclass
class PmsNightRun:
    """The PMS-style night seeded in the database and served by the simulator, and a Stripe client."""

    engine: Engine
    client: StripeAdapter
    night: PmsNight
    database_url: str

    def run(self, run_id: str, night: str = NIGHT.isoformat()) -> BatchResult:
        """One batch run of the night (or another) for the property; it must succeed."""
        batch = reconcile_batch(
            self.engine, self.client, BatchRequest(night, (PROPERTY.property_id,)), run_id
        )
        assert [o.status for o in batch.outcomes] == ["succeeded"], batch.outcomes
        return batch

    def rows(self, table: Table, *where: Any) -> list[dict[str, Any]]:
        with self.engine.connect() as connection:
            query = select(table).where(*where).order_by(*table.primary_key.columns)
            return [dict(row) for row in connection.execute(query).mappings()]

    def findings(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The current findings by (category, record_key)."""
        return {
            (row["category"], row["record_key"]): row
            for row in self.rows(discrepancies, discrepancies.c.cleared_at.is_(None))
        }

    def proposals(self) -> dict[tuple[str, str], tuple[str, int]]:
        """The proposed adjustments by their finding: (kind, amount)."""
        return {
            (row["category"], row["record_key"]): (row["kind"], row["amount_minor"])
            for row in self.rows(adjustments, adjustments.c.status == "proposed")
        }

    def matches(self) -> dict[str, dict[str, Any]]:
        return {row["match_key"]: row for row in self.rows(matches)}

    def snapshot(self, night: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """Every row a run or a decision writes (night_reconciliations aside: one row per run), of one
        night or all."""
        tables = (discrepancies, adjustments, matches, match_decisions)
        return {t.name: self.rows(t, *([] if night is None else [t.c.night == night])) for t in tables}


@contextmanager
def served_night(
    night: PmsNight, engine: Engine, database_url: str, simulator: StartSimulator
) -> Iterator[PmsNightRun]:
    """The night seeded in ``engine`` and its provider half served by the simulator over loopback."""
    night.seed(engine)
    night.store.reindex()
    served = simulator(night.store)
    http = ProviderHttp(served.base_url, retry=FAST_RETRY)
    try:
        yield PmsNightRun(engine, StripeAdapter(http), night, database_url)
    finally:
        http.close()
