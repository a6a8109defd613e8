"""Authorization holds: open across nights, ``authorization_expiring`` judged against the night.

The judgement alone (boundaries, timezones, booking states, hold states), each provider's reading of a
hold from its simulator over loopback, and the pipeline: the demo world's hold lapsing before the next
night ends is found on its night, proposes nothing, clears once captured and stays once lapsed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import select, update

from recon_pipeline.categories import AUTHORIZATION_EXPIRING
from recon_pipeline.db.schema import adjustments, discrepancies, payment_orders
from recon_pipeline.errors import ConfigError
from recon_pipeline.frames import typed_frame
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.nights import NightWindow, night_window
from recon_pipeline.providers import build_client
from recon_pipeline.providers.holds import CAPTURED, LAPSED, OPEN, RELEASED, AuthorizationHold, HoldState
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.objects import PropertyAccount, records_frame
from recon_pipeline.providers.razorpay import CAPTURE_TIMEOUT_ENV
from recon_pipeline.providers.razorpay.holds import DEFAULT_CAPTURE_TIMEOUT, hold_of_payment
from recon_pipeline.providers.stripe.client import charge_rows
from recon_pipeline.providers.stripe.holds import hold_of_charge, hold_of_payment_intent
from recon_pipeline.reconcile.captured import captured_payments_from_provider
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.reconcile.holds import (
    HoldsNight,
    expiring_authorizations,
    expiring_authorizations_of_nights,
)
from recon_pipeline.reconcile.orphans import find_orphaned_captured_payments
from recon_pipeline.simulation.demo.world import World
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, seeded
from recon_pipeline_tests.support.provider_fixtures import (
    FAST_RETRY,
    FLAVOURS,
    T0,
    StartSimulator,
    make_charge,
    make_payment_intent,
)

PROPERTY = "prop_a"
BOOKING = "bk_1"


def window_pair(
    timezone: str, cutoff: str = "00:00", night: str = "2026-11-30"
) -> tuple[NightWindow, NightWindow]:
    tonight = night_window(night, timezone, cutoff)
    return tonight, night_window(tonight.night + timedelta(days=1), timezone, cutoff)


def hold(
    capture_before: datetime | None,
    state: HoldState = OPEN,
    *,
    payment_id: str = "pi_1",
    booking_id: str | None = BOOKING,
    property_id: str | None = PROPERTY,
) -> AuthorizationHold:
    return AuthorizationHold(
        payment_id=payment_id,
        property_id=property_id,
        booking_id=booking_id,
        amount_minor=48_000,
        currency="EUR",
        authorized_at=datetime(2026, 11, 24, 15, tzinfo=UTC),
        capture_before=capture_before,
        state=state,
    )


def judged(
    *holds: AuthorizationHold,
    timezone: str = "UTC",
    cutoff: str = "00:00",
    status: str = "confirmed",
    booking_of: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    tonight, tomorrow = window_pair(timezone, cutoff)
    found = expiring_authorizations(PROPERTY, holds, booking_of or {}, {BOOKING: status}, tonight, tomorrow)
    return list(found.to_dict("records"))


# --- the judgement -------------------------------------------------------------------------------------


def test_a_hold_lapsing_before_the_next_night_ends_is_one_finding_naming_the_payment_intent() -> None:
    [finding] = judged(hold(datetime(2026, 12, 1, 18, tzinfo=UTC)))
    assert finding["category"] == AUTHORIZATION_EXPIRING
    assert finding["provider_record_id"] == "pi_1"
    assert finding["record_key"] == "pi_1:payment"
    assert finding["kind"] == "payment" and finding["booking_id"] == BOOKING
    assert finding["provider_amount_minor"] == 48_000 and finding["difference_minor"] == 48_000
    assert pd.isna(finding["ledger_amount_minor"]) and finding["currency"] == "EUR"
    assert "2026-12-01 18:00 UTC" in finding["detail"] and "night 2026-12-01" in finding["detail"]


@pytest.mark.parametrize(
    ("capture_before", "found"),
    [
        (datetime(2026, 12, 1, 0, 0, tzinfo=UTC), True),  # exactly at tonight's end: the next night
        (datetime(2026, 12, 2, 0, 0, tzinfo=UTC) - timedelta(seconds=1), True),
        (datetime(2026, 12, 2, 0, 0, tzinfo=UTC), False),  # exactly at the next night's end: not before it
        (datetime(2026, 12, 1, 0, 0, tzinfo=UTC) - timedelta(seconds=1), False),  # the previous night's
        (datetime(2026, 12, 20, tzinfo=UTC), False),  # open for days yet
    ],
)
def test_the_next_night_is_half_open(capture_before: datetime, found: bool) -> None:
    assert len(judged(hold(capture_before))) == int(found)


def test_the_holds_of_many_property_nights_judged_at_once_are_each_judged_alone() -> None:
    """Properties of other timezones and cut-offs, a night with no finding, one hold lapsed, one another
    property's: each night's frame is what judging it alone gives."""
    lapsing = datetime(2026, 12, 1, 18, tzinfo=UTC)
    nights = []
    for timezone, cutoff, holds, status in (
        ("UTC", "00:00", [hold(lapsing), hold(lapsing, LAPSED, payment_id="pi_2")], "confirmed"),
        ("Asia/Tokyo", "04:00", [hold(lapsing)], "confirmed"),
        ("UTC", "00:00", [hold(lapsing)], "cancelled"),
        (
            "America/New_York",
            "03:00",
            [hold(lapsing), hold(lapsing, payment_id="pi_3", property_id="prop_b")],
            "confirmed",
        ),
    ):
        tonight, tomorrow = window_pair(timezone, cutoff)
        nights.append(HoldsNight(PROPERTY, holds, {}, {BOOKING: status}, tonight, tomorrow))
    at_once = expiring_authorizations_of_nights(nights)
    alone = [
        expiring_authorizations(n.property_id, n.holds, n.booking_of, n.booking_status, n.night, n.next_night)
        for n in nights
    ]
    assert [len(frame) for frame in at_once] == [2, 1, 0, 1]
    for together, by_itself in zip(at_once, alone, strict=True):
        pd.testing.assert_frame_equal(together, by_itself, check_exact=True)


def test_the_nights_are_the_propertys_own() -> None:
    """Night 2026-11-30 in Denver with a 03:00 cutoff ends 2026-12-01 10:00 UTC; the next at 12-02 10:00."""
    capture_before = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)
    assert judged(hold(capture_before), timezone="America/Denver", cutoff="03:00")
    assert not judged(hold(capture_before), timezone="UTC")
    earlier = hold(datetime(2026, 12, 1, 9, 30, tzinfo=UTC))  # before Denver's night ends: the previous one's
    assert not judged(earlier, timezone="America/Denver", cutoff="03:00")
    # Tokyo's next night ends 2026-12-01 15:00 UTC
    assert judged(hold(datetime(2026, 12, 1, 14, 59, tzinfo=UTC)), timezone="Asia/Tokyo")
    assert not judged(hold(datetime(2026, 12, 1, 15, 0, tzinfo=UTC)), timezone="Asia/Tokyo")


def test_the_night_ending_on_a_dst_change_is_judged_by_the_wall_clock() -> None:
    """Lisbon leaves summer time on 2026-10-25 at 02:00: the night of 10-25 is 25 hours long."""
    tonight, tomorrow = window_pair("Europe/Lisbon", night="2026-10-24")
    assert tomorrow.duration == timedelta(hours=25)
    late = hold(tomorrow.end - timedelta(minutes=30))
    assert len(expiring_authorizations(PROPERTY, [late], {}, {BOOKING: "confirmed"}, tonight, tomorrow)) == 1


@pytest.mark.parametrize("status", ["cancelled", "pending", "confirming"])
def test_a_hold_of_a_booking_not_confirmed_is_no_finding(status: str) -> None:
    assert not judged(hold(datetime(2026, 12, 1, 18, tzinfo=UTC)), status=status)


def test_a_hold_of_no_known_booking_is_no_finding() -> None:
    assert not judged(hold(datetime(2026, 12, 1, 18, tzinfo=UTC), booking_id="bk_unknown"))
    assert not judged(hold(datetime(2026, 12, 1, 18, tzinfo=UTC), booking_id=None))


def test_the_payment_orders_booking_serves_when_the_provider_names_none() -> None:
    unnamed = hold(datetime(2026, 12, 1, 18, tzinfo=UTC), booking_id=None)
    [finding] = judged(unnamed, booking_of={"pi_1": BOOKING})
    assert finding["booking_id"] == BOOKING


@pytest.mark.parametrize(
    ("state", "found"), [(OPEN, True), (LAPSED, True), (CAPTURED, False), (RELEASED, False)]
)
def test_captured_and_released_holds_are_no_finding(state: HoldState, found: bool) -> None:
    assert len(judged(hold(datetime(2026, 12, 1, 18, tzinfo=UTC), state))) == int(found)


def test_a_lapsed_hold_says_the_revenue_is_lost() -> None:
    [finding] = judged(hold(datetime(2026, 12, 1, 18, tzinfo=UTC), LAPSED))
    assert "lapsed uncaptured at 2026-12-01 18:00 UTC" in finding["detail"]


def test_another_propertys_hold_and_a_hold_without_deadline_are_no_finding() -> None:
    assert not judged(hold(datetime(2026, 12, 1, 18, tzinfo=UTC), property_id="prop_b"))
    assert judged(hold(datetime(2026, 12, 1, 18, tzinfo=UTC), property_id=None))
    assert not judged(hold(None))


def test_one_payment_is_one_finding_ordered_by_key() -> None:
    before = datetime(2026, 12, 1, 18, tzinfo=UTC)
    found = judged(*(hold(before, payment_id=payment_id) for payment_id in ("pi_2", "pi_1", "pi_2")))
    assert [f["record_key"] for f in found] == ["pi_1:payment", "pi_2:payment"]


# --- reading holds: pure mapping ------------------------------------------------------------------------


def stripe_hold_objects(
    capture_before: int | None, *, captured: bool = False, charge_id: str = "ch_h1"
) -> tuple[dict[str, Any], dict[str, Any]]:
    charge = make_charge(charge_id, T0, captured=captured, fee=300 if captured else None, booking_id="bk_h1")
    if capture_before is not None:
        charge["payment_method_details"] = {"type": "card", "card": {"capture_before": capture_before}}
    return charge, make_payment_intent(charge)


def test_stripe_intent_states_as_holds() -> None:
    charge, intent = stripe_hold_objects(T0 + 7 * 86_400)
    open_hold = hold_of_payment_intent(intent, charge)
    assert open_hold is not None and open_hold.state == OPEN
    assert open_hold.payment_id == intent["id"] and open_hold.booking_id == "bk_h1"
    assert open_hold.capture_before == datetime.fromtimestamp(T0 + 7 * 86_400, UTC)
    assert open_hold.authorized_at == datetime.fromtimestamp(T0, UTC) and open_hold.currency == "EUR"
    lapsed = hold_of_payment_intent(
        {**intent, "status": "canceled", "cancellation_reason": "automatic"}, charge
    )
    released = hold_of_payment_intent(
        {**intent, "status": "canceled", "cancellation_reason": "requested_by_customer"}, charge
    )
    assert lapsed is not None and lapsed.state == LAPSED
    assert released is not None and released.state == RELEASED
    captured_charge, captured_intent = stripe_hold_objects(T0 + 7 * 86_400, captured=True)
    captured = hold_of_payment_intent(captured_intent, captured_charge)
    assert captured is not None and captured.state == CAPTURED


def test_stripe_payments_that_never_were_holds_are_none() -> None:
    charge, intent = stripe_hold_objects(None, captured=True)  # automatic capture: no deadline ever
    assert hold_of_payment_intent(intent, charge) is None
    assert hold_of_payment_intent({**intent, "latest_charge": None}, None) is None
    failed, failed_intent = stripe_hold_objects(None)
    failed["status"] = "failed"
    assert hold_of_payment_intent(failed_intent, failed) is None
    assert hold_of_charge(failed) is None


def test_a_bare_stripe_charge_uncaptured_is_open_and_refunded_is_released() -> None:
    charge, _ = stripe_hold_objects(T0 + 86_400)
    bare = {**charge, "payment_intent": None}
    assert (held := hold_of_charge(bare)) is not None and held.state == OPEN and held.payment_id == "ch_h1"
    assert (gone := hold_of_charge({**bare, "refunded": True})) is not None and gone.state == RELEASED


def test_razorpay_payment_states_as_holds() -> None:
    payment = {
        "id": "pay_h1",
        "entity": "payment",
        "amount": 500_000,
        "currency": "INR",
        "status": "authorized",
        "captured": False,
        "notes": {"property_id": "mumbai", "booking_id": "bk_h1"},
        "created_at": T0,
    }
    held = hold_of_payment(payment, DEFAULT_CAPTURE_TIMEOUT)
    assert held is not None and held.state == OPEN and held.booking_id == "bk_h1"
    assert held.capture_before == datetime.fromtimestamp(T0, UTC) + timedelta(days=3)
    lapsed = hold_of_payment({**payment, "status": "refunded"}, DEFAULT_CAPTURE_TIMEOUT)
    assert lapsed is not None and lapsed.state == LAPSED  # auto-refunded: never captured
    captured = hold_of_payment({**payment, "status": "captured", "captured": True}, DEFAULT_CAPTURE_TIMEOUT)
    assert captured is not None and captured.state == CAPTURED
    assert hold_of_payment({**payment, "status": "failed"}, DEFAULT_CAPTURE_TIMEOUT) is None


# --- reading holds from the simulators over loopback ------------------------------------------------------


def http_of(base_url: str, clients: list[ProviderHttp]) -> ProviderHttp:
    http = ProviderHttp(base_url, retry=FAST_RETRY)
    clients.append(http)
    return http


def test_stripe_reads_holds_by_id_in_their_current_state(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    deadline = T0 + 7 * 86_400
    open_charge, open_intent = stripe_hold_objects(deadline, charge_id="ch_open")
    lapsed_charge, lapsed_intent = stripe_hold_objects(deadline, charge_id="ch_lapsed")
    lapsed_intent.update(status="canceled", cancellation_reason="automatic")
    captured_charge, captured_intent = stripe_hold_objects(deadline, captured=True, charge_id="ch_captured")
    store = SimulatorStore(
        charges=[open_charge, lapsed_charge, captured_charge],
        payment_intents=[open_intent, lapsed_intent, captured_intent],
    )
    sim = simulator(store)
    adapter = FLAVOURS["stripe"].adapter(http_of(sim.base_url, clients))
    account = PropertyAccount(PROPERTY)
    # the PMS may keep a hold by its charge id: it is read, and named, as its PaymentIntent
    asked = ["pi_open", "ch_lapsed", "pi_captured", "pi_unknown", "order_x"]
    holds = {h.payment_id: h for h in adapter.authorization_holds(account, asked)}
    assert {pid: h.state for pid, h in holds.items()} == {
        "pi_open": OPEN,
        "pi_lapsed": LAPSED,
        "pi_captured": CAPTURED,
    }
    assert holds["pi_open"].capture_before == datetime.fromtimestamp(deadline, UTC)
    assert holds["pi_open"].amount_minor == open_charge["amount"]
    log = sim.client.get("/_simulator/requests").json()["requests"]
    paths = {entry["path"].rsplit("/", 1)[0] for entry in log}
    assert paths == {"/v1/charges", "/v1/payment_intents"}  # read by id, never listed
    open_intent.update(status="succeeded", amount_received=open_intent["amount"])  # captured since
    open_charge.update(captured=True, amount_captured=open_charge["amount"])
    [now] = adapter.authorization_holds(account, ["pi_open"])
    assert now.state == CAPTURED


def test_stripe_reads_holds_of_a_connected_account_only_with_its_header(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    charge, intent = stripe_hold_objects(T0 + 86_400)
    charge["account"] = intent["account"] = "acct_1Hotel"
    sim = simulator(SimulatorStore(charges=[charge], payment_intents=[intent]))
    adapter = FLAVOURS["stripe"].adapter(http_of(sim.base_url, clients))
    assert adapter.authorization_holds(PropertyAccount(PROPERTY), [intent["id"]]) == []
    [held] = adapter.authorization_holds(PropertyAccount(PROPERTY, "acct_1Hotel"), [intent["id"]])
    assert held.state == OPEN


def test_razorpay_reads_an_authorized_payment_as_an_open_hold_then_lapsed(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    charge = make_charge("pay_h1", T0, captured=False, fee=None, booking_id="bk_h1", payment_intent="")
    charge["payment_intent"] = None
    sim = simulator(SimulatorStore(charges=[charge]), flavour="razorpay")
    adapter = FLAVOURS["razorpay"].adapter(http_of(sim.base_url, clients), FLAVOURS["razorpay"].api_key)
    [held] = adapter.authorization_holds(PropertyAccount(PROPERTY), ["pay_h1", "pay_unknown", "order_x"])
    assert held.state == OPEN and held.booking_id == "bk_h1" and held.property_id == PROPERTY
    assert held.capture_before == datetime.fromtimestamp(T0, UTC) + DEFAULT_CAPTURE_TIMEOUT
    charge.update(refunded=True, amount_refunded=charge["amount"])  # left past the capture timeout
    [lapsed] = adapter.authorization_holds(PropertyAccount(PROPERTY), ["pay_h1"])
    assert lapsed.state == LAPSED


def test_adyen_has_no_open_hold_source(clients: list[ProviderHttp]) -> None:
    adapter = FLAVOURS["adyen"].adapter(http_of("http://127.0.0.1:9", clients))  # never called
    assert adapter.authorization_holds(PropertyAccount(PROPERTY), ["8815000000000001"]) == []


# --- the pipeline ------------------------------------------------------------------------------------------

STRIPE_PROPERTY = "lisbon-riverside"


def planted_holds(pipeline: SeededPipeline) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """The world's holds of the property by what they are: intent and latest charge."""
    prop = next(p for p in pipeline.properties if p.property_id == STRIPE_PROPERTY)
    tonight = night_window(NIGHT, prop.timezone, prop.night_cutoff)
    expiring_deadline = int((tonight.end + timedelta(hours=5)).timestamp())
    charges = {c["id"]: c for c in pipeline.world.store.charges}
    cancelled = {b["booking_id"] for b in pipeline.world.bookings if b["status"] == "cancelled"}
    holds: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for intent in pipeline.world.store.payment_intents:
        charge = charges[intent["latest_charge"]]
        deadline = charge.get("payment_method_details", {}).get("card", {}).get("capture_before")
        if deadline is None or charge["metadata"].get("property_id") != STRIPE_PROPERTY:
            continue
        if charge["metadata"]["booking_id"] in cancelled:
            holds["cancelled"] = (intent, charge)
        elif charge["captured"]:
            holds["captured"] = (intent, charge)
        elif deadline == expiring_deadline:
            holds["expiring"] = (intent, charge)
        else:
            holds["open"] = (intent, charge)
    assert sorted(holds) == ["cancelled", "captured", "expiring", "open"]
    return holds


