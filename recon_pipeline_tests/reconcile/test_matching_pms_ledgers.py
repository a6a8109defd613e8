"""The matcher on ledgers as PMSs keep them: the smallest night of each shape Apaleo, OPERA and Mews post.

Group folios, refunds posted as negative payments, declined payments the PMS reversed itself, card types
written as two-letter codes; each test's night read as it is without these rules would give findings that
are not real (see docs/matching.md, "Ledgers as PMSs keep them").
"""

from __future__ import annotations

import pytest

from recon_pipeline.reconcile.matching import match_night, with_groups
from recon_pipeline_tests.support.match_frames import charge, folio, matched, night, posting, pull

pytestmark = pytest.mark.fast

# --- group folios ----------------------------------------------------------------------------------------


def test_a_groups_charge_posted_across_its_bookings_is_one_split() -> None:
    """One charge on the master booking, posted by the PMS to each of the group's three bookings (OPERA's
    routing to a master folio): one match, no finding; the card agreeing with one posting is no reason to
    pair it alone as an amount mismatch."""
    outcome = match_night(
        pull(charge("ch_g", amount=45_000, booking="B-1", card="visa 4242", approval="A1B2C3")),
        folio(
            posting("le_1", amount=15_000, booking="B-1", group="G-7", card="VA 4242"),
            posting("le_2", amount=15_000, booking="B-2", group="G-7"),
            posting("le_3", amount=15_000, booking="B-3", group="G-7"),
        ),
    )
    assert matched(outcome) == [("ch_g=le_1+le_2+le_3", "split", "matched")]
    assert night(outcome) == []


def test_a_charge_on_the_groups_master_booking_is_split_across_the_members_postings() -> None:
    """The master reservation holds no posting of its own: its group comes from ``bookings.group_id``."""
    charges = pull(charge("ch_m", amount=40_000, booking="M-0"))
    folio_rows = folio(
        posting("le_1", amount=25_000, booking="M-1", group="G-M"),
        posting("le_2", amount=15_000, booking="M-2", group="G-M"),
    )
    assert matched(match_night(charges, folio_rows)) == []  # without the master booking's group
    outcome = match_night(with_groups(charges, {"M-0": "G-M", "M-1": "G-M", "M-2": "G-M"}), folio_rows)
    assert matched(outcome) == [("ch_m=le_1+le_2", "split", "matched")]
    assert night(outcome) == []


def test_without_a_group_id_the_postings_carrying_the_charges_card_and_approval_code_are_the_split() -> None:
    outcome = match_night(
        pull(charge("ch_g", amount=30_000, booking="B-1", card="mastercard 5454", approval="778899")),
        folio(
            posting("le_1", amount=10_000, booking="B-1", card="MC 5454", approval="778899"),
            posting("le_2", amount=12_000, booking="B-2", card="MC 5454", approval="778899"),
            posting("le_3", amount=8_000, booking="B-3", card="MC 5454", approval="778899"),
            posting("le_x", amount=8_000, booking="B-4", card="AX 0005", approval="123123"),
        ),
    )
    assert matched(outcome) == [("ch_g=le_1+le_2+le_3", "split", "matched")]
    assert night(outcome) == [("missing_at_provider", "entry:le_x")]


def test_a_group_split_that_does_not_sum_is_not_forced() -> None:
    """The group's postings sum to 440.00 for a charge of 450.00: no split pairs; the booking's own
    posting pairs by its card, and its difference is what it is."""
    outcome = match_night(
        pull(charge("ch_g", amount=45_000, booking="B-1", card="visa 4242")),
        folio(
            posting("le_1", amount=15_000, booking="B-1", group="G-7", card="VA 4242"),
            posting("le_2", amount=14_000, booking="B-2", group="G-7"),
            posting("le_3", amount=15_000, booking="B-3", group="G-7"),
        ),
    )
    assert ("ch_g=le_1", "strong_keys", "matched") in matched(outcome)
    assert ("amount_mismatch", "ch_g:payment") in night(outcome)


# --- refunds posted as negative payments -----------------------------------------------------------------


def test_a_negative_payment_pairs_with_the_providers_refund() -> None:
    outcome = match_night(
        pull(
            charge("ch_1", amount=20_000, card="visa 4242"),
            charge("re_1", kind="refund", amount=-5_000, charge_id="ch_1", minute=300),
        ),
        folio(
            posting("le_1", amount=20_000, card="VA 4242"),
            posting("le_2", amount=-5_000, minute=310),
        ),
    )
    assert matched(outcome) == [
        ("ch_1=le_1", "booking_amount", "matched"),
        ("re_1=le_2", "booking_amount", "matched"),
    ]
    assert night(outcome) == []


def test_a_negative_payment_keyed_by_the_charge_it_refunds_pairs_with_that_charges_refund() -> None:
    """Apaleo-style: the refund line names the original payment's PSP reference."""
    outcome = match_night(
        pull(
            charge("ch_1", amount=20_000, booking=None),
            charge("re_1", kind="refund", amount=-20_000, charge_id="ch_1", booking=None, minute=300),
        ),
        folio(
            posting("le_1", amount=20_000, booking="B-9", record_id="ch_1"),
            posting("le_2", amount=-20_000, booking="B-9", record_id="ch_1", minute=310),
        ),
    )
    assert matched(outcome) == [("re_1=le_2", "reference", "matched")]
    assert night(outcome) == []


