"""Razorpay's settlements and Adyen's batch payouts read as payouts, end to end: the registry's client
against the simulator over real HTTP, the payouts night on SQLite and PostgreSQL. Each flavour's world
has one payout that is traced and then deposited (or not, by its deadline), and one the bank refused."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
import razorpay
from sqlalchemy import Engine, insert, select

from recon_pipeline.categories import PAYOUT_FAILED, PAYOUT_NOT_DEPOSITED
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import discrepancies, payout_transactions, payouts, properties
from recon_pipeline.payouts import store
from recon_pipeline.payouts.deposit import BankCredit, add_business_days
from recon_pipeline.payouts.night import reconcile_payouts
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.adyen.payouts import payout_id_of
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.payouts import Payout
from recon_pipeline.providers.razorpay.settlement import SettlementCalendar
from recon_pipeline.simulation.adyen.api import SIMULATOR_MERCHANT_ACCOUNT
from recon_pipeline.simulation.demo.properties import demo_properties
from recon_pipeline.simulation.demo.seed import seed_world
from recon_pipeline.simulation.demo.world import build_world
from recon_pipeline.simulation.host.money import dispute
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.provider_fixtures import (  # noqa: F401 (fixtures)
    FAST_RETRY,
    StartSimulator,
    flavour_of,
    make_charge,
    make_refund,
    simulator_fixture,
    simulator_server_fixture,
)

DAYS = 3
NO_HOLIDAYS: frozenset[date] = frozenset()
FIRST, SECOND = date(2026, 1, 6), date(2026, 1, 7)  # a Tuesday and a Wednesday


@dataclass(frozen=True)
class Case:
    """A flavour's world: its property, how a day's money is paid out, and that payout's id."""

    flavour: str
    prop: PropertyRow
    currency: str
    zone_offset_h: float  # the property's offset from UTC (for creating charges inside its days)

    def payout_day(self, created: date) -> date:
        if self.flavour == "razorpay":
            return SettlementCalendar().settlement_day(created)
        return created + timedelta(days=2)  # Adyen: the simulator's batch two days after

    def payout_id(self, created: date) -> str:
        day = self.payout_day(created)
        if self.flavour == "razorpay":
            return f"setl_sim{day:%Y%m%d}"
        return payout_id_of(SIMULATOR_MERCHANT_ACCOUNT, (day - FIRST).days - 1, "EUR")


CASES = {
    "razorpay": Case(
        "razorpay", PropertyRow("goa-beach", "Goa Beach", "Asia/Kolkata", "INR", "00:00", None), "inr", 5.5
    ),
    "adyen": Case(
        "adyen",
        PropertyRow(
            "amsterdam-canal",
            "Amsterdam Canal",
            "Europe/Amsterdam",
            "EUR",
            "00:00",
            SIMULATOR_MERCHANT_ACCOUNT,
        ),
        "eur",
        1,
    ),
}


def at(case: Case, day: date, hour: int) -> int:
    """Unix time of ``hour`` o'clock on ``day`` at the property."""
    local = datetime(day.year, day.month, day.day, hour, tzinfo=UTC)
    return int((local - timedelta(hours=case.zone_offset_h)).timestamp())


def payout_world_store(case: Case) -> SimulatorStore:
    """The first day: two payments and a refund of one; the second: one payment, whose payout the bank
    refuses. Clock a month later: everything settled and published."""
    prefix = flavour_of(case.flavour).charge_prefix
    ids = [f"{prefix}{n:0{16 - len(prefix)}d}" if case.flavour == "adyen" else f"pay_{n}" for n in (1, 2, 3)]
    first = make_charge(ids[0], at(case, FIRST, 10), amount=50_000, fee=1_180, currency=case.currency)
    charges = [
        first,
        make_charge(ids[1], at(case, FIRST, 15), amount=20_000, fee=472, currency=case.currency),
        make_charge(ids[2], at(case, SECOND, 11), amount=30_000, fee=708, currency=case.currency),
    ]
    refund_id = "rfnd_1" if case.flavour == "razorpay" else "8816000000000001"
    refunds = [make_refund(refund_id, first, at(case, FIRST, 18), 5_000)]
    for obj in (*charges, *refunds):
        obj["account"] = None
    clock = datetime(2026, 2, 6, tzinfo=UTC).timestamp()
    return SimulatorStore(
        charges=charges,
        refunds=refunds,
        failed_payouts={case.payout_id(SECOND): "account_closed"},
        clock=lambda: clock,
    )


@dataclass
class World:
    case: Case
    engine: Engine
    client: ProviderClient


