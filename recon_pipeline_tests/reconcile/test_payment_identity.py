"""One finding per money movement, and attribution on shared accounts, end to end through `materialize`:
the demo world seeded in SQLite and PostgreSQL, served by the simulator over loopback.

The same seed builds the same world, so a world whose ledger and ``payment_orders`` name payments by
PaymentIntent (Razorpay: order) id must give exactly the findings, keys and matched counts of the world
that names them by charge id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from recon_pipeline.categories import ORPHANED_CAPTURED_PAYMENT, UNATTRIBUTED_PAYMENT
from recon_pipeline.db.schema import adjustments, discrepancies
from recon_pipeline.nights import night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.reconcile.adjustments import ADJUSTMENT_POLICY
from recon_pipeline.simulation.demo.world import World
from recon_pipeline_tests.support.pipeline_fixtures import (
    NIGHT,
    PROVIDER_WORLDS,
    SeededPipeline,
    asset_metadata,
    seeded,
)
from recon_pipeline_tests.support.postgres import postgres_database
from recon_pipeline_tests.support.provider_fixtures import FLAVOURS

ADJUSTED = tuple(ADJUSTMENT_POLICY)  # the categories that propose a correction


# Worlds of the providers whose payments have a second id (intent or order) for a ledger to book them by.
ALIASED_WORLDS = [world for world in PROVIDER_WORLDS if FLAVOURS[world.values[0][0]].aliases]


def charges_by_id(world: World) -> dict[str, dict[str, Any]]:
    return {charge["id"]: charge for charge in world.store.charges}


def give_razorpay_payments_orders(world: World) -> None:
    """Razorpay: every payment pays an order (``order_…``), as Checkout integrations do."""
    for charge in world.store.charges:
        if charge["id"].startswith("pay_"):
            charge["payment_intent"] = f"order_{charge['id'][4:]}"


def intent_of(charge: dict[str, Any]) -> str:
    intent: str = charge["payment_intent"]
    return intent


def book_by_intent(every: int) -> Callable[[World], None]:
    """Ledger payment and fee entries of every ``every``-th charge name its intent/order id; payment
    orders of unconfirmed bookings (the orphans) and of every third charge are keyed by the other id."""

    def edit(world: World) -> None:
        give_razorpay_payments_orders(world)
        charges = charges_by_id(world)
        order = {charge_id: index for index, charge_id in enumerate(charges)}
        for entry in world.ledger_entries:
            charge = charges.get(entry["provider_record_id"])
            if entry["kind"] in ("payment", "fee") and charge and order[charge["id"]] % every == 0:
                entry["provider_record_id"] = intent_of(charge)
        unconfirmed = {b["booking_id"] for b in world.bookings if b["status"] != "confirmed"}
        by_order_key = {charge["payment_intent"]: charge for charge in charges.values()}
        for index, payment_order in enumerate(world.payment_orders):
            key = payment_order["provider_payment_id"]
            charge = charges.get(key) or by_order_key[key]
            if payment_order["booking_id"] in unconfirmed or index % 3 == 0:
                other = intent_of(charge) if key == charge["id"] else charge["id"]
                payment_order["provider_payment_id"] = other

    return edit


@contextmanager
def fresh_database(kind: str, tmp_path: Path, name: str) -> Iterator[str]:
    """A new empty database of ``kind`` (``sqlite_url`` or ``postgres_url``): two worlds of one test must
    not share one (seeding inserts only rows whose key is new)."""
    if kind == "sqlite_url":
        yield f"sqlite:///{tmp_path / f'{name}.sqlite'}"
    else:
        with postgres_database() as url:
            yield url


def outcome(pipeline: SeededPipeline) -> dict[str, Any]:
    """Per property: the run's success, its findings as (category, record_key) and its matched count."""
    result: dict[str, Any] = {}
    for prop in pipeline.properties:
        run = pipeline.materialize(prop.property_id)
        matched = asset_metadata(run, "discrepancy_report")["matched"]
        result[prop.property_id] = (run.success, sorted(findings(pipeline, prop.property_id)), matched)
    return result


def findings(pipeline: SeededPipeline, property_id: str) -> list[tuple[str, str]]:
    with pipeline.engine.connect() as connection:
        query = select(discrepancies.c.category, discrepancies.c.record_key).where(
            discrepancies.c.property_id == property_id
        )
        return [tuple(row) for row in connection.execute(query)]  # type: ignore[misc]


