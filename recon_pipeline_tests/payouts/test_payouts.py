"""Payouts traced to property-nights and judged against the bank: the Stripe client against the simulator
(over real HTTP), the night's tracing, sum check and findings on SQLite and PostgreSQL, and the pure rules
(business days, deposit matching, who holds a shared payout's finding)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest
from sqlalchemy import select

from recon_pipeline.categories import (
    PAYOUT_FAILED,
    PAYOUT_NOT_DEPOSITED,
    RECONCILIATION_CATEGORIES,
    empty_findings,
)
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import bank_credits, discrepancies, payout_transactions, payouts
from recon_pipeline.defs.payouts import LOOKBACK_NIGHTS, payouts_schedule
from recon_pipeline.defs.payouts import payouts as payouts_asset
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.payouts import store
from recon_pipeline.payouts.camt import read_statement
from recon_pipeline.payouts.deposit import (
    BankCredit,
    ExpectedDeposit,
    add_business_days,
    arrivals_due_on,
    bank_holidays,
    deposit_days,
    match_deposits,
)
from recon_pipeline.payouts.findings import failed_finding, findings_frame
from recon_pipeline.payouts.night import reconcile_payouts
from recon_pipeline.payouts.trace import TracedTransaction, finding_holder
from recon_pipeline.providers.errors import IncompletePullError
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.payouts import PayoutTransaction
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.providers.stripe.payouts import payout_of
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.seed import seed_world
from recon_pipeline.simulation.demo.world import build_world
from recon_pipeline.storage.findings import save_findings
from recon_pipeline_tests.support.payout_fixtures import (
    ARRIVAL,
    CONNECTED,
    DEADLINE,
    PROPERTIES,
    PayoutWorld,
    payout_store,
    payout_world,
)
from recon_pipeline_tests.support.provider_fixtures import (  # noqa: F401 (fixtures)
    FAST_RETRY,
    StartSimulator,
    simulator_fixture,
    simulator_server_fixture,
)

STATEMENT = Path(__file__).parents[1] / "data" / "camt053_payouts.xml"
DAYS = 3
NO_HOLIDAYS: frozenset[date] = frozenset()


@pytest.fixture(name="world")
def world_fixture(database_url: str, simulator: StartSimulator) -> Iterator[PayoutWorld]:
    with payout_world(database_url, simulator(payout_store())) as world:
        yield world


def run_night(world: PayoutWorld, night: date, run: str = "run-1") -> Any:
    return reconcile_payouts(world.engine, world.client, night, PROPERTIES, DAYS, NO_HOLIDAYS, run)


def table(world: PayoutWorld, which: Any, *order: Any) -> list[dict[str, Any]]:
    with world.engine.connect() as connection:
        return [dict(row) for row in connection.execute(select(which).order_by(*order)).mappings()]


def outstanding(world: PayoutWorld) -> list[tuple[str, str, str, str]]:
    rows = table(world, discrepancies, discrepancies.c.discrepancy_id)
    return sorted(
        (row["property_id"], row["night"], row["category"], row["provider_record_id"])
        for row in rows
        if row["cleared_at"] is None
    )


# --- the Stripe client and the simulator ------------------------------------------------------------


def test_client_reads_the_nights_payouts_and_their_transactions(simulator: StartSimulator) -> None:
    with payout_world("sqlite://", simulator(payout_store())) as world:
        start = datetime(2026, 11, 27, tzinfo=UTC)
        connected = world.client.payouts_arriving(CONNECTED, start, start + timedelta(days=1))
        platform = world.client.payouts_arriving(None, start, start + timedelta(days=1))
        assert sorted(p.payout_id for p in connected) == ["po_conn_paid", "po_failed"]  # not Saturday's
        assert sorted(p.payout_id for p in platform) == ["po_manual", "po_platform_paid"]
        paid = next(p for p in connected if p.payout_id == "po_conn_paid")
        assert (paid.amount_minor, paid.currency, paid.arrival_date, paid.automatic) == (
            19_400,
            "EUR",
            ARRIVAL,
            True,
        )
        failed = next(p for p in connected if p.payout_id == "po_failed")
        assert (failed.status, failed.failure_code) == ("failed", "account_closed")
        moved = world.client.payout_transactions(paid)
        assert moved is not None
        assert sorted(t.source_id or "" for t in moved) == ["ch_c1", "ch_c2", "ch_c3", "re_c1"]  # not itself
        assert sum(t.net_minor for t in moved) == paid.amount_minor
        assert {t.kind for t in moved} == {"payment", "refund"}
        manual = next(p for p in platform if p.payout_id == "po_manual")
        requests_before = world.simulator.stats()
        assert world.client.payout_transactions(manual) is None
        assert world.simulator.stats() == requests_before  # untraceable without asking


def test_simulator_refuses_what_stripe_refuses(simulator: StartSimulator) -> None:
    sim = simulator(payout_store())
    manual = sim.client.get("/v1/balance_transactions", params={"payout": "po_manual"})
    assert manual.status_code == 400
    assert manual.json()["error"]["message"].startswith("Balance transaction history can only be filtered")
    unknown = sim.client.get("/v1/payouts", params={"arrival_date[gte]": 1, "expand": "x"})
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "parameter_unknown"
    other_account = sim.client.get(
        "/v1/balance_transactions",
        params={"payout": "po_conn_paid"},
        headers={"Stripe-Account": "acct_other"},
    )
    assert other_account.status_code == 400 and other_account.json()["error"]["code"] == "resource_missing"
    listed = sim.client.get(
        "/v1/balance_transactions",
        params={"payout": "po_conn_paid", "limit": 2},
        headers={"Stripe-Account": CONNECTED},
    )
    body = listed.json()
    assert body["has_more"] is True and len(body["data"]) == 2 and "payout" not in body["data"][0]


# --- a night of payouts --------------------------------------------------------------------------------


def test_arrival_night_traces_payouts_to_property_nights_and_finds_the_failed_one(world: PayoutWorld) -> None:
    result = run_night(world, ARRIVAL)
    assert (result.payouts, result.traced, result.untraceable, result.failed) == (4, 3, 1, 1)
    assert result.not_deposited == 0 and result.sum_check == "ok"
    by_id = {row["payout_id"]: row for row in table(world, payouts, payouts.c.payout_id)}
    assert sorted(by_id) == ["po_conn_paid", "po_failed", "po_manual", "po_platform_paid"]
    assert by_id["po_conn_paid"]["sum_difference_minor"] == 0 and by_id["po_conn_paid"]["traced"]
    manual = by_id["po_manual"]
    assert (manual["traced"], manual["transactions"], manual["sum_difference_minor"]) == (False, None, None)
    assert by_id["po_platform_paid"]["holder_property_id"] == "lisbon-riverside"  # the larger share
    traced = {
        row["source_id"]: (row["property_id"], row["night"])
        for row in table(world, payout_transactions, payout_transactions.c.transaction_id)
    }
    assert traced == {
        "ch_c1": ("porto-ribeira", "2026-11-24"),
        "ch_c2": ("porto-ribeira", "2026-11-25"),
        "re_c1": ("porto-ribeira", "2026-11-25"),
        "ch_c3": ("porto-ribeira", "2026-11-25"),
        "ch_l1": ("lisbon-riverside", "2026-11-25"),
        "ch_d1": ("denver-lodge", "2026-11-24"),  # 02:00 in Denver, before its 03:00 cutoff
        "ch_c5": ("porto-ribeira", "2026-11-25"),
    }
    assert outstanding(world) == [("porto-ribeira", "2026-11-27", PAYOUT_FAILED, "po_failed")]
    [failed] = [row for row in table(world, discrepancies) if row["category"] == PAYOUT_FAILED]
    assert failed["difference_minor"] == 5_000 and failed["currency"] == "EUR"
    assert "account_closed" in failed["detail"] and failed["record_key"] == "po_failed:payout"

    before = (table(world, payouts, payouts.c.payout_id), table(world, discrepancies))
    again = run_night(world, ARRIVAL, "run-2")
    assert (again.payouts, again.failed) == (4, 1)
    after_payouts = table(world, payouts, payouts.c.payout_id)
    strip = [{k: v for k, v in row.items() if k != "last_seen_at"} for row in after_payouts]
    assert strip == [{k: v for k, v in row.items() if k != "last_seen_at"} for row in before[0]]
    assert table(world, discrepancies) == before[1]  # the finding stays true, nothing new


def test_deadline_night_finds_payouts_the_bank_never_showed_and_a_statement_clears_them(
    world: PayoutWorld,
) -> None:
    assert arrivals_due_on(DEADLINE, DAYS, NO_HOLIDAYS) == [
        date(2026, 11, 27),
        date(2026, 11, 28),
        date(2026, 11, 29),
    ]
    result = run_night(world, DEADLINE)
    assert result.not_deposited == 4 and result.failed == 0  # a failed payout is not "not deposited"
    assert result.payouts == 5  # those due by the night; Monday's is due on Thursday, not read
    night = DEADLINE.isoformat()
    assert outstanding(world) == [
        ("denver-lodge", night, PAYOUT_NOT_DEPOSITED, "po_manual"),  # untraced: the first property
        ("lisbon-riverside", night, PAYOUT_NOT_DEPOSITED, "po_platform_paid"),
        ("porto-ribeira", night, PAYOUT_NOT_DEPOSITED, "po_conn_paid"),
        ("porto-ribeira", night, PAYOUT_NOT_DEPOSITED, "po_saturday"),
    ]
    # The night's reconciliation of the same property-night neither clears nor touches them.
    with world.engine.begin() as connection:
        save_findings(
            connection,
            "porto-ribeira",
            night,
            empty_findings(),
            "rec",
            datetime.now(UTC),
            RECONCILIATION_CATEGORIES,
        )
    assert len(outstanding(world)) == 4

    with world.engine.begin() as connection:
        store.save_credits(connection, read_statement(STATEMENT).credits, datetime.now(UTC))
    again = run_night(world, DEADLINE, "run-2")
    assert again.not_deposited == 2 and again.credits_matched == 2
    assert outstanding(world) == [
        ("denver-lodge", night, PAYOUT_NOT_DEPOSITED, "po_manual"),
        ("porto-ribeira", night, PAYOUT_NOT_DEPOSITED, "po_saturday"),
    ]
    matched = {
        row["matched_payout_id"]: (row["entry_reference"], row["detail_index"])
        for row in table(world, bank_credits, bank_credits.c.entry_reference)
        if row["matched_payout_id"]
    }
    assert matched == {"po_conn_paid": ("BANKREF-0001", 0), "po_platform_paid": ("BANKREF-0002", 0)}
    assert run_night(world, DEADLINE, "run-3").not_deposited == 2


def test_a_payout_whose_transactions_do_not_add_up_is_reported(
    simulator: StartSimulator, sqlite_url: str
) -> None:
    shop = payout_store()
    shop.balance_transactions = [t for t in shop.balance_transactions if t["id"] != "txn_d1"]
    shop.reindex()
    with payout_world(sqlite_url, simulator(shop)) as world:
        result = run_night(world, ARRIVAL)
        assert result.sum_mismatches == {"po_platform_paid": 8_855}
        assert "po_platform_paid off by 8855" in result.sum_check
        [row] = [r for r in table(world, payouts) if r["payout_id"] == "po_platform_paid"]
        assert row["sum_difference_minor"] == 8_855


# --- pure rules -----------------------------------------------------------------------------------------


def test_business_days_skip_weekends_and_holidays() -> None:
    friday = date(2026, 12, 4)
    assert add_business_days(friday, 3, NO_HOLIDAYS) == date(2026, 12, 9)
    assert add_business_days(friday, 3, {date(2026, 12, 8)}) == date(2026, 12, 10)
    assert arrivals_due_on(date(2026, 12, 12), 3, NO_HOLIDAYS) == []  # a Saturday is nobody's deadline
    assert arrivals_due_on(date(2026, 12, 10), 3, NO_HOLIDAYS) == [date(2026, 12, 7)]


def test_a_credit_naming_the_payout_wins_over_one_of_the_same_amount() -> None:
    def credit(reference: str, booked: date, text: str) -> BankCredit:
        return BankCredit("s1", reference, 0, None, booked, None, 10_000, "EUR", text)

    first = ExpectedDeposit("po_a", 10_000, "EUR", date(2026, 12, 4), None)
    second = ExpectedDeposit("po_b", 10_000, "EUR", date(2026, 12, 4), "HOTEL B")
    credits = [
        credit("e1", date(2026, 12, 4), "STRIPE hotel b"),
        credit("e2", date(2026, 12, 7), "STRIPE"),
        credit("e3", date(2026, 12, 30), "po_a"),  # too late to be po_a's
    ]
    matches = match_deposits([first, second], credits)
    assert matches == {("s1", "e1", 0): "po_b", ("s1", "e2", 0): "po_a"}
    other_currency = ExpectedDeposit("po_c", 10_000, "USD", date(2026, 12, 4), None)
    assert match_deposits([other_currency], credits) == {}


def test_a_shared_payouts_finding_is_held_by_its_largest_share_else_the_first_property() -> None:
    def moved(net: int, property_id: str | None) -> TracedTransaction:
        item = PayoutTransaction("t", "po", "ch", "payment", net, 0, net, "EUR", datetime.now(UTC))
        return TracedTransaction(item, property_id, "2026-12-01" if property_id else None)

    shared = [row for row in PROPERTIES if row.provider_account is None]
    assert (
        finding_holder([moved(100, "lisbon-riverside"), moved(300, "denver-lodge")], shared) == "denver-lodge"
    )
    assert (
        finding_holder([moved(200, "lisbon-riverside"), moved(200, "denver-lodge")], shared) == "denver-lodge"
    )
    assert finding_holder([moved(500, None)], shared) == "denver-lodge"  # nothing traced: first by id
    assert finding_holder(None, [PROPERTIES[0]]) == "porto-ribeira"


def test_the_demo_worlds_payouts_add_up_and_trace_to_their_night(
    simulator: StartSimulator, sqlite_url: str
) -> None:
    """The demo seeds one payout per property-night (arriving two days later): each adds up and every
    movement traces back to its property's night, on the connected account and the shared platform."""
    night = date(2026, 12, 1)
    demo = build_world({row.property_id: night for row in DEMO_PROPERTIES}, bookings_per_night=40)
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    seed_world(engine, demo)
    http = ProviderHttp(simulator(demo.store).base_url, retry=FAST_RETRY)
    try:
        arrival = night + timedelta(days=2)
        result = reconcile_payouts(
            engine, StripeAdapter(http), arrival, DEMO_PROPERTIES, DAYS, NO_HOLIDAYS, "demo"
        )
    finally:
        http.close()
    assert (result.payouts, result.traced, result.sum_check) == (
        len(DEMO_PROPERTIES),
        len(DEMO_PROPERTIES),
        "ok",
    )
    with engine.connect() as connection:
        nights = connection.execute(
            select(payout_transactions.c.property_id, payout_transactions.c.night).distinct()
        ).all()
        holders = dict(connection.execute(select(payouts.c.payout_id, payouts.c.holder_property_id)).all())
    engine.dispose()
    assert sorted(nights) == sorted((row.property_id, night.isoformat()) for row in DEMO_PROPERTIES)
    assert sorted(holders.values()) == sorted(row.property_id for row in DEMO_PROPERTIES)


