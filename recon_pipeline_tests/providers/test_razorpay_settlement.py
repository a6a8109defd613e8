"""Razorpay's settlement: the T+2 working-day calendar, the settlement recon (fee, GST, dispute items) and
disputes as frame rows, pure and through the simulator on loopback."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from recon_pipeline.errors import ConfigError
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS, with_match_keys
from recon_pipeline.providers import build_client
from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.razorpay import HOLIDAYS_ENV
from recon_pipeline.providers.razorpay.client import (
    FEE_PROVISIONAL,
    FEE_SETTLED,
    RECON_PATH,
    RazorpayAdapter,
    dispute_row,
    night_movements,
)
from recon_pipeline.providers.razorpay.settlement import (
    MAX_RECON_DAYS,
    SETTLEMENT_TZ,
    DisputeMovement,
    SettledFee,
    SettlementCalendar,
    dispute_recon_days,
    parse_holidays,
    read_recon,
    recon_days,
)
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.simulation.host.cards import card_of
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.razorpay.api import render_payment
from recon_pipeline_tests.support.provider_fixtures import (
    FAST_RETRY,
    StartSimulator,
    make_charge,
    simulator_fixture,  # noqa: F401  (fixtures)
)

CALENDAR = SettlementCalendar()
RECON_ITEM_FIELDS = frozenset(
    [
        "entity_id",
        "type",
        "debit",
        "credit",
        "amount",
        "currency",
        "fee",
        "tax",
        "on_hold",
        "settled",
        "created_at",
        "settled_at",
        "settlement_id",
        "description",
        "notes",
        "payment_id",
        "settlement_utr",
        "order_id",
        "order_receipt",
        "method",
        "card_network",
        "card_issuer",
        "card_type",
        "dispute_id",
    ]
)
PROP_A = PropertyAccount("prop_a")


def ist(day: date, hour: int = 10) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=SETTLEMENT_TZ)


# --- the calendar ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("captured", "settles"),
    [
        (date(2026, 1, 21), date(2026, 1, 23)),  # Wednesday → Friday
        (date(2026, 1, 16), date(2026, 1, 20)),  # Friday → Tuesday: the weekend does not count
        (date(2026, 1, 23), date(2026, 1, 28)),  # Friday before Republic Day (Monday 01-26) → Wednesday
        (date(2026, 1, 24), date(2026, 1, 28)),  # a Saturday capture counts from Monday (a holiday here)
        (date(2026, 11, 6), date(2026, 11, 11)),  # Diwali week: Tuesday 11-10 (Balipratipada) is a holiday
        (date(2026, 12, 24), date(2026, 12, 29)),  # Christmas Friday, then the weekend
        (date(2026, 12, 30), date(2027, 1, 1)),  # across the year: 01-01 is a working day in India
        (date(2026, 1, 29), date(2026, 2, 2)),  # across the month and a weekend
    ],
)
def test_settlement_is_t_plus_2_working_days(captured: date, settles: date) -> None:
    assert CALENDAR.settlement_day(captured) == settles


def test_extra_holidays_from_the_setting_are_not_working_days() -> None:
    diwali = SettlementCalendar(parse_holidays("2026-11-09, 2026-11-10"))
    assert not diwali.is_working_day(date(2026, 11, 9)) and CALENDAR.is_working_day(date(2026, 11, 9))
    assert diwali.settlement_day(date(2026, 11, 6)) == date(2026, 11, 12)
    assert parse_holidays("2026-11-09 2026-11-10,,") == {date(2026, 11, 9), date(2026, 11, 10)}
    with pytest.raises(ValueError, match="'2026-13-01' is not a date"):
        parse_holidays("2026-11-09,2026-13-01")
    with pytest.raises(ValueError, match="working days must be from 0 to 10"):
        CALENDAR.working_days_after(date(2026, 1, 1), 11)
    assert CALENDAR.working_days_after(date(2026, 1, 3), 0) == date(2026, 1, 3)


def test_a_dispute_looked_up_by_id_reads_the_month_after_it_opened() -> None:
    opened = datetime(2026, 1, 31, 20, tzinfo=UTC)  # 02-01 01:30 IST
    days = dispute_recon_days([opened])
    assert (days[0], days[-1], len(days)) == (date(2026, 2, 1), date(2026, 3, 3), MAX_RECON_DAYS)


def test_recon_days_are_indian_calendar_days_through_the_working_days_after() -> None:
    # A UTC night from Thursday 2026-01-22 18:30 to Friday 01-23 18:30 UTC is Friday 01-23 00:00 to
    # Saturday 01-24 00:00 IST: one Indian day, read through its 3rd working day (Republic Day skipped).
    night = [datetime(2026, 1, 22, 18, 30, tzinfo=UTC), datetime(2026, 1, 23, 18, 29, 59, tzinfo=UTC)]
    days = recon_days(night, 3, CALENDAR)
    assert days == [date(2026, 1, 23) + timedelta(days=i) for i in range(7)]  # 01-23 .. 01-29
    # One second later the night reaches Saturday: the same working days bound it.
    assert recon_days([night[1] + timedelta(seconds=1)], 3, CALENDAR)[-1] == date(2026, 1, 29)


def test_the_holidays_setting_reaches_the_client(
    monkeypatch: pytest.MonkeyPatch, clients: list[ProviderHttp]
) -> None:
    http = ProviderHttp("http://127.0.0.1:9", retry=FAST_RETRY)
    clients.append(http)
    monkeypatch.setenv(HOLIDAYS_ENV, "2026-11-09")
    adapter = build_client("razorpay", http)
    assert isinstance(adapter, RazorpayAdapter)
    assert adapter.calendar.extra_holidays == {date(2026, 11, 9)}
    monkeypatch.setenv(HOLIDAYS_ENV, "9 Nov")
    with pytest.raises(ConfigError, match=f"{HOLIDAYS_ENV}: '9' is not a date"):
        build_client("razorpay", http)


# --- the settlement recon, pure --------------------------------------------------------------------------


def recon_item(**fields: Any) -> dict[str, Any]:
    """A settlement recon item with Razorpay's fields (a settled payment unless told otherwise)."""
    return {
        "entity_id": "pay_1",
        "type": "payment",
        "debit": 0,
        "credit": 9_764,
        "amount": 10_000,
        "currency": "INR",
        "fee": 236,
        "tax": 36,
        "on_hold": False,
        "settled": True,
        "created_at": 1_769_140_800,
        "settled_at": 1_769_578_200,
        "settlement_id": "setl_1",
        "description": None,
        "notes": "{}",
        "payment_id": None,
        "settlement_utr": "utr1",
        "order_id": None,
        "order_receipt": None,
        "method": "card",
        "card_network": "Visa",
        "card_issuer": "HDFC",
        "card_type": "credit",
        "dispute_id": None,
        **fields,
    }