def adjustment_rows(pipeline: SeededPipeline) -> list[tuple[str, str, str | None, int]]:
    """(property, idempotency key, provider record, amount) of every adjustment, in key order."""
    with pipeline.engine.connect() as connection:
        query = select(
            adjustments.c.property_id,
            adjustments.c.idempotency_key,
            adjustments.c.provider_record_id,
            adjustments.c.amount_minor,
        ).order_by(adjustments.c.idempotency_key)
        return [tuple(row) for row in connection.execute(query)]  # type: ignore[misc]


@pytest.mark.parametrize("world", ALIASED_WORLDS)
@pytest.mark.slow  # Dagster runs
def test_mixed_intent_and_charge_ids_give_the_same_findings_keys_and_matches(
    tmp_path: Path, world: tuple[str, str]
) -> None:
    flavour, database = world
    with (
        fresh_database(database, tmp_path, "plain") as url,
        seeded(url, flavour, edit=give_razorpay_payments_orders) as plain,
    ):
        by_charge = outcome(plain)
        planted_adjustments = adjustment_rows(plain)
    with (
        fresh_database(database, tmp_path, "mixed") as url,
        seeded(url, flavour, edit=book_by_intent(2)) as mixed,
    ):
        by_both = outcome(mixed)
        assert adjustment_rows(mixed) == planted_adjustments
        for prop in mixed.properties:
            assert dict(_count(findings(mixed, prop.property_id))) == mixed.planted(prop.property_id)
        with mixed.engine.connect() as connection:
            details = connection.execute(select(discrepancies.c.detail)).scalars().all()
    assert by_both == by_charge
    assert all(success for success, _keys, _matched in by_both.values())
    assert any(" names it pi_" in d or " names it order_" in d for d in details)  # the ledger's own id


@pytest.mark.parametrize("world", ALIASED_WORLDS)
@pytest.mark.slow  # Dagster runs
def test_a_ledger_booking_everything_by_intent_id_reconciles_clean(
    tmp_path: Path, world: tuple[str, str]
) -> None:
    flavour, database = world
    with (
        fresh_database(database, tmp_path, "by_charge") as url,
        seeded(url, flavour, plant=False) as by_charge,
    ):
        clean = outcome(by_charge)

    def edit(world: World) -> None:
        book_by_intent(1)(world)
        move_an_earlier_nights_payment_into_the_night(world)

    with (
        fresh_database(database, tmp_path, "by_intent") as url,
        seeded(url, flavour, plant=False, edit=edit) as by_intent,
    ):
        assert outcome(by_intent) == clean
        assert adjustment_rows(by_intent) == []
    assert all(success and keys == [] and matched > 100 for success, keys, matched in clean.values())


def move_an_earlier_nights_payment_into_the_night(world: World) -> None:
    """The ledger posts, in the night and by intent id, payments the provider created the night before:
    found by the intent lookup, timing differences, not findings (such an id failed the whole night)."""
    for prop in world.properties:
        window = night_window(NIGHT, prop["timezone"], prop["night_cutoff"])
        earlier = [
            entry
            for entry in world.ledger_entries
            if entry["property_id"] == prop["property_id"]
            and entry["posted_at"] < window.start
            and entry["provider_record_id"].startswith(("pi_", "order_"))
        ]
        assert earlier
        for entry in earlier:
            entry["posted_at"] = window.start + timedelta(minutes=10)


SHARED = (
    PropertyRow("eastporto", "Porto East Suites", "Europe/Lisbon", "EUR", "00:00", "acct_1Shared"),
    PropertyRow("westporto", "Porto West Suites", "Europe/Lisbon", "EUR", "00:00", "acct_1Shared"),
)


def share_one_account(world: World) -> None:
    """Both properties' payments on one connected account: westporto's name their property in metadata,
    eastporto's only through payment_orders; one payment (and its refund) names neither."""
    for charge in world.store.charges:
        if charge["metadata"]["booking_id"] in west_bookings(world):
            charge["metadata"]["property_id"] = "westporto"
    window = night_window(NIGHT, "Europe/Lisbon", "00:00")
    created = int((window.start + timedelta(hours=6)).timestamp())
    nobody = {
        **world.store.charges[0],
        "id": "ch_nobody",
        "payment_intent": "pi_nobody",
        "metadata": {"booking_id": "bk_nobody"},
        "created": created,
        "amount_refunded": 0,
        "refunded": False,
    }
    world.store.charges.append(nobody)
    world.store.refunds.append(
        {
            **world.store.refunds[0],
            "id": "re_nobody",
            "charge": "ch_nobody",
            "payment_intent": "pi_nobody",
            "amount": 1_000,
            "created": created + 600,
            "account": nobody["account"],
        }
    )


