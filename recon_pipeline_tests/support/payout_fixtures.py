"""A payout world for the payout and bank-import tests: a connected account serving one property and the
platform shared by two, their payouts and balance transactions as Stripe shapes them, and the ledger
entries that say whose the platform's charges are. Amounts in EUR; the payouts arrive on Friday
2026-11-27, so their deposit deadline (3 business days) is Wednesday 2026-12-02."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Engine, insert

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import ledger_entries, properties
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.stripe.api import balance_transaction_object, payout_object
from recon_pipeline_tests.support.provider_fixtures import FAST_RETRY, RunningSimulator

ARRIVAL = date(2026, 11, 27)  # a Friday
DEADLINE = date(2026, 12, 2)  # its third business day after
CONNECTED = "acct_1PortoRibeira"
PROPERTIES = (
    PropertyRow("porto-ribeira", "Porto Ribeira", "Europe/Lisbon", "EUR", "00:00", CONNECTED),
    PropertyRow("lisbon-riverside", "Lisbon Riverside Suites", "Europe/Lisbon", "EUR", "00:00", None),
    PropertyRow("denver-lodge", "Denver Mountain Lodge", "America/Denver", "EUR", "03:00", None),
)


def unix(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def payout(
    payout_id: str,
    amount: int,
    *,
    account: str | None,
    arrival: date = ARRIVAL,
    status: str = "paid",
    automatic: bool = True,
    failure_code: str | None = None,
) -> dict[str, Any]:
    """A EUR payout created two days before it arrives."""
    arrives = unix(arrival.isoformat())  # Stripe's arrival_date: the day's midnight UTC
    return payout_object(
        payout_id,
        amount,
        "EUR",
        arrives,
        arrives - 2 * 86_400,
        account,
        status=status,
        automatic=automatic,
        failure_code=failure_code,
    )


def transaction(
    transaction_id: str,
    payout_id: str,
    source: str,
    category: str,
    amount: int,
    fee: int,
    created: str,
    account: str | None,
) -> dict[str, Any]:
    """A EUR balance transaction a payout carried, created at ``created`` (UTC, ISO 8601)."""
    return balance_transaction_object(
        transaction_id, payout_id, source, category, amount, fee, "EUR", unix(created), account
    )


def own_withdrawal(payout_obj: dict[str, Any]) -> dict[str, Any]:
    """The payout's own balance transaction, which Stripe lists among the payout's transactions."""
    return transaction(
        payout_obj["balance_transaction"],
        payout_obj["id"],
        payout_obj["id"],
        "payout",
        -payout_obj["amount"],
        0,
        "2026-11-25T00:00:00",
        payout_obj["account"],
    )


def payout_store() -> SimulatorStore:
    """The world's payouts: connected paid (3 movements and a refund), platform paid (Lisbon's and
    Denver's charges), connected failed (account_closed), platform manual, connected paid arriving the
    next day, and one arriving on Monday (between the others' arrival and deadline: neither night's)."""
    conn_paid = payout("po_conn_paid", 19_400, account=CONNECTED)
    platform_paid = payout("po_platform_paid", 28_245, account=None)
    failed = payout("po_failed", 5_000, account=CONNECTED, status="failed", failure_code="account_closed")
    manual = payout("po_manual", 7_700, account=None, automatic=False)
    later = payout("po_saturday", 4_100, account=CONNECTED, arrival=date(2026, 11, 28))
    monday = payout("po_monday", 900, account=CONNECTED, arrival=date(2026, 11, 30))  # due on Thursday
    transactions = [
        transaction(
            "txn_c1", "po_conn_paid", "ch_c1", "charge", 10_000, 320, "2026-11-24T10:00:00", CONNECTED
        ),
        transaction(
            "txn_c2", "po_conn_paid", "ch_c2", "charge", 10_000, 320, "2026-11-25T23:30:00", CONNECTED
        ),
        transaction("txn_c3", "po_conn_paid", "re_c1", "refund", -2_000, 0, "2026-11-25T08:00:00", CONNECTED),
        transaction("txn_c4", "po_conn_paid", "ch_c3", "charge", 2_100, 60, "2026-11-25T09:00:00", CONNECTED),
        own_withdrawal(conn_paid),
        transaction(
            "txn_l1", "po_platform_paid", "ch_l1", "charge", 20_000, 610, "2026-11-25T12:00:00", None
        ),
        transaction("txn_d1", "po_platform_paid", "ch_d1", "charge", 9_155, 300, "2026-11-25T09:00:00", None),
        own_withdrawal(platform_paid),
        transaction("txn_f1", "po_failed", "ch_c5", "charge", 5_150, 150, "2026-11-25T10:00:00", CONNECTED),
        own_withdrawal(failed),
        transaction("txn_s1", "po_saturday", "ch_c6", "charge", 4_200, 100, "2026-11-26T10:00:00", CONNECTED),
        own_withdrawal(later),
    ]
    return SimulatorStore(
        payouts=[conn_paid, platform_paid, failed, manual, later, monday], balance_transactions=transactions
    )


@dataclass
class PayoutWorld:
    engine: Engine
    client: StripeAdapter
    simulator: RunningSimulator


@contextmanager
def payout_world(database_url: str, simulator: RunningSimulator) -> Iterator[PayoutWorld]:
    """The database (migrated, with the properties and the platform charges' ledger entries) and a
    Stripe client on the simulator."""
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    posted = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    with engine.begin() as connection:
        connection.execute(insert(properties), [row.row() for row in PROPERTIES])
        connection.execute(
            insert(ledger_entries),
            [
                {
                    "entry_id": f"le_{charge}",
                    "property_id": owner,
                    "booking_id": None,
                    "provider_record_id": charge,
                    "kind": "payment",
                    "amount_minor": amount,
                    "currency": "EUR",
                    "posted_at": posted,
                }
                for charge, owner, amount in (
                    ("ch_l1", "lisbon-riverside", 20_000),
                    ("ch_d1", "denver-lodge", 9_155),
                )
            ],
        )
    http = ProviderHttp(simulator.base_url, retry=FAST_RETRY)
    try:
        yield PayoutWorld(engine, StripeAdapter(http), simulator)
    finally:
        http.close()
        engine.dispose()