def dispute_item(entity_id: str, debit: int, credit: int, created_at: int = 1_769_140_800) -> dict[str, Any]:
    return recon_item(
        entity_id=entity_id,
        type="adjustment",
        debit=debit,
        credit=credit,
        amount=debit + credit,
        fee=0,
        tax=0,
        created_at=created_at,
        payment_id="pay_1",
        dispute_id="disp_1",
    )


def test_read_recon_gives_fees_with_their_gst_and_dispute_movements() -> None:
    settled = read_recon(
        [
            recon_item(),
            recon_item(entity_id="rfnd_1", type="refund", debit=1_000, credit=0, fee=0, tax=0),
            recon_item(entity_id="trf_1", type="transfer", debit=500, credit=0, fee=0, tax=0),
            recon_item(entity_id="adj_0", type="adjustment", debit=100, credit=0, fee=0, tax=0),  # no dispute
            dispute_item("adj_1", 10_000, 0),
            dispute_item("adj_2", 0, 10_000, created_at=1_769_227_200),
            dispute_item("adj_3", 10_000, 0) | {"settled": False, "on_hold": True},  # not moved yet
            recon_item(entity_id="pay_2", settled=False, on_hold=True),
        ]
    )
    assert settled.fees == {"pay_1": SettledFee(fee=236, tax=36)}
    withdrawn = DisputeMovement("adj_1", "disp_1", -10_000, "INR", datetime.fromtimestamp(1_769_140_800, UTC))
    reinstated = DisputeMovement("adj_2", "disp_1", 10_000, "INR", datetime.fromtimestamp(1_769_227_200, UTC))
    assert settled.disputes == [withdrawn, reinstated]
    assert (withdrawn.kind, reinstated.kind) == ("dispute", "dispute_reversal")