def test_a_negative_payment_keyed_by_the_refund_is_the_refund() -> None:
    outcome = match_night(
        pull(charge("re_1", kind="refund", amount=-5_000, charge_id="ch_0")),
        folio(posting("le_2", amount=-5_000, record_id="re_1")),
    )
    assert night(outcome) == []


def test_a_negative_payment_the_provider_never_refunded_is_one_finding() -> None:
    outcome = match_night(pull(), folio(posting("le_2", amount=-5_000)))
    assert night(outcome) == [("missing_at_provider", "entry:le_2")]
    assert outcome.ledger["kind"].tolist() == ["refund"]


# --- declined, then reversed ------------------------------------------------------------------------------


def test_a_declined_payment_the_pms_reversed_is_no_finding() -> None:
    """OPERA posts the terminal's +120.00, the decline comes back, the clerk reverses it: −120.00. The
    provider holds a failed charge."""
    outcome = match_night(
        pull(charge("ch_f", amount=12_000, card="visa 4242", status="failed")),
        folio(
            posting("le_1", amount=12_000, card="VA 4242", minute=70),
            posting("le_2", amount=-12_000, card="VA 4242", minute=72),
        ),
    )
    assert night(outcome) == []
    assert matched(outcome) == []
    assert outcome.reversed_entries == ("le_1", "le_2")


def test_a_reversal_keyed_to_the_failed_charge_is_no_finding_either() -> None:
    outcome = match_night(
        pull(charge("ch_f", amount=12_000, status="failed")),
        folio(
            posting("le_1", amount=12_000, record_id="ch_f", minute=70),
            posting("le_2", amount=-12_000, record_id="ch_f", minute=72),
        ),
    )
    assert night(outcome) == []


def test_a_reversal_with_nothing_at_the_provider_is_no_finding() -> None:
    outcome = match_night(
        pull(), folio(posting("le_1", amount=9_900, minute=70), posting("le_2", amount=-9_900, minute=90))
    )
    assert night(outcome) == []


def test_a_payment_refunded_the_same_night_is_no_reversal() -> None:
    """The charge succeeded and was refunded: both legs are the provider's movements, matched as such."""
    outcome = match_night(
        pull(
            charge("ch_1", amount=12_000),
            charge("re_1", kind="refund", amount=-12_000, charge_id="ch_1", minute=200),
        ),
        folio(posting("le_1", amount=12_000, minute=70), posting("le_2", amount=-12_000, minute=210)),
    )
    assert matched(outcome) == [
        ("ch_1=le_1", "booking_amount", "matched"),
        ("re_1=le_2", "booking_amount", "matched"),
    ]
    assert outcome.reversed_entries == ()


def test_legs_that_do_not_net_to_zero_are_each_a_finding() -> None:
    outcome = match_night(
        pull(charge("ch_f", amount=12_000, status="failed")),
        folio(posting("le_1", amount=12_000, minute=70), posting("le_2", amount=-11_000, minute=72)),
    )
    assert night(outcome) == [("missing_at_provider", "entry:le_2"), ("status_mismatch", "ch_f:payment")]


def test_legs_on_two_cards_are_no_reversal() -> None:
    outcome = match_night(
        pull(),
        folio(
            posting("le_1", amount=5_000, card="VA 4242", minute=70),
            posting("le_2", amount=-5_000, card="AX 0005", minute=72),
        ),
    )
    assert night(outcome) == [("missing_at_provider", "entry:le_1"), ("missing_at_provider", "entry:le_2")]


# --- card types as the PMS writes them --------------------------------------------------------------------


@pytest.mark.parametrize("written", ["VA", "VI", "visa", "VISA", "Visa"])
def test_a_card_type_code_is_the_providers_brand(written: str) -> None:
    """Booking, amount and approval code agree; OPERA writes the card type as a code: a sure match."""
    outcome = match_night(
        pull(charge("ch_1", card="visa 4242", approval="T30444")),
        folio(posting("le_1", card=f"{written} 4242", approval="T30444")),
    )
    assert [status for _, _, status in matched(outcome)] == ["matched"]
    assert night(outcome) == []


def test_a_code_for_another_brand_is_another_card_and_an_unknown_spelling_is_no_evidence() -> None:
    other = match_night(
        pull(charge("ch_1", card="visa 4242")), folio(posting("le_1", card="AX 4242", booking=None))
    )
    assert matched(other) == []
    unknown = match_night(
        pull(charge("ch_1", card="visa 4242")), folio(posting("le_1", card="ZQ 4242", booking=None))
    )
    assert matched(unknown) == [("ch_1=le_1", "card_window", "matched")]


def test_a_disputes_withdrawal_posted_as_a_negative_payment_pairs_with_the_dispute() -> None:
    outcome = match_night(
        pull(
            charge("ch_1", amount=20_000),
            charge("dp_1", kind="dispute", amount=-20_000, charge_id="ch_1"),
        ),
        folio(posting("le_1", amount=20_000), posting("le_2", amount=-20_000, minute=90)),
    )
    assert matched(outcome) == [
        ("ch_1=le_1", "booking_amount", "matched"),
        ("dp_1=le_2", "booking_amount", "matched"),
    ]
    assert night(outcome) == []