@pytest.mark.slow
def test_the_payouts_asset_reports_the_night_in_its_metadata(
    simulator: StartSimulator, sqlite_url: str
) -> None:
    with payout_world(sqlite_url, simulator(payout_store())) as world, dg.instance_for_test() as instance:
        resources = {
            "recon_db": ReconDatabase(database_url=sqlite_url),
            "provider": ProviderResource(
                provider="simulator", flavour="stripe", base_url=world.simulator.base_url, max_concurrency=2
            ),
        }
        done = dg.materialize(
            [payouts_asset], partition_key=ARRIVAL.isoformat(), instance=instance, resources=resources
        )
        assert done.success
        [materialization] = done.asset_materializations_for_node("payouts")
        metadata = {key: value.value for key, value in materialization.metadata.items()}
        assert metadata == {
            "payouts": 4,
            "traced": 3,
            "untraceable": 1,
            "failed": 1,
            "not_deposited": 0,
            "credits_matched": 0,
            "sum_check": "ok",
        }
        assert outstanding(world) == [("porto-ribeira", "2026-11-27", PAYOUT_FAILED, "po_failed")]


def test_the_schedule_requests_yesterday_and_its_lookback_once_per_day() -> None:
    context = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 12, 10, 6, tzinfo=UTC))
    requests = payouts_schedule(context)
    assert isinstance(requests, list)
    assert [r.partition_key for r in requests][:2] == ["2026-12-09", "2026-12-08"]
    assert len(requests) == LOOKBACK_NIGHTS + 1
    assert len({r.run_key for r in requests}) == len(requests)