@pytest.mark.parametrize(
    ("item", "match"),
    [
        (recon_item(type="payout"), r"'pay_1': unknown type 'payout'"),
        (recon_item(tax=300), r"'pay_1': tax 300 exceeds fee 236"),
        (recon_item(tax=None), r"'pay_1': field 'tax'"),
        (recon_item(type="dispute", debit=100, credit=0), r"'pay_1': a dispute item names no dispute_id"),
        (
            recon_item(entity_id="rfnd_1", type="refund", dispute_id="disp_1"),
            r"'rfnd_1': a refund names a dispute",
        ),
        (dispute_item("adj_1", 100, 100), r"'adj_1': a dispute item debits or credits"),
        (dispute_item("adj_1", 0, 0), r"'adj_1': a dispute item debits or credits"),
        (dispute_item("adj_1", 100, 0) | {"currency": "rupees"}, r"'adj_1': field 'currency'"),
    ],
)
def test_read_recon_names_the_bad_item(item: dict[str, Any], match: str) -> None:
    with pytest.raises(ProviderDataError, match=match):
        read_recon([item])


def test_night_movements_keep_the_night_and_merge_one_dispute_kind() -> None:
    def at(entity_id: str, amount: int, hour: int) -> DisputeMovement:
        created = datetime(2026, 1, 23, hour, tzinfo=UTC)
        return DisputeMovement(entity_id, "disp_1", amount, "INR", created)

    gte = int(datetime(2026, 1, 23, tzinfo=UTC).timestamp())
    moved = night_movements(
        [at("adj_2", -50, 9), at("adj_1", -100, 3), at("adj_3", 150, 12)], gte, gte + 36_000
    )
    assert moved == [at("adj_1", -150, 3)]  # the reinstatement at 12:00 is the next window's


def test_dispute_row() -> None:
    charge = make_charge("pay_1", 1_769_140_000, currency="inr")
    payment, card = render_payment(charge, expand_card=True), card_of(charge)
    dispute = {"id": "disp_1", "entity": "dispute", "payment_id": "pay_1", "status": "lost"}
    created = datetime(2026, 1, 23, 12, tzinfo=UTC)
    row = dispute_row(DisputeMovement("adj_1", "disp_1", -10_000, "INR", created), dispute, payment, "prop_a")
    assert row == {
        "provider_record_id": "disp_1",
        "kind": "dispute",
        "charge_id": "pay_1",
        "property_id": "prop_a",
        "booking_id": "bk_pay_1",
        "payment_intent_id": None,
        "amount_minor": -10_000,
        "currency": "INR",
        "status": "lost",
        "settled": True,
        "created_at": created,
        # the disputed payment's card
        "card_brand": card.brand,
        "card_last4": card.last4,
        "approval_code": card.approval_code,
    }
    with pytest.raises(ProviderDataError, match="dispute 'disp_1': unknown status 'needs_response'"):
        dispute_row(
            DisputeMovement("adj_1", "disp_1", -1, "INR", created),
            {**dispute, "status": "needs_response"},
            payment,
            "p",
        )


# --- through the simulator --------------------------------------------------------------------------------


def unix(moment: datetime) -> int:
    return int(moment.timestamp())


def night_of(day: date) -> tuple[datetime, datetime]:
    """The Indian calendar day as a night window (a property in Asia/Kolkata, night starting 00:00)."""
    start = datetime(day.year, day.month, day.day, tzinfo=SETTLEMENT_TZ)
    return start.astimezone(UTC), (start + timedelta(days=1)).astimezone(UTC)


def fee_rows(frame: pd.DataFrame) -> dict[str, tuple[int, str]]:
    rows = frame[frame.kind == "fee"]
    return {r.provider_record_id: (r.amount_minor, r.status) for r in rows.itertuples()}