@pytest.fixture(name="world", params=sorted(CASES))
def world_fixture(
    request: pytest.FixtureRequest, database_url: str, simulator: StartSimulator
) -> Iterator[World]:
    case = CASES[request.param]
    flavour = flavour_of(case.flavour)
    running = simulator(payout_world_store(case), api_key=flavour.api_key, flavour=case.flavour)
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(insert(properties), [case.prop.row()])
    http = ProviderHttp(running.base_url, retry=FAST_RETRY)
    try:
        yield World(case, engine, flavour.adapter(http, flavour.api_key))
    finally:
        http.close()
        engine.dispose()


def run_night(world: World, night: date, run: str = "run-1") -> Any:
    return reconcile_payouts(world.engine, world.client, night, [world.case.prop], DAYS, NO_HOLIDAYS, run)


def rows(world: World, table: Any, *order: Any) -> list[dict[str, Any]]:
    with world.engine.connect() as connection:
        return [dict(row) for row in connection.execute(select(table).order_by(*order)).mappings()]


def outstanding(world: World) -> list[tuple[str, str, str]]:
    return sorted(
        (row["night"], row["category"], row["provider_record_id"])
        for row in rows(world, discrepancies, discrepancies.c.discrepancy_id)
        if row["cleared_at"] is None
    )


def arriving(world: World, day: date) -> list[Payout]:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    listed = world.client.payouts_arriving(world.case.prop.provider_account, start, start + timedelta(days=1))
    assert listed is not None
    return listed


def test_a_payout_is_traced_to_its_property_night_and_adds_up(world: World) -> None:
    case = world.case
    [paid] = arriving(world, case.payout_day(FIRST))
    assert (paid.payout_id, paid.status, paid.currency) == (
        case.payout_id(FIRST),
        "paid",
        case.currency.upper(),
    )
    assert paid.amount_minor == 50_000 - 1_180 + 20_000 - 472 - 5_000  # what the bank should receive
    assert paid.statement_descriptor  # the bank reference (Razorpay's UTR, Adyen's payout description)
    moved = world.client.payout_transactions(paid)
    assert moved is not None
    assert sorted((t.kind, t.amount_minor, t.fee_minor, t.net_minor) for t in moved) == [
        ("payment", 20_000, 472, 19_528),
        ("payment", 50_000, 1_180, 48_820),
        ("refund", -5_000, 0, -5_000),
    ]

    result = run_night(world, case.payout_day(FIRST))
    assert (result.payouts, result.traced, result.failed, result.sum_check) == (1, 1, 0, "ok")
    [stored] = rows(world, payouts)
    assert (stored["payout_id"], stored["provider"], stored["traced"]) == (paid.payout_id, case.flavour, True)
    assert stored["sum_difference_minor"] == 0
    nights = {(row["property_id"], row["night"]) for row in rows(world, payout_transactions)}
    assert nights == {(case.prop.property_id, FIRST.isoformat())}
    assert outstanding(world) == []


def test_a_payout_the_bank_refused_is_payout_failed_on_its_arrival_night(world: World) -> None:
    case = world.case
    night = case.payout_day(SECOND)
    [failed] = arriving(world, night)
    assert (failed.payout_id, failed.status) == (case.payout_id(SECOND), "failed")
    result = run_night(world, night)
    assert (result.payouts, result.failed, result.traced) == (1, 1, 1)
    assert outstanding(world) == [(night.isoformat(), PAYOUT_FAILED, failed.payout_id)]
    assert run_night(world, night, "run-2").failed == 1
    assert outstanding(world) == [(night.isoformat(), PAYOUT_FAILED, failed.payout_id)]  # stays true


def test_a_payout_no_bank_credit_pays_by_its_deadline_until_the_statement_shows_it(world: World) -> None:
    case = world.case
    arrival = case.payout_day(FIRST)
    deadline = add_business_days(arrival, DAYS, NO_HOLIDAYS)
    [paid] = arriving(world, arrival)
    result = run_night(world, deadline)
    assert (result.not_deposited, result.failed) == (1, 0)  # the refused one is not "not deposited"
    assert outstanding(world) == [(deadline.isoformat(), PAYOUT_NOT_DEPOSITED, paid.payout_id)]

    credit = BankCredit(
        statement_id="STMT-1",
        entry_reference="BANKREF-1",
        detail_index=0,
        account_iban=None,
        booking_date=arrival + timedelta(days=1),
        value_date=None,
        amount_minor=paid.amount_minor,
        currency=paid.currency,
        remittance_info=f"SETTLEMENT {paid.statement_descriptor}",
    )
    with world.engine.begin() as connection:
        store.save_credits(connection, [credit], datetime.now(UTC))
    again = run_night(world, deadline, "run-2")
    assert (again.not_deposited, again.credits_matched) == (0, 1)
    assert outstanding(world) == []  # deposited: the finding is cleared