def test_bank_holidays_come_from_the_named_country(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECON_BANK_HOLIDAYS", "PT")
    # Portugal: 1 December (Restoration of Independence) and 8 December (Immaculate Conception)
    assert add_business_days(date(2026, 11, 27), 3, bank_holidays()) == date(2026, 12, 3)
    monkeypatch.setenv("RECON_BANK_HOLIDAYS", "XX")
    with pytest.raises(ValueError, match="RECON_BANK_HOLIDAYS: no holiday calendar for country 'XX'"):
        bank_holidays()
    monkeypatch.setenv("RECON_PAYOUT_DEPOSIT_DAYS", "0")
    with pytest.raises(ValueError, match="RECON_PAYOUT_DEPOSIT_DAYS"):
        deposit_days()


def test_a_malformed_payout_fails_the_pull_naming_it(simulator: StartSimulator) -> None:
    shop = payout_store()
    shop.payouts[0]["status"] = "lost"
    with payout_world("sqlite://", simulator(shop)) as world:
        start = datetime(2026, 11, 27, tzinfo=UTC)
        with pytest.raises(IncompletePullError) as failure:
            world.client.payouts_arriving(CONNECTED, start, start + timedelta(days=1))
        assert "po_conn_paid" in str(failure.value.__cause__) and "'lost'" in str(failure.value.__cause__)


def test_the_findings_writer_refuses_another_writers_category(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    payout_finding = findings_frame([failed_finding(next(iter(_payouts_of(payout_store()))))])
    with engine.begin() as connection, pytest.raises(ValueError, match="payout_failed"):
        save_findings(
            connection, "p1", "2026-11-27", payout_finding, "r", datetime.now(UTC), RECONCILIATION_CATEGORIES
        )
    engine.dispose()


def _payouts_of(shop: Any) -> list[Any]:
    return [payout_of(obj, obj["account"]) for obj in shop.payouts]


def test_a_movement_is_owned_by_its_ledger_entry_else_its_finding_never_an_unattributed_report(
    world: PayoutWorld,
) -> None:
    def finding_of(category: str, record_id: str) -> Any:
        frame = empty_findings()
        row = {
            "category": category,
            "record_key": f"{record_id}:payment",
            "kind": "payment",
            "provider_record_id": record_id,
            "difference_minor": 100,
            "currency": "EUR",
        }
        return pd.concat([frame, pd.DataFrame([row])], ignore_index=True)

    now = datetime.now(UTC)
    with world.engine.begin() as connection:
        save_findings(
            connection, "denver-lodge", "2026-11-25", finding_of("missing_in_ledger", "ch_x"), "r", now
        )
        save_findings(
            connection, "denver-lodge", "2026-11-24", finding_of("unattributed_payment", "ch_y"), "r", now
        )
        save_findings(
            connection, "denver-lodge", "2026-11-23", finding_of("amount_mismatch", "ch_l1"), "r", now
        )
        owners = store.source_owners(connection, ["ch_x", "ch_y", "ch_l1", "ch_unknown"])
    assert owners == {"ch_x": "denver-lodge", "ch_l1": "lisbon-riverside"}
