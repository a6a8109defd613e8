"""The event processor over real HTTP to the simulator, on SQLite and PostgreSQL: current provider state
wins over payloads, bookings are confirmed once, failures are retried or dead-lettered, leases expire."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert

from recon_pipeline import cli
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import (
    booking_confirmations,
    bookings,
    payment_event_processing,
    payment_orders,
    properties,
    stale_nights,
)
from recon_pipeline.events.processor import ProcessCounts, process_available
from recon_pipeline.events.queue import claim_batch, complete
from recon_pipeline.providers.http import ProviderHttp, RetryPolicy
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.retry import RetrySchedule
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.processor_harness import CREATED, NIGHT, Harness
from recon_pipeline_tests.support.provider_fixtures import (
    FAST_RETRY,
    StartSimulator,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)

LATE = datetime(2026, 3, 11, 9, 0, tzinfo=UTC)


@pytest.fixture
def harness(database_url: str, simulator: StartSimulator) -> Iterator[Harness]:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            [
                {
                    "property_id": "prop_a",
                    "name": "A",
                    "timezone": "Europe/Berlin",
                    "currency": "EUR",
                    "provider_account": None,
                },
                {
                    "property_id": "prop_c",
                    "name": "C",
                    "timezone": "Asia/Tokyo",
                    "currency": "JPY",
                    "provider_account": "acct_c",
                },
            ],
        )
    yield Harness(engine, simulator(SimulatorStore()))
    engine.dispose()


def _outcomes(h: Harness) -> list[str | None]:
    return [row["outcome"] for row in sorted(h.rows(payment_event_processing), key=lambda row: row["seq"])]


def test_out_of_order_events_end_confirmed_and_captured(harness: Harness) -> None:
    h = harness
    charge, intent = h.add_payment("ooo")
    h.add_booking("bk_ooo")
    h.deliver("evt_succeeded", "payment_intent.succeeded", intent)
    h.deliver("evt_processing", "payment_intent.processing", {**intent, "status": "processing"})

    counts = h.process()

    assert (counts.claimed, counts.processed, counts.retried, counts.dead) == (2, 2, 0, 0)
    assert h.one(bookings, booking_id="bk_ooo")["status"] == "confirmed"
    order = h.one(payment_orders, provider_payment_id=intent["id"])
    assert (order["status"], order["amount_minor"], order["currency"]) == ("captured", 10_000, "EUR")
    assert order["captured_at"] == CREATED and order["booking_id"] == "bk_ooo"
    assert _outcomes(h) == ["booking_confirmed", "booking_already_confirmed"]
    events = h.rows(payment_event_processing)
    assert {(e["status"], e["property_id"], e["night"], e["attempts"]) for e in events} == {
        ("processed", "prop_a", NIGHT, 1)
    }
    assert h.count(stale_nights) == 0  # the night had not closed


def test_a_hold_captured_a_night_later_is_recorded_at_its_capture(harness: Harness) -> None:
    """A stay authorized at check-in the night before and captured tonight: ``captured_at`` is the capture
    (the charge's balance transaction), not the authorization (the charge's ``created``), and the event
    belongs to tonight, the night whose pull and payment orders hold the capture."""
    h = harness
    charge, intent = h.add_payment("stay")
    authorized = int((CREATED - timedelta(days=1)).timestamp())
    charge["created"] = intent["created"] = authorized
    intent["capture_method"] = "manual"
    h.store.reindex()
    h.add_booking("bk_stay")
    h.deliver("evt_captured", "payment_intent.succeeded", intent)

    assert h.process().processed == 1

    order = h.one(payment_orders, provider_payment_id=intent["id"])
    assert (order["status"], order["captured_at"]) == ("captured", CREATED)
    assert [(e["outcome"], e["night"]) for e in h.rows(payment_event_processing)] == [
        ("booking_confirmed", NIGHT)
    ]


def test_duplicate_and_repeated_events_confirm_the_booking_once(harness: Harness) -> None:
    h = harness
    charge, intent = h.add_payment("dup")
    h.add_booking("bk_dup")
    assert [h.deliver("evt_dup", "payment_intent.succeeded", intent) for _ in range(3)] == [
        True,
        False,
        False,
    ]
    h.deliver("evt_charge", "charge.succeeded", charge)
    h.deliver("evt_created", "payment_intent.created", {**intent, "status": "requires_payment_method"})
    first = h.clock.now
    assert h.process(batch_size=1, max_batches=1).processed == 1
    h.clock.now = first + timedelta(minutes=5)
    assert h.process().processed == 2

    assert h.one(bookings, booking_id="bk_dup")["updated_at"] == first  # set once, by the first event
    proof = h.one(booking_confirmations, booking_id="bk_dup")
    assert (proof["event_id"], proof["provider_payment_id"], proof["confirmed_at"]) == (
        "evt_dup",
        intent["id"],
        first,
    )
    assert h.count(booking_confirmations) == 1
    assert _outcomes(h) == ["booking_confirmed", "booking_already_confirmed", "booking_already_confirmed"]


def test_a_stale_payload_yields_the_providers_current_state(harness: Harness) -> None:
    h = harness
    charge, intent = h.add_payment("stale", amount=12_000)
    h.add_booking("bk_stale")
    h.deliver("evt_old", "payment_intent.processing", {**intent, "status": "processing", "amount": 5_000})
    charge.update(amount_refunded=2_000)  # the provider moved on after the event was sent

    h.process()

    order = h.one(payment_orders, provider_payment_id=intent["id"])
    assert (order["status"], order["amount_minor"], order["amount_refunded_minor"]) == (
        "partially_refunded",
        12_000,
        2_000,
    )
    assert h.one(bookings, booking_id="bk_stale")["status"] == "confirmed"


@pytest.mark.parametrize(
    ("refunded", "order_status", "booking_status", "outcome"),
    [
        (3_000, "partially_refunded", "confirmed", "booking_confirmed"),
        (10_000, "refunded", "pending", "payment_refunded"),
    ],
)
def test_refunds(
    harness: Harness, refunded: int, order_status: str, booking_status: str, outcome: str
) -> None:
    h = harness
    charge, intent = h.add_payment("rf")
    charge.update(amount_refunded=refunded, refunded=refunded == charge["amount"])
    h.add_booking("bk_rf")
    h.deliver("evt_rf", "charge.refunded", charge)

    h.process()

    order = h.one(payment_orders, provider_payment_id=intent["id"])
    assert (order["status"], order["amount_refunded_minor"], order["captured_at"]) == (
        order_status,
        refunded,
        CREATED,
    )
    assert h.one(bookings, booking_id="bk_rf")["status"] == booking_status
    assert _outcomes(h) == [outcome]


@pytest.mark.parametrize(
    ("intent_status", "charge_status", "order_status"),
    [
        ("requires_payment_method", "failed", "failed"),
        ("canceled", "succeeded", "failed"),
        ("requires_capture", "succeeded", "authorized"),
    ],
)
def test_uncaptured_payments_leave_the_booking(
    harness: Harness, intent_status: str, charge_status: str, order_status: str
) -> None:
    h = harness
    charge, intent = h.add_payment("unc", status=charge_status, captured=False, fee=None)
    intent["status"] = intent_status
    h.add_booking("bk_unc")
    h.deliver("evt_unc", f"payment_intent.{intent_status}", intent)

    h.process()

    order = h.one(payment_orders, provider_payment_id=intent["id"])
    assert (order["status"], order["captured_at"], order["amount_minor"]) == (order_status, None, 10_000)
    assert h.one(bookings, booking_id="bk_unc")["status"] == "pending"
    assert _outcomes(h) == [f"payment_{order_status}"]
    assert h.count(booking_confirmations) == 0


def test_provider_unavailable_is_retried_later_then_processed(harness: Harness) -> None:
    h = harness
    _, intent = h.add_payment("down")
    h.add_booking("bk_down")
    h.deliver("evt_down", "payment_intent.succeeded", intent)
    h.sim.set_faults(statuses=[503] * FAST_RETRY.max_attempts)

    counts = h.process()

    assert (counts.processed, counts.retried) == (0, 1)
    event = h.one(payment_event_processing, event_id="evt_down")
    assert (event["status"], event["attempts"]) == ("failed", 1)
    assert event["available_at"] > h.clock.now and "503" in event["last_error"]
    assert h.rows(payment_orders) == [] and h.one(bookings, booking_id="bk_down")["status"] == "pending"
    assert h.process().claimed == 0  # not due yet

    h.clock.now += timedelta(hours=2)
    assert h.process().processed == 1
    event = h.one(payment_event_processing, event_id="evt_down")
    assert (event["status"], event["attempts"], event["last_error"]) == ("processed", 2, None)
    assert h.one(bookings, booking_id="bk_down")["status"] == "confirmed"


def test_a_failure_after_the_retry_budget_is_dead_and_stays_visible(harness: Harness) -> None:
    h = harness
    _, intent = h.add_payment("dead")
    h.deliver("evt_dead", "payment_intent.succeeded", intent)
    h.sim.set_faults(statuses=[503] * (FAST_RETRY.max_attempts * 2))
    schedule = RetrySchedule(budget=timedelta(hours=1))

    assert h.process(policy=schedule).retried == 1
    h.clock.now += timedelta(hours=2)
    assert h.process(policy=schedule).dead == 1

    event = h.one(payment_event_processing, event_id="evt_dead")
    assert (event["status"], event["attempts"]) == ("dead", 2)
    assert "ProviderUnavailable" in event["last_error"] and "503" in event["last_error"]
    h.clock.now += timedelta(days=1)
    assert h.process(policy=schedule).claimed == 0  # dead is never claimed again


def test_a_payment_unknown_to_the_provider_is_dead(harness: Harness) -> None:
    h = harness
    h.deliver("evt_404", "payment_intent.succeeded", {"object": "payment_intent", "id": "pi_missing"})

    assert h.process().dead == 1

    event = h.one(payment_event_processing, event_id="evt_404")
    assert event["status"] == "dead" and "does not know payment 'pi_missing' (404)" in event["last_error"]


def test_a_request_the_provider_refuses_for_good_is_dead_at_once_with_its_answer(harness: Harness) -> None:
    h = harness
    _, intent = h.add_payment("refused")
    h.deliver("evt_refused", "payment_intent.succeeded", intent)
    path = f"/v1/payment_intents/{intent['id']}"
    h.sim.set_faults(reject={"path": path, "status": 403, "message": "The key lacks this permission."})

    assert h.process().dead == 1

    event = h.one(payment_event_processing, event_id="evt_refused")
    assert (event["status"], event["attempts"]) == ("dead", 1)  # one try, never retried
    assert f"GET {path}" in event["last_error"] and "lacks this permission" in event["last_error"]
    assert h.sim.stats()["responses_by_status"] == {"403": 1}


def test_a_booking_missing_locally_is_reported_not_a_crash(harness: Harness) -> None:
    h = harness
    _, intent = h.add_payment("nobk")
    h.deliver("evt_nobk", "payment_intent.succeeded", intent)

    assert h.process().processed == 1

    assert _outcomes(h) == ["booking_not_found"]
    order = h.one(payment_orders, provider_payment_id=intent["id"])
    assert (order["status"], order["booking_id"]) == ("captured", "bk_nobk")


def test_a_cancelled_booking_is_never_confirmed(harness: Harness) -> None:
    h = harness
    _, intent = h.add_payment("cx")
    h.add_booking("bk_cx", status="cancelled")
    h.deliver("evt_cx", "payment_intent.succeeded", intent)

    h.process()

    assert h.one(bookings, booking_id="bk_cx")["status"] == "cancelled"
    assert h.count(booking_confirmations) == 0
    assert _outcomes(h) == ["captured_for_cancelled_booking"]
    assert h.one(payment_orders, provider_payment_id=intent["id"])["status"] == "captured"


def test_late_events_mark_the_closed_night_stale_once_per_event(harness: Harness) -> None:
    h = harness
    charge, intent = h.add_payment("late")
    h.add_booking("bk_late")
    h.clock.now = LATE
    h.deliver("evt_late_1", "payment_intent.succeeded", intent)
    h.process()
    mark = h.one(stale_nights, property_id="prop_a", night=NIGHT)
    assert (mark["generation"], mark["marked_at"]) == (1, LATE)

    charge.update(amount_refunded=1_000)
    h.clock.now = LATE + timedelta(hours=1)
    h.deliver("evt_late_2", "charge.refunded", charge)
    h.process()

    mark = h.one(stale_nights, property_id="prop_a", night=NIGHT)
    assert mark["generation"] == 2 and "evt_late_2" in mark["reason"]
    assert h.one(payment_orders, provider_payment_id=intent["id"])["status"] == "partially_refunded"


def test_an_abandoned_claim_is_reclaimed_after_its_lease_and_processed_once(harness: Harness) -> None:
    h = harness
    _, intent = h.add_payment("lease")
    h.add_booking("bk_lease")
    h.deliver("evt_lease", "payment_intent.succeeded", intent)
    lease = timedelta(minutes=1)
    (abandoned,) = claim_batch(h.engine, "crashed", 10, lease, h.clock.now)

    h.clock.now += timedelta(seconds=30)
    assert h.process(lease=lease).claimed == 0  # still leased to the crashed worker
    h.clock.now += timedelta(seconds=31)
    assert h.process(lease=lease).processed == 1

    event = h.one(payment_event_processing, event_id="evt_lease")
    assert (event["status"], event["attempts"], event["locked_by"]) == ("processed", 1, "w1")  # one real try
    with h.engine.begin() as connection:  # the crashed worker wakes up: its lease is gone
        assert not complete(connection, abandoned, "crashed", "overwritten", None, None, h.clock.now)
    assert h.one(payment_event_processing, event_id="evt_lease")["outcome"] == "booking_confirmed"
    assert h.count(booking_confirmations) == 1


def test_attribution_by_connected_account_and_dead_when_unattributable(harness: Harness) -> None:
    h = harness
    _, intent = h.add_payment("acct", property_id=None, account="acct_c", currency="jpy")
    _, orphan = h.add_payment("nowhere", property_id=None, account="acct_unknown")
    h.deliver("evt_acct", "payment_intent.succeeded", intent, account="acct_c")
    h.deliver("evt_nowhere", "payment_intent.succeeded", orphan, account="acct_unknown")

    counts = h.process()

    assert (counts.processed, counts.dead) == (1, 1)
    order = h.one(payment_orders, provider_payment_id=intent["id"])
    assert (order["property_id"], order["currency"], order["booking_id"]) == ("prop_c", "JPY", None)
    processed = h.one(payment_event_processing, event_id="evt_acct")
    assert (processed["outcome"], processed["night"]) == ("no_booking_reference", "2026-03-11")  # Tokyo
    dead = h.one(payment_event_processing, event_id="evt_nowhere")
    assert dead["status"] == "dead" and "cannot attribute payment 'pi_nowhere'" in dead["last_error"]


def test_a_shared_account_attributes_by_payment_orders_and_never_guesses(harness: Harness) -> None:
    """Two properties on one account: a payment without metadata goes to the property payment_orders holds
    it under; one held nowhere is dead with the reason, written under neither property."""
    h = harness
    with h.engine.begin() as connection:
        connection.execute(
            insert(properties).values(
                property_id="prop_d",
                name="D",
                timezone="Asia/Tokyo",
                currency="JPY",
                provider_account="acct_c",
            )
        )
        connection.execute(
            insert(payment_orders).values(
                provider_payment_id="pi_held",
                property_id="prop_d",
                booking_id=None,
                amount_minor=1,
                currency="JPY",
                status="created",
                updated_at=CREATED - timedelta(days=1),
            )
        )
    _, held = h.add_payment("held", property_id=None, account="acct_c", currency="jpy")
    _, unheld = h.add_payment("unheld", property_id=None, account="acct_c", currency="jpy")
    h.deliver("evt_held", "payment_intent.succeeded", held, account="acct_c")
    h.deliver("evt_unheld", "payment_intent.succeeded", unheld, account="acct_c")

    counts = h.process()

    assert (counts.processed, counts.dead) == (1, 1)
    assert h.one(payment_orders, provider_payment_id="pi_held")["property_id"] == "prop_d"
    assert h.rows(payment_orders, provider_payment_id="pi_unheld") == []
    dead = h.one(payment_event_processing, event_id="evt_unheld")
    assert dead["status"] == "dead" and "'acct_c' is not one property's alone" in dead["last_error"]


def test_a_bare_charge_is_fetched_as_a_charge(harness: Harness) -> None:
    h = harness
    charge, _ = h.add_payment("bare")
    charge["payment_intent"] = None
    h.add_booking("bk_bare")
    h.deliver("evt_bare", "charge.succeeded", charge)

    h.process()

    order = h.one(payment_orders, provider_payment_id="ch_bare")
    assert (order["status"], order["amount_minor"]) == ("captured", 10_000)
    assert h.one(bookings, booking_id="bk_bare")["status"] == "confirmed"
    assert h.sim.stats()["requests_by_path"] == {"/v1/charges/ch_bare": 1}


def test_an_older_provider_read_never_overwrites_a_newer_one(harness: Harness) -> None:
    h = harness
    _, intent = h.add_payment("race")
    h.add_booking("bk_race")
    newer = {
        "provider_payment_id": intent["id"],
        "property_id": "prop_a",
        "booking_id": "bk_race",
        "amount_minor": 10_000,
        "amount_refunded_minor": 10_000,
        "currency": "EUR",
        "status": "refunded",
        "captured_at": CREATED,
        "updated_at": h.clock.now + timedelta(seconds=1),  # read after the one this worker is about to make
    }
    with h.engine.begin() as connection:
        connection.execute(insert(payment_orders).values(newer))
    h.deliver("evt_race", "payment_intent.succeeded", intent)

    assert h.process().processed == 1

    assert h.one(payment_orders, provider_payment_id=intent["id"]) == newer
    assert h.one(bookings, booking_id="bk_race")["status"] == "pending"
    assert _outcomes(h) == ["superseded_by_newer_read"]


def test_an_event_about_no_payment_is_processed_without_a_provider_read(harness: Harness) -> None:
    h = harness
    h.deliver("evt_customer", "customer.created", {"object": "customer", "id": "cus_1"})

    assert h.process().processed == 1

    assert _outcomes(h) == ["no_payment_reference"]
    assert h.sim.stats()["api_requests"] == 0


# ----- retry budget: only real tries count ---------------------------------------------------------------
HANGING = RetryPolicy(max_attempts=1, timeout_s=1.0)  # a provider read gives up after 1 s
QUICK_RETRY = RetrySchedule(budget=timedelta(hours=1), base_delay=timedelta(milliseconds=1))


def _wall_clock() -> datetime:
    return datetime.now(UTC)


def _tries_by_event(h: Harness, event_payments: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Per event: (attempts counted, PaymentIntent reads the provider actually received)."""
    reads = h.sim.stats()["requests_by_path"]
    paths = {event_id: f"/v1/payment_intents/{payment_id}" for event_id, payment_id in event_payments.items()}
    return {
        row["event_id"]: (row["attempts"], reads.get(paths[row["event_id"]], 0))
        for row in h.rows(payment_event_processing)
    }