def west_bookings(world: World) -> set[str]:
    return {b["booking_id"] for b in world.bookings if b["property_id"] == "westporto"}


@pytest.mark.slow  # Dagster runs
def test_two_properties_on_one_account_never_reconcile_each_others_payments(database_url: str) -> None:
    with seeded(database_url, properties=SHARED, edit=share_one_account) as pipeline:
        ran = {prop.property_id: pipeline.materialize(prop.property_id) for prop in SHARED}
        assert all(run.success for run in ran.values())
        assert pipeline.found("westporto") == pipeline.planted("westporto")
        assert pipeline.found("eastporto") == {**pipeline.planted("eastporto"), UNATTRIBUTED_PAYMENT: 2}
        with pipeline.engine.connect() as connection:
            reported = connection.execute(
                select(discrepancies.c.property_id, discrepancies.c.record_key).where(
                    discrepancies.c.provider_record_id.in_(["ch_nobody", "re_nobody"])
                )
            ).all()
        assert sorted(tuple(row) for row in reported) == [
            ("eastporto", "ch_nobody:payment"),
            ("eastporto", "re_nobody:refund"),
        ]
        charges = charges_by_id(pipeline.world)
        owner = {b["booking_id"]: b["property_id"] for b in pipeline.world.bookings}
        rows = adjustment_rows(pipeline)
        assert len(rows) == sum(
            n for (_p, _n, category), n in pipeline.world.expected.items() if category in ADJUSTED
        )
        for property_id, _key, record_id, _amount in rows:  # each proposal is about its own payment
            charge = charges.get(record_id or "")
            if charge is not None:
                assert owner[charge["metadata"]["booking_id"]] == property_id
        assert not any(record_id in ("ch_nobody", "re_nobody") for _p, _k, record_id, _a in rows)
        orphans = {p: pipeline.found(p).get(ORPHANED_CAPTURED_PAYMENT) for p in owner.values()}
        assert orphans == {"eastporto": 2, "westporto": 2}


def strip_one_booked_charge_bare(world: World) -> str:
    """One of eastporto's charges of the night, confirmed and booked in the ledger by its charge id,
    becomes a bare charge (no metadata, no PaymentIntent): only its ``payment_orders`` row, keyed by the
    charge id, names its property and booking. Returns its id."""
    share_one_account(world)
    window = night_window(NIGHT, "Europe/Lisbon", "00:00")
    east = [b for b in world.bookings if b["property_id"] == "eastporto"]
    confirmed = {b["booking_id"] for b in east if b["status"] == "confirmed"}
    booked = Counter(e["provider_record_id"] for e in world.ledger_entries if e["kind"] == "payment")
    orders = {o["booking_id"]: o for o in world.payment_orders}
    charge = next(
        c
        for c in world.store.charges
        if c["metadata"].get("booking_id") in confirmed
        and booked[c["id"]] == 1
        and c["status"] == "succeeded"
        and c["captured"]
        and not c["amount_refunded"]
        and window.start.timestamp() <= c["created"] < window.end.timestamp()
        and c["metadata"]["booking_id"] in orders
    )
    order = orders[charge["metadata"]["booking_id"]]
    assert order["status"] == "captured"
    order["provider_payment_id"] = charge["id"]
    charge["metadata"] = {}
    charge["payment_intent"] = None
    return str(charge["id"])


@pytest.mark.slow  # Dagster runs
def test_a_bare_charge_attributed_through_payment_orders_to_a_confirmed_booking_is_no_orphan(
    database_url: str,
) -> None:
    bare: list[str] = []
    with seeded(
        database_url, properties=SHARED, edit=lambda world: bare.append(strip_one_booked_charge_bare(world))
    ) as pipeline:
        assert pipeline.materialize("eastporto").success
        with pipeline.engine.connect() as connection:
            about_it = connection.execute(
                select(discrepancies.c.category, discrepancies.c.detail).where(
                    discrepancies.c.provider_record_id == bare[0]
                )
            ).all()
        assert about_it == []
        assert pipeline.found("eastporto") == {**pipeline.planted("eastporto"), UNATTRIBUTED_PAYMENT: 2}


def _count(pairs: list[tuple[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for category, _key in pairs:
        counts[category] = counts.get(category, 0) + 1
    return counts