def test_a_friday_capture_before_a_monday_holiday_gets_its_settled_fee_once_it_settles(
    simulator: StartSimulator, clients: list[ProviderHttp], caplog: pytest.LogCaptureFixture
) -> None:
    friday = date(2026, 1, 23)  # Republic Day is Monday 01-26: T+2 working days is Wednesday 01-28
    charge = make_charge("pay_fri", unix(ist(friday)), currency="inr", fee=236)
    now = [unix(ist(date(2026, 1, 24), 8))]  # the morning after
    store = SimulatorStore(charges=[charge], settled_fees={"pay_fri": 354}, clock=lambda: now[0])
    sim = simulator(store, flavour="razorpay")
    http = ProviderHttp(sim.base_url, retry=FAST_RETRY)
    clients.append(http)
    adapter = RazorpayAdapter(http)
    assert fee_rows(adapter.pull_night(PROP_A, *night_of(friday))) == {"pay_fri": (-236, FEE_PROVISIONAL)}
    now[0] = unix(ist(date(2026, 1, 27), 12))  # Tuesday: three calendar days later, not settled yet
    assert fee_rows(adapter.pull_night(PROP_A, *night_of(friday))) == {"pay_fri": (-236, FEE_PROVISIONAL)}
    now[0] = unix(ist(date(2026, 1, 28), 12))  # Wednesday 11:00 IST has passed: the re-run sees it
    with caplog.at_level(logging.INFO, logger="recon_pipeline.providers.razorpay.client"):
        frame = adapter.pull_night(PROP_A, *night_of(friday))
    assert fee_rows(frame) == {"pay_fri": (-354, FEE_SETTLED)}  # the revised fee, GST included
    assert "settled fees 354 include GST 54" in caplog.text
    assert sim.stats()["requests_by_path"][RECON_PATH] == 3 * 7  # 01-23 to 01-29, three pulls
    by_id = adapter.fetch_records_by_id(PROP_A, ["pay_fri"])
    assert fee_rows(by_id) == {"pay_fri": (-354, FEE_SETTLED)}


def _dispute(
    dispute_id: str, charge: dict[str, Any], status: str, moved: list[tuple[int, datetime]]
) -> dict[str, Any]:
    """A store (Stripe-shaped) dispute whose balance transactions moved ``(amount, when)``."""
    return {
        "id": dispute_id,
        "object": "dispute",
        "amount": charge["amount"],
        "currency": charge["currency"],
        "charge": charge["id"],
        "status": status,
        "reason": "fraudulent",
        "created": unix(moved[0][1]),
        "evidence_details": {"due_by": unix(moved[0][1]) + 7 * 86_400},
        "balance_transactions": [
            {
                "id": f"txn_{dispute_id[5:]}{i}",
                "object": "balance_transaction",
                "amount": amount,
                "currency": charge["currency"],
                "created": unix(at),
                "fee": 0,
                "net": amount,
                "reporting_category": "dispute" if amount < 0 else "dispute_reversal",
                "type": "adjustment",
            }
            for i, (amount, at) in enumerate(moved)
        ],
        "account": None,
    }