def _process_real_time(h: Harness, retry: RetryPolicy = FAST_RETRY, **options: Any) -> ProcessCounts:
    with ProviderHttp(h.sim.base_url, retry=retry) as http:
        return process_available(h.engine, StripeAdapter(http), "w1", clock=_wall_clock, **options)


@pytest.mark.slow  # waits out leases and retry budgets
def test_a_batch_that_outlives_its_lease_behind_a_hanging_provider_counts_only_real_tries(
    harness: Harness,
) -> None:
    h = harness
    payments = {}
    for name in ("h1", "h2", "h3", "h4"):
        _, intent = h.add_payment(name)
        h.add_booking(f"bk_{name}")
        h.deliver(f"evt_{name}", "payment_intent.succeeded", intent)
        payments[f"evt_{name}"] = intent["id"]
    h.sim.set_faults(slow_ms=3_000)  # every read hangs past the client's 1 s timeout
    lease = timedelta(seconds=1.5)  # two 1 s reads outlive it: the batch's tail is never tried

    first = _process_real_time(h, HANGING, lease=lease, batch_size=4, max_batches=1, policy=QUICK_RETRY)

    # ~2 tries fit in the lease; the rest were claimed, never tried, and handed back
    assert (first.claimed, first.dead, first.retried + first.released) == (4, 0, 4)
    assert first.retried >= 1 and first.released >= 1, first
    tries = _tries_by_event(h, payments)
    assert sorted(attempts for attempts, _ in tries.values()).count(0) == first.released
    assert all(attempts == reads for attempts, reads in tries.values()), tries
    for _ in range(3):  # the outage goes on: more passes, each try counted once, nothing dead
        _process_real_time(h, HANGING, lease=lease, batch_size=4, max_batches=1, policy=QUICK_RETRY)
    tries = _tries_by_event(h, payments)
    assert all(attempts == reads for attempts, reads in tries.values()), tries
    assert {row["status"] for row in h.rows(payment_event_processing)} <= {"failed", "pending"}

    h.sim.set_faults(slow_ms=0)
    counts = _process_real_time(h, lease=lease, policy=QUICK_RETRY)

    assert (counts.processed, counts.dead) == (4, 0)
    final = _tries_by_event(h, payments)
    assert all(attempts == reads for attempts, reads in final.values()), final
    assert {row["status"] for row in h.rows(payment_event_processing)} == {"processed"}
    assert h.count(booking_confirmations) == 4