def hold_findings(pipeline: SeededPipeline) -> list[tuple[str, str, str, Any]]:
    with pipeline.engine.connect() as connection:
        rows = connection.execute(
            select(
                discrepancies.c.night,
                discrepancies.c.provider_record_id,
                discrepancies.c.detail,
                discrepancies.c.cleared_at,
            ).where(
                discrepancies.c.property_id == STRIPE_PROPERTY,
                discrepancies.c.category == AUTHORIZATION_EXPIRING,
            )
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


@pytest.mark.slow  # Dagster runs
def test_the_expiring_hold_is_found_on_its_night_proposes_nothing_and_clears_once_captured(
    database_url: str,
) -> None:
    with seeded(database_url) as pipeline:
        holds = planted_holds(pipeline)
        intent, charge = holds["expiring"]
        assert pipeline.materialize(STRIPE_PROPERTY).success
        [(night, record, detail, cleared)] = hold_findings(pipeline)
        assert (night, record, cleared) == (NIGHT.isoformat(), intent["id"], None)
        assert "uncaptured" in detail
        assert pipeline.found(STRIPE_PROPERTY) == pipeline.planted(STRIPE_PROPERTY)  # nothing else moved
        with pipeline.engine.connect() as connection:
            proposed = connection.execute(
                select(adjustments.c.adjustment_id).where(adjustments.c.provider_record_id == intent["id"])
            ).all()
        assert proposed == []
        # captured at checkout before the next run (the event processor has not caught up yet)
        intent.update(status="succeeded", amount_received=intent["amount"], amount_capturable=0)
        charge.update(captured=True, amount_captured=charge["amount"])
        assert pipeline.materialize(STRIPE_PROPERTY).success
        [(_, _, _, cleared)] = hold_findings(pipeline)
        assert cleared is not None


@pytest.mark.slow  # Dagster runs
def test_a_hold_that_lapsed_keeps_its_finding_on_a_rerun(sqlite_url: str) -> None:
    with seeded(sqlite_url) as pipeline:
        intent, _charge = planted_holds(pipeline)["expiring"]
        assert pipeline.materialize(STRIPE_PROPERTY).success
        # Stripe cancels the intent itself; the event processor marks the order failed
        intent.update(status="canceled", cancellation_reason="automatic", amount_capturable=0)
        with pipeline.engine.begin() as connection:
            connection.execute(
                update(payment_orders)
                .where(payment_orders.c.provider_payment_id == intent["id"])
                .values(status="failed")
            )
        assert pipeline.materialize(STRIPE_PROPERTY).success
        [(night, record, detail, cleared)] = hold_findings(pipeline)
        assert (night, record, cleared) == (NIGHT.isoformat(), intent["id"], None)
        assert "lapsed uncaptured" in detail


def test_razorpays_capture_timeout_is_the_accounts_setting(
    monkeypatch: pytest.MonkeyPatch, clients: list[ProviderHttp]
) -> None:
    http = http_of("http://127.0.0.1:9", clients)  # never called
    assert build_client("razorpay", http).capture_timeout == DEFAULT_CAPTURE_TIMEOUT
    monkeypatch.setenv(CAPTURE_TIMEOUT_ENV, "120")
    assert build_client("razorpay", http).capture_timeout == timedelta(hours=120)
    monkeypatch.setenv(CAPTURE_TIMEOUT_ENV, "3 days")
    with pytest.raises(ConfigError, match=CAPTURE_TIMEOUT_ENV):
        build_client("razorpay", http)


def test_an_uncaptured_hold_in_the_nights_pull_is_neither_missing_in_the_ledger_nor_an_orphan() -> None:
    charge, _ = stripe_hold_objects(T0 + 7 * 86_400)
    records = records_frame(charge_rows(charge, PROPERTY))
    assert records["settled"].tolist() == [False]
    assert diff_night(records, typed_frame({}, LEDGER_RECORD_COLUMNS, 0)).findings.empty
    captured = captured_payments_from_provider(records)
    bookings = {"bk_h1": "confirming"}
    later = datetime.fromtimestamp(T0, UTC) + timedelta(days=1)
    assert find_orphaned_captured_payments(captured, bookings, later, timedelta(minutes=60)).empty


@pytest.mark.slow  # a Dagster run
def test_razorpays_expiring_hold_is_found_whichever_id_the_pms_keeps(sqlite_url: str) -> None:
    """The Razorpay world's hold lapsing before the next night ends, its payment order keyed by the
    Razorpay order it pays: read through the order, named by the payment."""

    def key_orders_by_razorpay_order(world: World) -> None:
        charges = world.store.charges
        uncaptured = {c["id"] for c in charges if not c["captured"] and c["status"] == "succeeded"}
        for charge in world.store.charges:
            if charge["id"] in uncaptured:
                charge["payment_intent"] = f"order_{charge['id'][4:]}"
        for order in world.payment_orders:
            if order["provider_payment_id"] in uncaptured:
                order["provider_payment_id"] = f"order_{order['provider_payment_id'][4:]}"

    with seeded(sqlite_url, "razorpay", edit=key_orders_by_razorpay_order) as pipeline:
        [prop] = pipeline.properties
        assert pipeline.materialize(prop.property_id).success
        assert pipeline.found(prop.property_id) == pipeline.planted(prop.property_id)
        tonight = night_window(NIGHT, prop.timezone, prop.night_cutoff)
        lapses = int((tonight.end + timedelta(hours=5)).timestamp())
        [expiring] = [c for c in pipeline.world.store.charges if c["created"] + 72 * 3600 == lapses]
        with pipeline.engine.connect() as connection:
            [record] = connection.execute(
                select(discrepancies.c.provider_record_id).where(
                    discrepancies.c.category == AUTHORIZATION_EXPIRING
                )
            ).scalars()
        assert record == expiring["id"]