def test_a_lost_and_a_won_dispute_are_the_exact_frame_rows(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    paid_on, disputed_on, won_on = date(2026, 1, 5), date(2026, 1, 12), date(2026, 1, 14)
    lost_payment = make_charge(
        "pay_lost", unix(ist(paid_on)), currency="inr", amount=20_000, booking_id="bk_1"
    )
    won_payment = make_charge(
        "pay_won", unix(ist(paid_on, 11)), currency="inr", amount=30_000, booking_id="bk_2"
    )
    other = make_charge("pay_other", unix(ist(paid_on, 12)), currency="inr", property_id="prop_b")
    withdrawn_at, reinstated_at = ist(disputed_on, 9), ist(won_on, 15)
    disputes = [
        _dispute("disp_lost", lost_payment, "lost", [(-20_000, withdrawn_at)]),
        _dispute("disp_won", won_payment, "won", [(-30_000, withdrawn_at), (30_000, reinstated_at)]),
        _dispute("disp_other", other, "lost", [(-10_000, withdrawn_at)]),  # prop_b's: not this property's
    ]
    store = SimulatorStore(
        charges=[lost_payment, won_payment, other],
        disputes=disputes,
        clock=lambda: unix(ist(date(2026, 1, 31))),
    )
    sim = simulator(store, flavour="razorpay")
    http = ProviderHttp(sim.base_url, retry=FAST_RETRY)
    clients.append(http)
    adapter = RazorpayAdapter(http)

    def movements(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
        moved = frame[frame.kind.isin(["dispute", "dispute_reversal"])].sort_values(
            ["provider_record_id", "kind"]
        )
        columns = ["provider_record_id", "kind", "charge_id", "property_id", "booking_id", "amount_minor"]
        return [
            (*row, status, settled, created)
            for *row, status, settled, created in moved[
                [*columns, "status", "settled", "created_at"]
            ].itertuples(index=False)
        ]

    withdrawn = pd.Timestamp(withdrawn_at).tz_convert(UTC)
    disputed_night = adapter.pull_night(PROP_A, *night_of(disputed_on))
    assert movements(disputed_night) == [
        ("disp_lost", "dispute", "pay_lost", "prop_a", "bk_1", -20_000, "lost", True, withdrawn),
        ("disp_won", "dispute", "pay_won", "prop_a", "bk_2", -30_000, "won", True, withdrawn),
    ]
    reinstated = pd.Timestamp(reinstated_at).tz_convert(UTC)
    assert movements(adapter.pull_night(PROP_A, *night_of(won_on))) == [
        ("disp_won", "dispute_reversal", "pay_won", "prop_a", "bk_2", 30_000, "won", True, reinstated),
    ]
    assert movements(adapter.pull_night(PROP_A, *night_of(won_on - timedelta(days=1)))) == []
    by_id = adapter.fetch_records_by_id(PROP_A, ["disp_won", "disp_nope"])
    assert [(r.kind, r.amount_minor) for r in by_id.sort_values("kind").itertuples()] == [
        ("dispute", -30_000),
        ("dispute_reversal", 30_000),
    ]
    # A ledger booking the night's disputes matches them; one booked at another amount is one finding.
    books = disputed_night.assign(
        entry_id=["le_lost", "le_won"],
        posted_at=disputed_night.created_at,
        in_night=True,
        amount_minor=[-19_000, -30_000],
    )
    booked = with_match_keys(books)[list(LEDGER_RECORD_COLUMNS)].astype(LEDGER_RECORD_COLUMNS)
    result = diff_night(disputed_night, booked)
    assert result.matched_count == 1
    found = result.findings[["category", "provider_record_id", "kind", "difference_minor"]]
    assert found.values.tolist() == [["amount_mismatch", "disp_lost", "dispute", -1_000]]
    # The recon lists the withdrawals as adjustments with every field of Razorpay's items.
    day = {"year": 2026, "month": 1, "day": 14, "count": 100}
    items = sim.client.get(RECON_PATH, params=day).json()["items"]
    assert [(i["entity_id"], i["type"], i["debit"], i["dispute_id"]) for i in items] == [
        ("adj_lost0", "adjustment", 20_000, "disp_lost"),
        ("adj_other0", "adjustment", 10_000, "disp_other"),
        ("adj_won0", "adjustment", 30_000, "disp_won"),
    ]
    assert all(set(item) >= RECON_ITEM_FIELDS for item in items)
    # The disputes API as Razorpay serves it.
    listed = sim.client.get("/v1/disputes", params={"count": 10}).json()
    assert [d["id"] for d in listed["items"]] == ["disp_won", "disp_other", "disp_lost"]
    won = sim.client.get("/v1/disputes/disp_won").json()
    assert (won["entity"], won["payment_id"], won["status"], won["amount_deducted"], won["phase"]) == (
        "dispute",
        "pay_won",
        "won",
        0,
        "chargeback",
    )
    assert sim.client.get("/v1/disputes/disp_lost").json()["amount_deducted"] == 20_000
    unknown = sim.client.get("/v1/disputes/disp_nope")
    assert (
        unknown.status_code == 400
        and unknown.json()["error"]["description"] == "The id provided does not exist"
    )
