"""Ledgers as Apaleo, OPERA and Mews keep them, through the batch path (``reconcile_batch``) on SQLite and
PostgreSQL against the Stripe simulator over loopback: one small night per shape, each reconciled to what a
careful hotel accountant expects, and re-run without changing a row.

- cash, bank transfers, OTA-collected money and vouchers beside the cards: never a provider finding nor a
  proposal, whatever case the PMS writes the tender in; a tender nobody knows is an invalid entry;
- a group's charge posted across the group's bookings (with ``bookings.group_id``, and without it by the
  card and approval code the postings carry): one split match, no finding;
- refunds posted as negative payments: paired with the provider's refund;
- a payment declined at the terminal, posted and reversed the same night: no finding, no proposal;
- card types as OPERA writes them (``VA``, ``AX``): a sure match, not a suggestion;
- two identical charges and one posting: one paired, the other one finding with its money.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest
from sqlalchemy import Engine

from recon_pipeline.db.schema import adjustments, discrepancies, matches
from recon_pipeline_tests.support.pms_night import PmsNight, PmsNightRun, served_night
from recon_pipeline_tests.support.provider_fixtures import (
    StartSimulator,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)

Serve = Callable[[PmsNight], AbstractContextManager[PmsNightRun]]
VISA = ("visa", "4242", "A11111")


@pytest.fixture
def serve(engine: Engine, database_url: str, simulator: StartSimulator) -> Iterator[Serve]:
    yield lambda night: served_night(night, engine, database_url, simulator)


def reconciled(run: PmsNightRun) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], str], set[str]]:
    """Run the night twice: the findings (their differences), the proposals (their kinds) and the match
    keys of the first run; the second must change no row."""
    run.run("run-1")
    findings = {key: row["difference_minor"] for key, row in run.findings().items()}
    proposals = {key: kind for key, (kind, _) in run.proposals().items()}
    stored = set(run.matches())
    before = run.snapshot()
    run.run("run-2")
    assert run.snapshot() == before  # a re-run with no change modifies no row
    return findings, proposals, stored


def test_money_the_provider_never_sees_is_no_finding_and_proposes_nothing(serve: Serve) -> None:
    """Apaleo's custom payments (method Cash, BankTransfer, BookingCom) and Mews' external payments beside
    one card payment and one real discrepancy: only the real one is found."""
    night = PmsNight()
    night.charge("ch_card", 9.0, 21_000, "BK-1", VISA)
    night.post("le_card", 9.1, 21_000, booking="BK-1", record="ch_card", tender="Card")
    night.post("le_cash", 10.0, 8_000, booking="BK-2", tender="Cash")
    night.post("le_bank", 11.0, 55_000, booking="BK-3", tender="BankTransfer")
    night.post("le_ota", 12.0, 34_500, booking="BK-4", tender="OTA_COLLECT")
    night.post("le_voucher", 12.5, 5_000, booking="BK-5", tender="voucher")
    night.post("le_cash_refund", 13.0, -2_000, booking="BK-2", tender="cash")
    night.post("le_phantom", 14.0, 7_700, booking="BK-6", tender="card")  # the provider never saw it
    night.post("le_bitcoin", 15.0, 1_000, booking="BK-7", tender="Bitcoin")
    with serve(night) as run:
        findings, proposals, _ = reconciled(run)
    assert findings == {
        ("missing_at_provider", "entry:le_phantom"): -7_700,
        ("invalid_ledger_entry", "entry:le_bitcoin"): 0,
    }
    assert proposals == {("missing_at_provider", "entry:le_phantom"): "reverse_unmatched_payment"}


def test_a_groups_charge_posted_across_its_bookings_is_one_match(serve: Serve) -> None:
    """OPERA routes a group's charge to its master folio and posts it to each member booking: with
    ``bookings.group_id``; Apaleo's block without one, the postings carrying the charge's card and
    approval code."""
    night = PmsNight()
    night.groups.update({"GB-1": "GRP-9", "GB-2": "GRP-9", "GB-3": "GRP-9"})
    night.charge("ch_group", 9.0, 60_000, "GB-1", VISA)
    for n, amount in ((1, 20_000), (2, 25_000), (3, 15_000)):
        night.post(f"le_g{n}", 9.5, amount, booking=f"GB-{n}", brand="VA" if n == 1 else None, last4="4242")
    night.charge("ch_block", 10.0, 30_000, "BB-1", ("mastercard", "5454", "M22222"))
    for n, amount in ((1, 10_000), (2, 20_000)):
        night.post(f"le_b{n}", 10.5, amount, booking=f"BB-{n}", brand="MC", last4="5454", approval="M22222")
    # a charge on the group's master reservation, which holds no posting of its own
    night.groups.update({"GM-0": "GRP-M", "GM-1": "GRP-M", "GM-2": "GRP-M"})
    night.charge("ch_master", 11.0, 42_000, "GM-0", ("amex", "0005", "X66666"))
    night.post("le_m1", 11.5, 21_000, booking="GM-1")
    night.post("le_m2", 11.5, 21_000, booking="GM-2")
    with serve(night) as run:
        findings, proposals, stored = reconciled(run)
    assert findings == {} and proposals == {}
    assert stored == {"ch_group=le_g1+le_g2+le_g3", "ch_block=le_b1+le_b2", "ch_master=le_m1+le_m2"}
    assert {row["rule"] for row in run.rows(matches)} == {"split"}


def test_a_refund_posted_as_a_negative_payment_pairs_with_the_providers_refund(serve: Serve) -> None:
    night = PmsNight()
    night.charge("ch_1", 9.0, 40_000, "BK-1", VISA)
    night.refund("re_1", "ch_1", 120, 15_000)
    night.post("le_1", 9.1, 40_000, booking="BK-1", brand="VA", last4="4242")
    night.post("le_1r", 11.2, -15_000, booking="BK-1", brand="VA", last4="4242")
    night.charge("ch_2", 12.0, 9_000, "BK-2", ("amex", "0005", "X33333"))
    night.refund("re_2", "ch_2", 30, 9_000)
    night.post("le_2", 12.1, 9_000, booking="BK-2", record="ch_2")
    night.post("le_2r", 12.6, -9_000, booking="BK-2", record="ch_2")  # keyed by the charge it refunds
    with serve(night) as run:
        findings, proposals, stored = reconciled(run)
    assert findings == {} and proposals == {}
    assert {"ch_1=le_1", "re_1=le_1r", "re_2=le_2r"} <= stored


def test_a_declined_payment_posted_and_reversed_is_no_finding(serve: Serve) -> None:
    night = PmsNight()
    night.charge("ch_declined", 9.0, 18_000, "BK-1", ("visa", "4000", ""), status="failed")
    night.post("le_plus", 9.05, 18_000, booking="BK-1", brand="VA", last4="4000")
    night.post("le_minus", 9.1, -18_000, booking="BK-1", brand="VA", last4="4000")
    night.charge("ch_paid", 9.2, 18_000, "BK-1", ("visa", "4242", "A44444"))  # the guest paid by another card
    night.post("le_paid", 9.3, 18_000, booking="BK-1", brand="VA", last4="4242")
    with serve(night) as run:
        findings, proposals, stored = reconciled(run)
    assert findings == {} and proposals == {}
    assert stored == {"ch_paid=le_paid"}


def test_card_types_as_opera_writes_them_are_the_providers_brands(serve: Serve) -> None:
    """Booking, amount and approval code agree; the card type is OPERA's two-letter code."""
    night = PmsNight()
    night.charge("ch_va", 9.0, 12_000, "BK-1", VISA)
    night.post("le_va", 9.5, 12_000, booking="BK-2", brand="VA", last4="4242", approval="A11111")
    night.charge("ch_ax", 10.0, 13_000, "BK-3", ("amex", "0005", "X55555"))
    night.post("le_ax", 10.5, 13_000, booking=None, brand="AX", last4="0005")
    with serve(night) as run:
        findings, proposals, _ = reconciled(run)
        statuses = {row["match_key"]: row["status"] for row in run.rows(matches)}
    assert findings == {} and proposals == {}
    assert statuses == {"ch_va=le_va": "matched", "ch_ax=le_ax": "matched"}


def test_of_two_identical_charges_and_one_posting_the_unposted_one_is_certain_money(serve: Serve) -> None:
    night = PmsNight()
    night.charge("ch_t1", 9.0, 15_000, "BK-1", ("visa", "4242", "T10001"))
    night.charge("ch_t2", 9.1, 15_000, "BK-1", ("visa", "4242", "T10002"))
    night.post("le_t", 9.5, 15_000, booking="BK-1", brand="Visa", last4="4242")
    with serve(night) as run:
        findings, proposals, stored = reconciled(run)
        [proposal] = run.rows(adjustments, adjustments.c.status == "proposed")
    assert findings == {("missing_in_ledger", "ch_t2:payment"): 15_000}
    assert proposals == {("missing_in_ledger", "ch_t2:payment"): "post_missing_payment"}
    assert proposal["amount_minor"] == 15_000
    assert stored == {"ch_t1=le_t"}
    assert not run.rows(discrepancies, discrepancies.c.category == "ambiguous_match")
