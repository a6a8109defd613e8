"""Orphaned captured payments: money captured, booking still not confirmed after the grace period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from recon_pipeline.categories import FINDING_COLUMNS
from recon_pipeline.providers.objects import records_frame
from recon_pipeline.providers.stripe.client import charge_rows
from recon_pipeline.reconcile.captured import captured_payments, with_ledger_bookings
from recon_pipeline.reconcile.identity import payment_aliases
from recon_pipeline.reconcile.orphans import find_orphaned_captured_payments, orphans_of_nights
from recon_pipeline_tests.support.provider_fixtures import make_charge

NOW = datetime(2025, 3, 16, 12, 0, tzinfo=UTC)
GRACE = timedelta(hours=1)


def captured(
    payment_id: str,
    booking: str | None,
    ago: timedelta,
    amount: int = 10_000,
    currency: str = "EUR",
    source: str = "provider",
) -> dict[str, Any]:
    return {
        "payment_id": payment_id,
        "booking_id": booking,
        "amount_minor": amount,
        "currency": currency,
        "captured_at": pd.Timestamp(NOW - ago),
        "source": source,
    }


def payments(*rows: dict[str, Any]) -> list[dict[str, Any]]:
    """The sightings orphan detection reads (``captured.py``)."""
    return list(rows)


def payment_orders(*rows: dict[str, Any]) -> pd.DataFrame:
    """Captured ``payment_orders`` rows as the night's comparison hands them on."""
    columns = ["payment_id", "booking_id", "amount_minor", "currency", "captured_at", "source"]
    frame = pd.DataFrame(list(rows), columns=columns)
    return frame.astype({"amount_minor": "int64", "captured_at": "datetime64[ns, UTC]"})


def bookings(**statuses: str) -> dict[str, str]:
    return dict(statuses)


def test_captured_payments_of_unconfirmed_or_unknown_bookings_are_orphans() -> None:
    orphans = find_orphaned_captured_payments(
        payments(
            captured("pi_1", "bk_1", timedelta(hours=3, minutes=12)),
            captured("pi_2", "bk_2", timedelta(hours=5)),
            captured("pi_3", "bk_3", timedelta(days=2, hours=4, minutes=5), amount=30_000, currency="JPY"),
            captured("pi_4", "bk_4", timedelta(hours=2)),
            captured("pi_5", "bk_9", timedelta(minutes=90)),
            captured("pi_6", None, timedelta(minutes=61)),
        ),
        bookings(bk_1="confirming", bk_2="confirmed", bk_3="cancelled", bk_4="pending"),
        NOW,
        GRACE,
    )
    assert list(orphans.columns) == list(FINDING_COLUMNS)
    assert orphans["record_key"].tolist() == [
        "payment:pi_1",
        "payment:pi_3",
        "payment:pi_4",
        "payment:pi_5",
        "payment:pi_6",
    ]
    assert orphans["detail"].tolist() == [
        "captured 2025-03-16 08:48 UTC; booking bk_1 is confirming",
        "captured 2025-03-14 07:55 UTC; booking bk_3 is cancelled",
        "captured 2025-03-16 10:00 UTC; booking bk_4 is pending",
        "captured 2025-03-16 10:30 UTC; booking bk_9 does not exist",
        "captured 2025-03-16 10:59 UTC; it names no booking",
    ]
    first = orphans.iloc[1].to_dict()
    assert first | {"detail": None} == {
        "category": "orphaned_captured_payment",
        "record_key": "payment:pi_3",
        "kind": "payment",
        "provider_record_id": "pi_3",
        "ledger_currency": None,
        "ledger_entry_id": None,
        "booking_id": "bk_3",
        "provider_amount_minor": 30_000,
        "ledger_amount_minor": None,
        "difference_minor": 30_000,
        "currency": "JPY",
        "detail": None,
    }
    assert orphans["booking_id"].tolist()[-1] is None
    assert str(orphans["ledger_amount_minor"].dtype) == "Int64"


def test_many_nights_orphans_found_at_once_are_each_nights_own() -> None:
    """Nights with orphans, with none and with no sighting at all, one booking's state read for all: each
    night's frame is what finding its orphans alone gives."""
    nights = [
        payments(captured("pi_1", "bk_1", timedelta(hours=3)), captured("pi_2", "bk_2", timedelta(hours=5))),
        payments(),
        payments(captured("pi_3", "bk_2", timedelta(hours=2))),
        payments(captured("pi_4", None, timedelta(days=1)), captured("pi_5", "bk_3", timedelta(minutes=5))),
    ]
    statuses = bookings(bk_1="pending", bk_2="confirmed")
    at_once = orphans_of_nights(nights, statuses, NOW, GRACE)
    assert [frame["record_key"].tolist() for frame in at_once] == [["payment:pi_1"], [], [], ["payment:pi_4"]]
    for together, sightings in zip(at_once, nights, strict=True):
        alone = find_orphaned_captured_payments(sightings, statuses, NOW, GRACE)
        pd.testing.assert_frame_equal(together, alone, check_exact=True)


def test_captures_younger_than_the_grace_period_wait() -> None:
    orphans = find_orphaned_captured_payments(
        payments(captured("pi_1", "bk_1", timedelta(minutes=59)), captured("pi_2", "bk_1", GRACE)),
        bookings(bk_1="pending"),
        NOW,
        GRACE,
    )
    assert orphans["record_key"].tolist() == ["payment:pi_2"]