def _drain_through_outage(h: Harness, outage_s: float, deadline_s: float) -> None:
    """Process events in real time while the provider answers 500 for ``outage_s``, until every event is
    settled (processed or dead) or ``deadline_s`` passed."""
    h.sim.set_faults(fail_after_requests=0)
    started = time.monotonic()
    while time.monotonic() - started < deadline_s:
        if time.monotonic() - started >= outage_s:
            h.sim.set_faults(fail_after_requests=None)
        _process_real_time(h, FAST_RETRY)
        if {row["status"] for row in h.rows(payment_event_processing)} <= {"processed", "dead"}:
            return
        time.sleep(0.2)


@pytest.fixture
def compressed_budget(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Retry budget and backoff in seconds instead of hours, through the settings the processor reads."""

    def compress(budget_s: int) -> None:
        monkeypatch.setenv("RECON_EVENT_RETRY_BUDGET_S", str(budget_s))
        monkeypatch.setenv("RECON_EVENT_RETRY_BASE_DELAY_S", "1")
        monkeypatch.setenv("RECON_EVENT_RETRY_MAX_DELAY_S", "1")

    return compress


@pytest.mark.slow  # waits out leases and retry budgets
def test_an_outage_shorter_than_the_budget_dead_letters_nothing(
    harness: Harness, compressed_budget: Callable[[int], None]
) -> None:
    h = harness
    for name in ("o1", "o2"):
        _, intent = h.add_payment(name)
        h.add_booking(f"bk_{name}")
        h.deliver(f"evt_{name}", "payment_intent.succeeded", intent)
    compressed_budget(30)

    _drain_through_outage(h, outage_s=3.5, deadline_s=20)

    rows = h.rows(payment_event_processing)
    assert {row["status"] for row in rows} == {"processed"}
    assert all(row["attempts"] >= 2 and row["first_failed_at"] is not None for row in rows)
    assert h.count(booking_confirmations) == 2


@pytest.mark.slow  # waits out leases and retry budgets
def test_an_outage_longer_than_the_budget_dead_letters_and_requeue_brings_them_back(
    harness: Harness,
    compressed_budget: Callable[[int], None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    h = harness
    for name in ("d1", "d2"):
        _, intent = h.add_payment(name)
        h.add_booking(f"bk_{name}")
        h.deliver(f"evt_{name}", "payment_intent.succeeded", intent)
    compressed_budget(2)

    _drain_through_outage(h, outage_s=30, deadline_s=10)

    rows = h.rows(payment_event_processing)
    assert {row["status"] for row in rows} == {"dead"} and all(row["attempts"] >= 2 for row in rows)
    monkeypatch.setenv("RECON_DATABASE_URL", h.engine.url.render_as_string(hide_password=False))
    monkeypatch.setenv("USER", "ops-default")
    assert cli.main(["events", "requeue"]) == 2  # nothing named
    assert cli.main(["events", "requeue", "--event-id", "evt_nope"]) == 2  # unknown: nothing changes
    assert cli.main(["events", "requeue", "--event-id", "evt_d1", "--provider", "razorpay"]) == 2
    errors = capsys.readouterr().err.splitlines()  # one line each, naming what is wrong
    assert len(errors) == 3 and "evt_nope" in errors[1] and "not razorpay" in errors[2]
    assert {row["status"] for row in h.rows(payment_event_processing)} == {"dead"}
    assert cli.main(["events", "requeue", "--all-dead", "--provider", "stripe", "--by", "ops-anna"]) == 0

    rows = h.rows(payment_event_processing)
    assert {(r["status"], r["attempts"], r["first_failed_at"], r["requeued_by"]) for r in rows} == {
        ("pending", 0, None, "ops-anna")
    }
    assert all(row["requeued_at"] is not None and "500" in row["last_error"] for row in rows)
    h.sim.set_faults(fail_after_requests=None)
    assert _process_real_time(h).processed == 2
    assert h.count(booking_confirmations) == 2
    assert cli.main(["events", "requeue", "--event-id", "evt_d1"]) == 2  # processed, not dead: refused