def test_the_razorpay_sdk_reads_the_simulators_settlements(simulator: StartSimulator) -> None:
    case = CASES["razorpay"]
    key_id, secret = flavour_of("razorpay").api_key.split(":")
    running = simulator(payout_world_store(case), api_key=f"{key_id}:{secret}", flavour="razorpay")
    client = razorpay.Client(auth=(key_id, secret), base_url=running.base_url)
    paid_id, failed_id = case.payout_id(FIRST), case.payout_id(SECOND)
    window = {"from": at(case, FIRST, 0), "to": at(case, FIRST + timedelta(days=10), 0)}
    listed = client.settlement.all({**window, "count": 1})
    assert (listed["entity"], listed["count"], listed["items"][0]["id"]) == ("collection", 1, failed_id)
    [settlement] = client.settlement.all({**window, "count": 1, "skip": 1})["items"]
    assert set(settlement) == {"id", "entity", "amount", "status", "fees", "tax", "utr", "created_at"}
    assert (settlement["id"], settlement["status"], settlement["fees"]) == (paid_id, "processed", 1_652)
    assert client.settlement.fetch(paid_id) == settlement
    with pytest.raises(razorpay.errors.BadRequestError, match="The id provided does not exist"):
        client.settlement.fetch("setl_nothing")
    with pytest.raises(razorpay.errors.BadRequestError, match="expand.* is/are not required"):
        client.settlement.all({**window, "expand[]": "x"})


def test_a_razorpay_settlement_carries_a_disputes_withdrawal_under_the_dispute(
    simulator: StartSimulator, sqlite_url: str
) -> None:
    case = CASES["razorpay"]
    served = payout_world_store(case)
    served.disputes.append(dispute("disp_1", served.charges[0], at(case, FIRST, 20)))
    served.reindex()
    running = simulator(served, flavour="razorpay")
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(insert(properties), [case.prop.row()])
    with ProviderHttp(running.base_url, retry=FAST_RETRY) as http:
        world = World(case, engine, flavour_of("razorpay").adapter(http))
        [paid] = arriving(world, case.payout_day(FIRST))
        moved = world.client.payout_transactions(paid)
        assert moved is not None
        [withdrawn] = [t for t in moved if t.kind == "dispute"]
        assert (withdrawn.source_id, withdrawn.net_minor) == ("disp_1", -50_000)
        assert paid.amount_minor == sum(t.net_minor for t in moved) == 63_348 - 50_000
        result = run_night(world, case.payout_day(FIRST))
        assert (result.traced, result.sum_check) == (1, "ok")
    engine.dispose()


def test_the_razorpay_demo_world_plants_a_refused_and_an_undeposited_settlement(
    simulator: StartSimulator, database_url: str
) -> None:
    """On a Monday demo night the world holds a payment settling that night (refused by the bank) and
    one settling on the Wednesday before, its deposit deadline being the Monday: the payouts night finds
    exactly those two, held by the property's night."""
    night = date(2026, 12, 7)
    props = demo_properties("razorpay")
    demo = build_world(
        {p.property_id: night for p in props}, bookings_per_night=20, properties=props, flavour="razorpay"
    )
    assert sorted(demo.expected_payouts) == [
        (props[0].property_id, night.isoformat(), PAYOUT_FAILED),
        (props[0].property_id, night.isoformat(), PAYOUT_NOT_DEPOSITED),
    ]
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    seed_world(engine, demo)
    demo.store.clock = lambda: datetime(2026, 12, 8, 12, tzinfo=UTC).timestamp()  # the morning after
    running = simulator(demo.store, flavour="razorpay")
    with ProviderHttp(running.base_url, retry=FAST_RETRY) as http:
        client = flavour_of("razorpay").adapter(http)
        result = reconcile_payouts(engine, client, night, props, DAYS, NO_HOLIDAYS, "demo")
    assert (result.failed, result.not_deposited, result.sum_check) == (1, 1, "ok")
    assert result.traced == result.payouts == 2
    with engine.connect() as connection:
        found = connection.execute(
            select(discrepancies.c.property_id, discrepancies.c.night, discrepancies.c.category)
        ).all()
    engine.dispose()
    assert sorted(found) == sorted(demo.expected_payouts)