def test_a_payment_seen_by_both_sources_counts_once_as_the_provider_saw_it() -> None:
    orphans = find_orphaned_captured_payments(
        payments(
            captured("pi_1", "bk_1", timedelta(hours=2), amount=9_000, source="payment_orders"),
            captured("pi_1", "bk_1", timedelta(hours=2), amount=10_000, source="provider"),
            captured("pi_2", "bk_1", timedelta(hours=2), amount=5_000, source="payment_orders"),
        ),
        bookings(bk_1="confirming"),
        NOW,
        GRACE,
    )
    assert orphans["record_key"].tolist() == ["payment:pi_1", "payment:pi_2"]
    assert orphans["provider_amount_minor"].tolist() == [10_000, 5_000]


def test_a_bare_charge_takes_its_booking_from_the_payment_order_that_attributes_it() -> None:
    """The provider's sighting names no booking (no metadata); the payment_orders row names a confirmed
    one: no orphan. The same payment whose payment order names an unconfirmed booking is one, under it."""
    sightings = [
        captured("ch_bare", None, timedelta(hours=2), source="provider"),
        captured("ch_bare", "bk_confirmed", timedelta(hours=2), source="payment_orders"),
        captured("ch_pending", None, timedelta(hours=2), source="provider"),
        captured("ch_pending", "bk_pending", timedelta(hours=2), source="payment_orders"),
        captured("ch_nobody", None, timedelta(hours=2), source="provider"),
    ]
    orphans = find_orphaned_captured_payments(
        payments(*sightings), bookings(bk_confirmed="confirmed", bk_pending="pending"), NOW, GRACE
    )
    assert orphans["record_key"].tolist() == ["payment:ch_nobody", "payment:ch_pending"]
    assert orphans["booking_id"].tolist() == [None, "bk_pending"]
    assert orphans["detail"].str.endswith(("it names no booking", "booking bk_pending is pending")).all()


def test_the_providers_booking_wins_over_the_payment_orders() -> None:
    orphans = find_orphaned_captured_payments(
        payments(
            captured("ch_1", "bk_pending", timedelta(hours=2), source="provider"),
            captured("ch_1", "bk_confirmed", timedelta(hours=2), source="payment_orders"),
        ),
        bookings(bk_confirmed="confirmed", bk_pending="pending"),
        NOW,
        GRACE,
    )
    assert orphans["booking_id"].tolist() == ["bk_pending"]


def test_a_terminal_charge_takes_its_booking_from_the_folio_posting_that_books_it() -> None:
    """The provider names no booking (a terminal's charge); the ledger payment entry the matcher paired
    with it (keyed by its charge id in the diff's ledger) names a confirmed stay: no orphan. A charge the
    ledger books under no booking stays one; the provider's own booking is never replaced."""
    sightings = payments(
        captured("ch_terminal", None, timedelta(hours=2)),
        captured("ch_walk_in", None, timedelta(hours=2)),
        captured("ch_named", "bk_pending", timedelta(hours=2)),
    )
    ledger = pd.DataFrame(
        {
            "provider_record_id": ["ch_terminal", "ch_terminal", "ch_walk_in", "ch_named", None],
            "kind": ["refund", "payment", "payment", "payment", "payment"],
            "booking_id": ["bk_other", "bk_confirmed", None, "bk_confirmed", "bk_confirmed"],
        }
    )
    filled = with_ledger_bookings(sightings, ledger)
    assert [sighting["booking_id"] for sighting in filled] == ["bk_confirmed", None, "bk_pending"]
    orphans = find_orphaned_captured_payments(
        filled, bookings(bk_confirmed="confirmed", bk_pending="pending"), NOW, GRACE
    )
    assert orphans["record_key"].tolist() == ["payment:ch_named", "payment:ch_walk_in"]
    every_booking_named = payments(captured("ch_1", "bk_1", timedelta(hours=2)))
    assert with_ledger_bookings(every_booking_named, ledger) is every_booking_named


def test_no_captures_no_orphans() -> None:
    orphans = find_orphaned_captured_payments(payments(), bookings(), NOW, GRACE)
    assert orphans.empty
    assert list(orphans.columns) == list(FINDING_COLUMNS)


def test_a_night_whose_every_booking_is_confirmed_has_no_orphan() -> None:
    orphans = find_orphaned_captured_payments(
        payments(
            captured("ch_1", "bk_1", timedelta(hours=3)),
            captured("pi_2", "bk_2", timedelta(hours=4), source="payment_orders"),
        ),
        bookings(bk_1="confirmed", bk_2="confirmed"),
        NOW,
        GRACE,
    )
    assert orphans.empty and list(orphans.columns) == list(FINDING_COLUMNS)


@pytest.mark.parametrize(
    ("charge_id", "intent_id"), [("ch_1", "pi_1"), ("pay_1", "order_1")], ids=["stripe", "razorpay"]
)
def test_a_payment_held_by_charge_id_on_one_side_and_intent_id_on_the_other_is_one_orphan(
    charge_id: str, intent_id: str
) -> None:
    created = int((NOW - timedelta(hours=3)).timestamp())
    charge = make_charge(charge_id, created, booking_id="bk_1", payment_intent=intent_id)
    pulled = records_frame(charge_rows(charge, "prop_a"))
    local = payment_orders(captured(intent_id, "bk_1", timedelta(hours=3), source="payment_orders"))
    both = captured_payments(pulled, local, payment_aliases(pulled))
    orphans = find_orphaned_captured_payments(both, bookings(bk_1="confirming"), NOW, GRACE)
    assert orphans["record_key"].tolist() == [f"payment:{charge_id}"]
    assert orphans["provider_record_id"].tolist() == [intent_id]  # as payment_orders holds it
    assert orphans["provider_amount_minor"].tolist() == [10_000]
