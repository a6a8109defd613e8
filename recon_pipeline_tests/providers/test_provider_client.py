"""The provider client (ProviderHttp) and both adapters (Stripe, Razorpay), against the simulator over real
HTTP: the adapter tests run once per provider flavour on the same store (``provider`` fixture)."""

from __future__ import annotations

import http.server
import json
import logging
import random
import threading
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import pandas as pd
import pytest

from recon_pipeline.errors import ConfigError
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS, with_match_keys
from recon_pipeline.money import normalize_currency
from recon_pipeline.providers import build_client
from recon_pipeline.providers.attribution import (
    attribute,
    named_rows,
    reports_unattributed,
    unclaimed_payment_ids,
)
from recon_pipeline.providers.errors import (
    IncompletePullError,
    ProviderDataError,
    ProviderRequestRejected,
    ProviderUnavailable,
    RetryAfterTooLong,
)
from recon_pipeline.providers.http import ProviderHttp, RetryPolicy
from recon_pipeline.providers.objects import fetch_each, field_value
from recon_pipeline.providers.razorpay import SETTLEMENT_DAYS_ENV
from recon_pipeline.providers.razorpay.client import (
    FEE_PROVISIONAL,
    FEE_SETTLED,
    RECON_PATH,
    RazorpayAdapter,
    payment_rows,
)
from recon_pipeline.providers.razorpay.client import refund_row as razorpay_refund_row
from recon_pipeline.providers.razorpay.settlement import (
    MAX_RECON_DAYS,
    SettlementCalendar,
    recon_days,
    settled_fees,
)
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS
from recon_pipeline.providers.stripe.client import (
    PropertyAccount,
    StripeAdapter,
    charge_rows,
    records_frame,
    refund_row,
)
from recon_pipeline.reconcile.captured import captured_payments_from_provider
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.reconcile.orphans import find_orphaned_captured_payments
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.provider_fixtures import (
    DAY,
    FAST_RETRY,
    RAZORPAY,
    STRIPE,
    T0,
    Adapter,
    Flavour,
    RunningSimulator,
    StartSimulator,
    make_charge,
    make_payment_intent,
    make_refund,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)

PROP_A = PropertyAccount("prop_a")
NIGHT = (datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0 + DAY, UTC))


@pytest.fixture(name="provider")
def listing_only(listing_provider: Flavour) -> Flavour:
    """These tests page through a list API: Adyen, which lists nothing, is tested in test_adyen_client.py."""
    return listing_provider


def _http(
    sim: RunningSimulator, clients: list[ProviderHttp], retry: RetryPolicy = FAST_RETRY, **kwargs: Any
) -> ProviderHttp:
    http = ProviderHttp(sim.base_url, retry=retry, **kwargs)
    clients.append(http)
    return http


def _adapter(
    sim: RunningSimulator,
    clients: list[ProviderHttp],
    provider: Flavour,
    api_key: str | None = None,
    **kwargs: Any,
) -> Adapter:
    return provider.adapter(_http(sim, clients, api_key=api_key, **kwargs), api_key)


def _rows(frame: pd.DataFrame) -> set[tuple[str, str, int]]:
    return {(r.provider_record_id, r.kind, r.amount_minor) for r in frame.itertuples()}


# --- pure mapping ---------------------------------------------------------------------------------------


def test_charge_rows_payment_and_fee() -> None:
    rows = charge_rows(make_charge("ch_1", T0, amount=10_000, fee=320, booking_id="bk_9"), "prop_a")
    assert [(r["kind"], r["amount_minor"], r["currency"], r["settled"]) for r in rows] == [
        ("payment", 10_000, "EUR", True),
        ("fee", -320, "EUR", True),
    ]
    assert {r["provider_record_id"] for r in rows} == {"ch_1"}
    assert rows[0]["booking_id"] == "bk_9" and rows[0]["payment_intent_id"] == "pi_1"
    assert rows[0]["created_at"] == datetime.fromtimestamp(T0, UTC)


def test_charge_rows_capture_states() -> None:
    partial = charge_rows(make_charge("ch_1", T0, amount=10_000, amount_captured=6_000), "p")
    assert partial[0]["amount_minor"] == 6_000
    uncaptured = charge_rows(make_charge("ch_2", T0, amount=5_000, captured=False, fee=None), "p")
    assert [(r["kind"], r["amount_minor"], r["settled"]) for r in uncaptured] == [("payment", 5_000, False)]
    failed = charge_rows(make_charge("ch_3", T0, status="failed", captured=False, fee=None), "p")
    assert failed[0]["settled"] is False and failed[0]["status"] == "failed"
    no_fee = charge_rows(make_charge("ch_4", T0, fee=0), "p")
    assert [r["kind"] for r in no_fee] == ["payment"]


def test_jpy_amounts_are_not_scaled() -> None:
    rows = charge_rows(make_charge("ch_1", T0, amount=1_000, currency="jpy", fee=36), "p")
    assert [(r["amount_minor"], r["currency"]) for r in rows] == [(1_000, "JPY"), (-36, "JPY")]


def test_refund_row_takes_booking_from_charge() -> None:
    charge = make_charge("ch_1", T0, booking_id="bk_7")
    row = refund_row(make_refund("re_1", charge, T0 + 60, 2_500, status="pending"), charge, "prop_a")
    assert row["kind"] == "refund" and row["amount_minor"] == -2_500 and row["charge_id"] == "ch_1"
    assert row["booking_id"] == "bk_7" and row["payment_intent_id"] == "pi_1"
    assert row["settled"] is False and row["currency"] == "EUR"


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("amount", "10000", r"'ch_1'.*'amount'"),
        ("amount", 100.0, r"'ch_1'.*'amount'"),
        ("amount", True, r"'ch_1'.*'amount'"),
        ("amount", None, r"'ch_1'.*'amount'"),
        ("currency", "euro", r"'ch_1'.*'currency'"),
        ("id", None, r"'id'"),
        ("balance_transaction", "txn_1", r"'ch_1'.*not expanded"),
    ],
)
def test_charge_shape_violations_name_record_and_field(field: str, value: Any, match: str) -> None:
    charge = make_charge("ch_1", T0)
    charge[field] = value
    with pytest.raises(ProviderDataError, match=match):
        charge_rows(charge, "p")


def test_records_frame_has_contract_dtypes() -> None:
    frame = records_frame(charge_rows(make_charge("ch_1", T0), "p"))
    assert {name: str(dtype) for name, dtype in frame.dtypes.items()} == PROVIDER_RECORD_COLUMNS
    empty = records_frame([])
    assert len(empty) == 0 and {n: str(d) for n, d in empty.dtypes.items()} == PROVIDER_RECORD_COLUMNS


def test_a_distinct_records_frame_is_the_frame_without_its_repeated_rows() -> None:
    """One record reached by two ids (a charge asked for by its id and by its intent's) comes once; rows
    differing in one column, an optional one left out against given as None included, are kept apart or
    together as the frame's ``drop_duplicates`` keeps them."""
    charge, other = make_charge("ch_1", T0), make_charge("ch_2", T0 + 5)
    rows = [*charge_rows(charge, "p"), *charge_rows(other, "p"), *charge_rows(charge, "p")]
    unnamed = {**charge_rows(other, "p")[0], "card_brand": None}
    unnamed.pop("approval_code", None)
    rows += [unnamed, {**unnamed, "status": "pending"}, {**unnamed, "approval_code": None}]
    distinct = records_frame(rows, distinct=True)
    pd.testing.assert_frame_equal(
        distinct, records_frame(rows).drop_duplicates(ignore_index=True), check_exact=True
    )
    # gone: the charge's repeated payment and fee, and both copies of the other's payment (no card: its
    # optional columns are null however the row gives them); kept: the one whose status differs
    assert len(distinct) == len(rows) - 4 and distinct["status"].tolist().count("pending") == 1


@pytest.mark.parametrize("provider_account", [None, "acct_a"])
def test_a_lookup_keeps_the_propertys_own_records_and_nobodys(provider_account: str | None) -> None:
    """What a by-id lookup keeps of the records the property's ledger names: its own and nobody's (now the
    property's, the ledger's naming the only claim there is), never another property's, even on a shared
    account where the property is not the first; in the frame's order."""
    account = PropertyAccount("prop_b", provider_account, ("prop_a", "prop_b"))
    rows = [
        *charge_rows(make_charge("ch_3", T0 + 9), "prop_b"),
        *charge_rows(make_charge("ch_1", T0 + 9), None),
        *charge_rows(make_charge("ch_2", T0), "prop_a"),
        *charge_rows(make_charge("ch_0", T0 + 3), None),
    ]
    named = records_frame(named_rows(rows, account))
    assert set(named["property_id"]) == {"prop_b"}
    assert named["provider_record_id"].unique().tolist() == ["ch_0", "ch_1", "ch_3"]
    kept = [row for row in rows if row["provider_record_id"] != "ch_2"]
    expected = records_frame([{**row, "property_id": "prop_b"} for row in kept])
    pd.testing.assert_frame_equal(named, expected, check_exact=True)


@pytest.mark.parametrize(
    ("value", "types", "kept"),
    [
        (3, int, True),
        (True, bool, True),
        (True, int, False),  # a bool is no amount
        (False, (int, str), False),
        (True, (int, bool), True),
        (3, (int, float), True),
        ("3", int, False),
        (None, str, False),
        (type("Id", (str,), {})("ch_1"), str, True),  # a subclass is still its type
    ],
)
def test_a_field_is_kept_only_as_the_type_asked_for(value: object, types: Any, kept: bool) -> None:
    record = {"id": "ch_1", "amount": value}
    if kept:
        assert field_value(record, "amount", types, "charge") is value
    else:
        with pytest.raises(ProviderDataError, match=r"charge 'ch_1': field 'amount' is .*, expected"):
            field_value(record, "amount", types, "charge")


# --- ProviderHttp ---------------------------------------------------------------------------------------


def test_429_honours_retry_after_then_succeeds(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    sim = simulator(SimulatorStore(charges=[make_charge("ch_1", T0)]))
    sim.set_faults(statuses=[429, 429], retry_after="2")
    sleeps: list[float] = []
    http = _http(sim, clients, retry=RetryPolicy(max_attempts=3, max_retry_after_s=30), sleep=sleeps.append)
    assert http.get_json("/v1/charges/ch_1") is not None
    assert sleeps == [2.0, 2.0]
    sim.set_faults(statuses=[429], retry_after="120")
    sleeps.clear()
    with pytest.raises(RetryAfterTooLong, match="retry after 120 s, beyond the 30 s allowed"):
        http.get_json("/v1/charges/ch_1")  # beyond max_retry_after_s: fails rather than retry early
    assert sleeps == []


@pytest.mark.parametrize("fault", [{"statuses": [503, 500]}, {"truncate_next": 2}])
def test_transient_failures_are_retried(
    simulator: StartSimulator,
    clients: list[ProviderHttp],
    fault: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    sim = simulator(SimulatorStore(charges=[make_charge("ch_1", T0)]))
    sim.set_faults(**fault)
    http = _http(sim, clients, api_key=None)
    with caplog.at_level(logging.WARNING, logger="recon_pipeline.providers.http"):
        body = http.get_json("/v1/charges/ch_1", params={"expand[]": "balance_transaction"})
    assert body is not None and body["id"] == "ch_1"
    assert sim.stats()["api_requests"] == 3
    assert len([r for r in caplog.records if "/v1/charges/ch_1" in r.getMessage()]) == 2


def test_retries_exhausted_raise_unavailable_with_last_status(
    simulator: StartSimulator,
    clients: list[ProviderHttp],
) -> None:
    sim = simulator(SimulatorStore(charges=[make_charge("ch_1", T0)]))
    sim.set_faults(statuses=[500, 500, 500, 503])
    with pytest.raises(ProviderUnavailable, match="after 4 attempts.*HTTP 503"):
        _http(sim, clients).get_json("/v1/charges/ch_1")
    assert sim.stats()["api_requests"] == 4


def test_transport_error_is_unavailable(clients: list[ProviderHttp]) -> None:
    http = ProviderHttp("http://127.0.0.1:9", retry=FAST_RETRY)  # discard port: nothing listens
    clients.append(http)
    with pytest.raises(ProviderUnavailable, match="NewConnectionError"):
        http.get_json("/v1/charges")


def test_backoff_is_full_jitter_and_capped() -> None:
    policy = RetryPolicy(base_delay_s=0.25, max_delay_s=8.0)

    class Top(random.Random):
        def uniform(self, a: float, b: float) -> float:
            return b

    assert [policy.backoff(attempt, Top()) for attempt in range(7)] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    draws = [policy.backoff(3, random.Random(seed)) for seed in range(50)]
    assert all(0 <= d <= 2.0 for d in draws) and len(set(draws)) > 40


def test_bad_request_is_rejected_without_retry_or_key(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    sim = simulator(SimulatorStore(), api_key="sk_test_42")
    http = _http(sim, clients, api_key="sk_test_42")
    with pytest.raises(ProviderRequestRejected, match="HTTP 400.*less than or equal to 100") as caught:
        http.get_json("/v1/charges", params={"limit": 1000})
    assert "sk_test_42" not in str(caught.value)
    assert sim.stats()["api_requests"] == 1
    assert http.get_json("/v1/charges/ch_missing") is None


def test_auth_required_when_api_key_set(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    store = SimulatorStore(charges=[make_charge(provider.charge_id("1"), T0 + 5)])
    sim = simulator(store, api_key=provider.api_key, flavour=provider.name)
    wrong = provider.api_key + "_wrong"
    with pytest.raises(IncompletePullError) as caught:
        _adapter(sim, clients, provider, api_key=wrong).pull_night(PROP_A, *NIGHT)
    assert isinstance(caught.value.__cause__, ProviderRequestRejected) and "HTTP 401" in str(caught.value)
    assert wrong not in str(caught.value)
    assert len(_adapter(sim, clients, provider, api_key=provider.api_key).pull_night(PROP_A, *NIGHT)) == 2


def test_semaphore_bounds_in_flight_requests(simulator: StartSimulator, clients: list[ProviderHttp]) -> None:
    sim = simulator(SimulatorStore(charges=[make_charge("ch_1", T0)]))
    sim.set_faults(slow_ms=30)
    http = _http(sim, clients, max_concurrency=3)
    threads = [threading.Thread(target=http.get_json, args=("/v1/charges/ch_1",)) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    stats = sim.stats()
    assert stats["responses_by_status"] == {"200": 12}
    assert stats["max_in_flight"] == 3


# --- both adapters, one store served in each flavour ----------------------------------------------------


def test_pull_paginates_all_records(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    charges = [make_charge(provider.charge_id(f"{i:04d}"), T0 + i * 60, fee=100 + i) for i in range(250)]
    sim = simulator(SimulatorStore(charges=charges), flavour=provider.name)
    frame = _adapter(sim, clients, provider).pull_night(PROP_A, *NIGHT)
    paths = sim.stats()["requests_by_path"]
    paths.pop(RECON_PATH, None)  # Razorpay's settlement recon: see its own tests
    # Stripe's night of balance transactions (every type: disputes and captures) holds each charge's too
    assert paths == {provider.payments_path: 3, "/v1/refunds": 1, **dict.fromkeys(provider.movement_lists, 3)}
    payments = frame[frame.kind == "payment"]
    assert sorted(payments.provider_record_id) == [c["id"] for c in charges]
    assert frame.provider_record_id.duplicated().sum() == 250  # each charge once more, as its fee row
    assert set(frame[frame.kind == "fee"].amount_minor) == {-(100 + i) for i in range(250)}
    assert {n: str(d) for n, d in frame.dtypes.items()} == PROVIDER_RECORD_COLUMNS


def test_pull_window_is_gte_inclusive_lt_exclusive(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    charges = [
        make_charge(provider.charge_id("before"), T0 - 1),
        make_charge(provider.charge_id("first"), T0),
        make_charge(provider.charge_id("last"), T0 + DAY - 1),
        make_charge(provider.charge_id("next"), T0 + DAY),  # Razorpay's inclusive `to` returns it
    ]
    sim = simulator(SimulatorStore(charges=charges), flavour=provider.name)
    frame = _adapter(sim, clients, provider).pull_night(PROP_A, *NIGHT)
    assert set(frame.provider_record_id) == {provider.charge_id("first"), provider.charge_id("last")}


def test_pull_attribution_by_metadata(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    mine = make_charge(provider.charge_id("a"), T0 + 1)
    other = make_charge(provider.charge_id("b"), T0 + 2, property_id="prop_b")
    other["metadata"]["booking_id"] = 7  # another property's corrupt metadata is not this pull's failure
    refunds = [
        make_refund(provider.refund_id("a"), mine, T0 + 10, 100),
        make_refund(provider.refund_id("b"), other, T0 + 11, 200),
    ]
    sim = simulator(SimulatorStore(charges=[mine, other], refunds=refunds), flavour=provider.name)
    frame = _adapter(sim, clients, provider).pull_night(PROP_A, *NIGHT)
    assert _rows(frame) == {
        (mine["id"], "payment", 10_000),
        (mine["id"], "fee", -300),
        (provider.refund_id("a"), "refund", -100),
    }
    assert set(frame.booking_id) == {f"bk_{mine['id']}"} and set(frame.currency) == {"EUR"}


def test_pull_attribution_by_connected_account(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    connected = make_charge("ch_c", T0 + 3, account="acct_c", property_id=None, fee=0)
    platform = make_charge("ch_p", T0 + 4, property_id="prop_c")
    refunds = [make_refund("re_c", connected, T0 + 12, 300)]
    sim = simulator(SimulatorStore(charges=[connected, platform], refunds=refunds))
    frame = StripeAdapter(_http(sim, clients)).pull_night(PropertyAccount("prop_c", "acct_c"), *NIGHT)
    assert _rows(frame) == {("ch_c", "payment", 10_000), ("re_c", "refund", -300)}
    assert set(frame.property_id) == {"prop_c"} and set(frame.booking_id.isna()) == {True}


def test_razorpay_refuses_a_property_with_a_provider_account(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    sim = simulator(SimulatorStore(), flavour="razorpay")
    adapter = _adapter(sim, clients, RAZORPAY)
    with pytest.raises(ValueError, match="notes.property_id"):
        adapter.pull_night(PropertyAccount("prop_c", "acc_c"), *NIGHT)
    assert sim.stats()["api_requests"] == 0


def test_refund_of_earlier_nights_charge_is_fetched_at_most_once(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    old_mine = make_charge(provider.charge_id("old"), T0 - 3 * DAY, amount=9_000, booking_id="bk_old")
    old_other = make_charge(provider.charge_id("oth"), T0 - DAY, property_id="prop_b")
    today = make_charge(provider.charge_id("new"), T0 + 100, amount=5_000)
    r1, r2, r3, r4 = (provider.refund_id(str(i)) for i in range(1, 5))
    refunds = [
        make_refund(r1, old_mine, T0 + 10, 2_000),  # partial
        make_refund(r2, old_mine, T0 + 20, 3_000, status="pending"),  # second refund of the same charge
        make_refund(r3, old_other, T0 + 30, 1_000),  # another property's
        make_refund(r4, today, T0 + 200, 5_000),  # full refund of today's charge: no fetch
    ]
    sim = simulator(
        SimulatorStore(charges=[old_mine, old_other, today], refunds=refunds), flavour=provider.name
    )
    frame = _adapter(sim, clients, provider).pull_night(PROP_A, *NIGHT)
    refund_rows = frame[frame.kind == "refund"].set_index("provider_record_id")
    assert refund_rows.amount_minor.to_dict() == {r1: -2_000, r2: -3_000, r4: -5_000}
    assert refund_rows.settled.to_dict() == {r1: True, r2: False, r4: True}
    assert (
        refund_rows.loc[r1, "booking_id"] == "bk_old" and refund_rows.loc[r1, "charge_id"] == old_mine["id"]
    )
    paths = sim.stats()["requests_by_path"]
    by_id = f"{provider.payments_path}/"
    # Stripe's refund list embeds each refund's charge (expand[]=data.charge): no lookup by id at all.
    fetched = 0 if provider.refunds_embed_payment else 1
    assert [paths.get(by_id + old["id"], 0) for old in (old_mine, old_other)] == [fetched, fetched]
    assert by_id + today["id"] not in paths
    assert old_mine["id"] not in set(frame[frame.kind == "payment"].provider_record_id)


def test_pull_survives_transient_faults(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    charges = [
        make_charge(provider.charge_id(f"{i:04d}"), T0 + i, currency="jpy", amount=1_000 + i)
        for i in range(150)
    ]
    sim = simulator(SimulatorStore(charges=charges), flavour=provider.name)
    # 4th attempt succeeds
    sim.set_faults(statuses=[429, 503], truncate_next=1, path_prefix=provider.payments_path)
    frame = _adapter(sim, clients, provider).pull_night(PROP_A, *NIGHT)
    payments = frame[frame.kind == "payment"]
    assert len(payments) == 150 and set(payments.currency) == {"JPY"}
    assert sorted(payments.amount_minor) == [1_000 + i for i in range(150)]
    assert sim.stats()["responses_by_status"]["429"] == 1


def test_pull_failing_midway_raises_and_returns_nothing(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    charges = [make_charge(provider.charge_id(f"{i:04d}"), T0 + i) for i in range(250)]
    sim = simulator(SimulatorStore(charges=charges), flavour=provider.name)
    sim.set_faults(fail_after_requests=1, path_prefix=provider.payments_path)
    result: list[pd.DataFrame] = []
    with pytest.raises(IncompletePullError) as caught:
        result.append(_adapter(sim, clients, provider).pull_night(PROP_A, *NIGHT))
    assert result == []
    assert isinstance(caught.value.__cause__, ProviderUnavailable)
    assert sim.stats()["requests_by_path"][provider.payments_path] == 1 + FAST_RETRY.max_attempts


def test_pull_with_malformed_record_fails_naming_it(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    bad = make_charge(provider.charge_id("bad"), T0 + 5)
    bad["amount"] = "12.50"
    sim = simulator(
        SimulatorStore(charges=[make_charge(provider.charge_id("ok"), T0 + 1), bad]), flavour=provider.name
    )
    with pytest.raises(IncompletePullError, match=rf"'{bad['id']}'.*'amount'") as caught:
        _adapter(sim, clients, provider).pull_night(PROP_A, *NIGHT)
    assert isinstance(caught.value.__cause__, ProviderDataError)


def test_pull_beyond_max_pages_is_incomplete(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    charges = [make_charge(provider.charge_id(f"{i:04d}"), T0 + i) for i in range(201)]
    sim = simulator(SimulatorStore(charges=charges), flavour=provider.name)
    adapter = _adapter(sim, clients, provider)
    adapter.max_pages = 2
    with pytest.raises(IncompletePullError, match="more than 2 pages"):
        adapter.pull_night(PROP_A, *NIGHT)


def test_fetch_by_id_is_concurrent_and_bounded(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    charges = [make_charge(provider.charge_id(f"{i:03d}"), T0 - DAY + i) for i in range(40)]
    sim = simulator(SimulatorStore(charges=charges), flavour=provider.name)
    sim.set_faults(slow_ms=20)
    ids = [c["id"] for c in charges]
    frame = _adapter(sim, clients, provider, max_concurrency=3).fetch_records_by_id(PROP_A, ids)
    assert sorted(set(frame.provider_record_id)) == ids
    assert sim.stats()["max_in_flight"] == 3


def test_fetch_by_id_absent_unknown_and_foreign(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    mine = make_charge(provider.charge_id("a"), T0 - DAY)
    other = make_charge(provider.charge_id("b"), T0 - DAY, property_id="prop_b")
    ra, rb = provider.refund_id("a"), provider.refund_id("b")
    refunds = [make_refund(ra, mine, T0 - 10, 700), make_refund(rb, other, T0 - 10, 800)]
    sim = simulator(SimulatorStore(charges=[mine, other], refunds=refunds), flavour=provider.name)
    missing = provider.charge_id("missing")
    frame = _adapter(sim, clients, provider).fetch_records_by_id(
        PROP_A, [ra, missing, rb, other["id"], provider.refund_id("missing")]
    )
    assert _rows(frame) == {(ra, "refund", -700)}
    assert len(_adapter(sim, clients, provider).fetch_records_by_id(PROP_A, [missing])) == 0


def test_fetch_by_id_unavailable_is_not_missing(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    charge = make_charge(provider.charge_id("a"), T0)
    sim = simulator(SimulatorStore(charges=[charge]), flavour=provider.name)
    sim.set_faults(fail_after_requests=0)
    with pytest.raises(IncompletePullError) as caught:
        _adapter(sim, clients, provider).fetch_records_by_id(PROP_A, [charge["id"]])
    assert isinstance(caught.value.__cause__, ProviderUnavailable)


def test_fetch_current_state_by_id(simulator: StartSimulator, clients: list[ProviderHttp]) -> None:
    charge = make_charge("ch_c", T0, account="acct_c", property_id=None)
    sim = simulator(SimulatorStore(charges=[charge], payment_intents=[make_payment_intent(charge)]))
    adapter = StripeAdapter(_http(sim, clients))
    account = PropertyAccount("prop_c", "acct_c")
    fetched = adapter.fetch_charge(account, "ch_c")
    assert fetched is not None and fetched["balance_transaction"]["fee"] == 300
    intent = adapter.fetch_payment_intent(account, "pi_c")
    assert intent is not None and intent["latest_charge"]["id"] == "ch_c"  # expanded, with its money
    assert intent["latest_charge"]["balance_transaction"]["fee"] == 300
    assert adapter.fetch_charge(PropertyAccount("prop_c"), "ch_c") is None  # not on the platform account
    assert adapter.fetch_payment_intent(account, "pi_nope") is None


def test_razorpay_fetch_payment_by_id(simulator: StartSimulator, clients: list[ProviderHttp]) -> None:
    charge = make_charge("pay_c", T0, fee=236)
    charge.update(amount_refunded=10_000, refunded=True)
    connected = make_charge("pay_x", T0, account="acct_x")
    sim = simulator(SimulatorStore(charges=[charge, connected]), flavour="razorpay")
    adapter = RazorpayAdapter(_http(sim, clients))
    fetched = adapter.fetch_payment("pay_c")
    assert fetched is not None
    assert (fetched["entity"], fetched["status"], fetched["refund_status"]) == ("payment", "refunded", "full")
    assert (fetched["fee"], fetched["tax"], fetched["currency"]) == (236, 36, "EUR")
    assert adapter.fetch_payment("pay_nope") is None  # Razorpay: 400 "The id provided does not exist"
    assert adapter.fetch_payment("pay_x") is None  # another account's: not the merchant's
    assert sim.stats()["responses_by_status"] == {"200": 1, "400": 2}


# --- Razorpay pure mapping ------------------------------------------------------------------------------


def _razorpay_payment(**fields: Any) -> dict[str, Any]:
    """A Razorpay payment entity as the API renders it (empty notes are ``[]``)."""
    return {
        "id": "pay_L0nSsccovt6zyp",
        "entity": "payment",
        "amount": 990_000,
        "currency": "INR",
        "status": "captured",
        "order_id": None,
        "method": "upi",
        "amount_refunded": 0,
        "refund_status": None,
        "captured": True,
        "notes": {"property_id": "prop_a", "booking_id": "bk_9"},
        "fee": 23_364,
        "tax": 3_564,
        "created_at": T0,
        **fields,
    }


def test_razorpay_payment_rows_payment_and_fee() -> None:
    rows = payment_rows(_razorpay_payment(), "prop_a")
    assert [(r["kind"], r["amount_minor"], r["currency"], r["settled"]) for r in rows] == [
        ("payment", 990_000, "INR", True),
        ("fee", -23_364, "INR", True),  # Razorpay's fee includes its GST (`tax`)
    ]
    assert rows[0]["booking_id"] == "bk_9" and rows[0]["payment_intent_id"] is None
    assert rows[0]["created_at"] == datetime.fromtimestamp(T0, UTC)


@pytest.mark.parametrize(
    ("status", "captured", "fee", "settled", "kinds"),
    [
        ("refunded", True, 100, True, ["payment", "fee"]),
        ("authorized", False, None, False, ["payment"]),
        ("failed", False, None, False, ["payment"]),
        ("created", False, None, False, ["payment"]),
    ],
)
def test_razorpay_payment_states(
    status: str, captured: bool, fee: int | None, settled: bool, kinds: list[str]
) -> None:
    rows = payment_rows(_razorpay_payment(status=status, captured=captured, fee=fee, notes=[]), "p")
    assert [r["kind"] for r in rows] == kinds
    assert {r["settled"] for r in rows} == {settled} and rows[0]["booking_id"] is None


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("status", "paid", "unknown status 'paid'"),
        ("amount", "9900.00", "'amount'"),
        ("currency", "rupees", "'currency'"),
        ("created_at", None, "'created_at'"),
        ("notes", "vip", "'notes'"),
        ("fee", -1, "'fee' is negative"),
    ],
)
def test_razorpay_shape_violations_name_record_and_field(field: str, value: Any, match: str) -> None:
    with pytest.raises(ProviderDataError, match=rf"'pay_L0nSsccovt6zyp'.*{match}"):
        payment_rows(_razorpay_payment(**{field: value}), "p")


def test_razorpay_refund_row() -> None:
    refund = {
        "id": "rfnd_1",
        "entity": "refund",
        "amount": 30_000,
        "currency": "INR",
        "payment_id": "pay_L0nSsccovt6zyp",
        "notes": [],
        "created_at": T0 + 60,
        "status": "pending",
    }
    row = razorpay_refund_row(refund, _razorpay_payment(), "prop_a")
    assert (row["kind"], row["amount_minor"], row["settled"], row["booking_id"]) == (
        "refund",
        -30_000,
        False,
        "bk_9",
    )
    assert razorpay_refund_row({**refund, "status": "processed"}, _razorpay_payment(), "p")["settled"]
    with pytest.raises(ProviderDataError, match="given 'pay_other'"):
        razorpay_refund_row(refund, _razorpay_payment(id="pay_other"), "p")


def test_razorpay_booking_id_must_be_a_printable_id() -> None:
    for booking_id in (None, ""):
        notes: dict[str, Any] = {"property_id": "prop_a", "booking_id": booking_id}
        assert payment_rows(_razorpay_payment(notes=notes), "p")[0]["booking_id"] is None
    for bad in (["bk_1"], "bk\x001", 17):
        notes = {"property_id": "prop_a", "booking_id": bad}
        with pytest.raises(ProviderDataError, match=r"notes of payment 'pay_L0nSsccovt6zyp'.*'booking_id'"):
            payment_rows(_razorpay_payment(notes=notes), "p")


def test_currency_codes_are_three_ascii_letters() -> None:
    assert normalize_currency(" inr ") == "INR"
    for bad in ("ÉÜÖ", "ßa", "€UR", "EU", "EURO", "E1R"):
        with pytest.raises(ValueError, match="ISO 4217"):
            normalize_currency(bad)
    with pytest.raises(ProviderDataError, match=r"'pay_L0nSsccovt6zyp'.*'currency'"):
        payment_rows(_razorpay_payment(currency="ÉÜÖ"), "p")


# --- Razorpay settlement recon: the settled fee ---------------------------------------------------------

SETTLED = T0 + 10 * DAY  # the simulator's clock once the night (T+2) has settled
UNSETTLED = T0 + DAY + 3600  # the morning after the night: nothing settled yet


def test_razorpay_fees_are_settled_once_the_recon_has_them(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    charges = [make_charge(f"pay_{i}", T0 + 60 * i, fee=236) for i in range(3)]
    store = SimulatorStore(charges=charges, settled_fees={"pay_1": 300}, clock=lambda: SETTLED)
    sim = simulator(store, flavour="razorpay")
    adapter = _adapter(sim, clients, RAZORPAY)

    def fees(frame: pd.DataFrame) -> dict[str, tuple[int, str]]:
        rows = frame[frame.kind == "fee"]
        return {r.provider_record_id: (r.amount_minor, r.status) for r in rows.itertuples()}

    settled = {"pay_0": (-236, FEE_SETTLED), "pay_1": (-300, FEE_SETTLED), "pay_2": (-236, FEE_SETTLED)}
    assert fees(adapter.pull_night(PROP_A, *NIGHT)) == settled
    assert fees(adapter.fetch_records_by_id(PROP_A, ["pay_1"])) == {"pay_1": settled["pay_1"]}
    store.clock = lambda: UNSETTLED
    provisional = {f"pay_{i}": (-236, FEE_PROVISIONAL) for i in range(3)}
    assert fees(adapter.pull_night(PROP_A, *NIGHT)) == provisional
    assert fees(adapter.fetch_records_by_id(PROP_A, ["pay_1"])) == {"pay_1": provisional["pay_1"]}


def test_razorpay_recon_is_paged_for_every_settlement_day(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    charges = [make_charge(f"pay_{i:04d}", T0 + 60 * i, fee=200) for i in range(250)]
    revised = {c["id"]: 201 + i for i, c in enumerate(charges)}  # every settled fee differs: all pages read
    sim = simulator(
        SimulatorStore(charges=charges, settled_fees=revised, clock=lambda: SETTLED), flavour="razorpay"
    )
    frame = _adapter(sim, clients, RAZORPAY).pull_night(PROP_A, *NIGHT)
    fees = frame[frame.kind == "fee"].set_index("provider_record_id")
    assert fees.amount_minor.to_dict() == {i: -fee for i, fee in revised.items()}
    assert set(fees.status) == {FEE_SETTLED}
    # The night is Thursday 2026-01-01 05:30 to Friday 01-02 05:30 IST: days 01-01 to 01-07 (3 working
    # days after Friday: Monday, Tuesday, Wednesday); Thursday's payments settled on Monday 01-05 (T+2
    # working days), in 3 pages of 100; the other days answer one empty page each.
    days = recon_days([NIGHT[0], NIGHT[1] - timedelta(seconds=1)], 3, SettlementCalendar())
    assert [d.isoformat() for d in days] == [f"2026-01-0{d}" for d in range(1, 8)]
    assert sim.stats()["requests_by_path"][RECON_PATH] == 3 + 6


@pytest.mark.parametrize(
    "fault",
    [{"fail_after_requests": 2}, {"truncate_next": 100}],  # the days are read at once: faults must last
    ids=["5xx", "truncated"],
)
def test_razorpay_a_recon_page_that_cannot_be_read_fails_the_pull(
    simulator: StartSimulator, clients: list[ProviderHttp], fault: dict[str, Any]
) -> None:
    charges = [make_charge(f"pay_{i}", T0 + 60 * i) for i in range(3)]
    sim = simulator(SimulatorStore(charges=charges, clock=lambda: SETTLED), flavour="razorpay")
    sim.set_faults(path_prefix=RECON_PATH, **fault)
    result: list[pd.DataFrame] = []
    with pytest.raises(IncompletePullError, match=RECON_PATH) as caught:
        result.append(_adapter(sim, clients, RAZORPAY).pull_night(PROP_A, *NIGHT))
    assert result == [] and isinstance(caught.value.__cause__, ProviderUnavailable)


def _recon_item(**fields: Any) -> dict[str, Any]:
    return {"entity_id": "pay_1", "type": "payment", "fee": 236, "tax": 36, "settled": True, **fields}


def test_razorpay_settled_fees_from_recon_items() -> None:
    items = [
        _recon_item(),
        _recon_item(entity_id="rfnd_1", type="refund", fee=0, payment_id="pay_1"),
        _recon_item(entity_id="adj_1", type="adjustment", fee=0),
        _recon_item(entity_id="pay_2", settled=False),  # on hold: not settled, its fee stays provisional
    ]
    assert settled_fees(items) == {"pay_1": 236}
    with pytest.raises(ProviderDataError, match="'pay_1': payment settled twice"):
        settled_fees([_recon_item(), _recon_item()])
    for field, value in (("fee", "2.36"), ("fee", -1), ("settled", "yes"), ("type", None)):
        with pytest.raises(ProviderDataError, match=rf"settlement recon item 'pay_1': field '{field}'"):
            settled_fees([_recon_item(**{field: value})])
    with pytest.raises(ProviderDataError, match=r"settlement recon item '': field 'entity_id'"):
        settled_fees([_recon_item(entity_id="")])


def test_recon_days_and_their_bound(monkeypatch: pytest.MonkeyPatch, clients: list[ProviderHttp]) -> None:
    first = datetime(2026, 1, 1, 18, 29, tzinfo=UTC)  # 23:59 IST: the next UTC minute is the next IST day
    calendar = SettlementCalendar()
    assert recon_days([first], 1, calendar) == [date(2026, 1, 1), date(2026, 1, 2)]
    a_year = [first + timedelta(days=7 * week) for week in range(52)]
    days = recon_days(a_year, 3, calendar)  # far apart by-id lookups: the earliest MAX_RECON_DAYS days only
    assert len(days) == MAX_RECON_DAYS and days == sorted(days) and days[0] == date(2026, 1, 1)
    http = ProviderHttp("http://127.0.0.1:9", retry=FAST_RETRY)
    clients.append(http)
    monkeypatch.setenv(SETTLEMENT_DAYS_ENV, "5")
    adapter = build_client("razorpay", http)
    assert isinstance(adapter, RazorpayAdapter) and adapter.settlement_days == 5
    monkeypatch.setenv(SETTLEMENT_DAYS_ENV, "0")
    with pytest.raises(ConfigError, match=SETTLEMENT_DAYS_ENV):
        build_client("razorpay", http)
    monkeypatch.setenv(SETTLEMENT_DAYS_ENV, "11")  # working days: two weeks and more is no settlement cycle
    with pytest.raises(ConfigError, match=f"{SETTLEMENT_DAYS_ENV}: settlement_days must be from 0 to 10"):
        build_client("razorpay", http)
    with pytest.raises(ValueError, match="settlement_days must be from 0 to 10"):
        RazorpayAdapter(http, settlement_days=11)


# --- payment identity and attribution --------------------------------------------------------------------


def _intent(provider: Flavour, suffix: str) -> str:
    return f"pi_{suffix}" if provider is STRIPE else f"order_{suffix}"


def test_fetch_by_id_of_an_intent_or_order_returns_its_charge_rows(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    """A ledger that names the PaymentIntent (Razorpay: the order) finds the charge's rows; this raised
    'not charge or refund ids' and failed the whole night."""
    mine = make_charge(provider.charge_id("a"), T0 - DAY, payment_intent=_intent(provider, "a"))
    other = make_charge(
        provider.charge_id("b"), T0 - DAY, property_id="prop_b", payment_intent=_intent(provider, "b")
    )
    intents = [make_payment_intent(c) for c in (mine, other)] if provider is STRIPE else []
    sim = simulator(SimulatorStore(charges=[mine, other], payment_intents=intents), flavour=provider.name)
    wanted = [_intent(provider, "a"), _intent(provider, "b"), _intent(provider, "missing")]
    frame = _adapter(sim, clients, provider).fetch_records_by_id(PROP_A, wanted)
    assert _rows(frame) == {(mine["id"], "payment", 10_000), (mine["id"], "fee", -300)}
    assert set(frame.payment_intent_id) == {_intent(provider, "a")} and set(frame.property_id) == {"prop_a"}


def test_pull_on_a_shared_account_claims_what_may_be_its_own_and_attribution_splits_it(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    """Metadata first, then payment_orders (by charge or intent id), else nobody's; refunds follow their
    charge; only the account's first property keeps what nobody owns."""
    by_metadata = make_charge(provider.charge_id("m"), T0 + 1, payment_intent=_intent(provider, "m"))
    others = make_charge(provider.charge_id("o"), T0 + 2, property_id="prop_b")
    by_order = make_charge(
        provider.charge_id("p"), T0 + 3, property_id=None, payment_intent=_intent(provider, "p")
    )
    nobody = make_charge(
        provider.charge_id("n"), T0 + 4, property_id=None, payment_intent=_intent(provider, "n")
    )
    refund = make_refund(provider.refund_id("n"), nobody, T0 + 5, 400)
    store = SimulatorStore(charges=[by_metadata, others, by_order, nobody], refunds=[refund])
    sim = simulator(store, flavour=provider.name)
    adapter = _adapter(sim, clients, provider)
    claimed = adapter.pull_claimed(PROP_A, *NIGHT)
    assert others["id"] not in set(claimed.provider_record_id)  # another's is never even parsed
    assert unclaimed_payment_ids(claimed) == sorted(
        {by_order["id"], nobody["id"], _intent(provider, "p"), _intent(provider, "n")}
    )
    owners = {_intent(provider, "p"): "prop_a", others["id"]: "prop_a"}  # metadata outranks an order
    shared = ("prop_a", "prop_b")
    first = attribute(claimed, PropertyAccount("prop_a", None, shared), owners)
    assert set(first.own.provider_record_id) == {by_metadata["id"], by_order["id"]}
    assert set(first.own.property_id) == {"prop_a"}
    assert _rows(first.unattributed) == {
        (nobody["id"], "payment", 10_000),
        (nobody["id"], "fee", -300),
        (refund["id"], "refund", -400),
    }
    prop_b = PropertyAccount("prop_b", None, shared)
    second = attribute(adapter.pull_claimed(prop_b, *NIGHT), prop_b, owners)
    assert set(second.own.provider_record_id) == {others["id"]}
    assert set(second.unattributed.provider_record_id) == {nobody["id"], refund["id"]}
    assert reports_unattributed(PropertyAccount("prop_a", None, shared))
    assert not reports_unattributed(PropertyAccount("prop_b", None, shared))


def test_a_property_alone_on_its_connected_account_keeps_all_but_what_names_another(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    unnamed = make_charge("ch_u", T0 + 1, account="acct_c", property_id=None)
    named_other = make_charge("ch_x", T0 + 2, account="acct_c", property_id="prop_x")
    sim = simulator(SimulatorStore(charges=[unnamed, named_other]))
    adapter = StripeAdapter(_http(sim, clients))
    alone = PropertyAccount("prop_c", "acct_c", ("prop_c",))
    assert set(adapter.pull_night(alone, *NIGHT).provider_record_id) == {"ch_u"}
    shared = PropertyAccount("prop_c", "acct_c", ("prop_c", "prop_d"))
    split = attribute(adapter.pull_claimed(shared, *NIGHT), shared, {})
    assert split.own.empty and set(split.unattributed.provider_record_id) == {"ch_u"}


def test_a_clean_night_pulls_and_diffs_to_no_finding(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    """Every record booked as the provider has it, every booking confirmed: nothing to find, no orphan."""
    charges = [make_charge(provider.charge_id(f"{i:03d}"), T0 + 60 * i, fee=200 + i) for i in range(30)]
    refunds = [make_refund(provider.refund_id(f"{i:03d}"), charges[i], T0 + 60 * i + 30, 500) for i in (3, 7)]
    sim = simulator(SimulatorStore(charges=charges, refunds=refunds), flavour=provider.name)
    pulled = _adapter(sim, clients, provider).pull_night(PROP_A, *NIGHT)
    books = pulled.assign(entry_id=[f"le_{i}" for i in range(len(pulled))], posted_at=pulled.created_at)
    booked = with_match_keys(books.assign(in_night=True))[list(LEDGER_RECORD_COLUMNS)].astype(
        LEDGER_RECORD_COLUMNS
    )
    result = diff_night(pulled, booked)
    assert result.findings.empty and result.matched_count == len(pulled) == 62
    confirmed = dict.fromkeys(pulled.booking_id.unique(), "confirmed")
    now = datetime.fromtimestamp(T0 + DAY, UTC) + timedelta(hours=2)
    orphans = find_orphaned_captured_payments(
        captured_payments_from_provider(pulled), confirmed, now, timedelta(hours=1)
    )
    assert orphans.empty


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:8000", "http://127.0.0.1:8000/api/", "https://h.test/sub"]
)
@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/charges/ch_1", {"expand[]": "balance_transaction"}),
        (
            "/v1/charges",
            {"created[gte]": 1, "limit": 100, "expand[]": ["data.balance_transaction", "data.charge"]},
        ),
        ("/v1/charges/ch%2F1", None),
        ("v1/x", {}),
        ("/v1/x?a=1", {"b": "c d"}),
        ("/v1/x?a=%7e", None),
        ("/v1/é x", {"q": "é&=", "t": True, "n": None}),
        ("/v1/charges/ch_1.a~b-c", {"q": "é&= +/%", "t": True, "n": None, "l": (1, "x y")}),
        ("/v1/charges/..", {"limit": 1}),
        ("/v1/./x/", {"limit": 1}),
        ("/v1//x", {"limit": 1}),
        ("/v1/.well-known", {"limit": 1}),
    ],
)
def test_request_url_is_the_one_httpx_would_build(
    base_url: str, path: str, params: dict[str, Any] | None
) -> None:
    """``ProviderHttp`` builds each request's URL itself (joining a plain path and its query without a
    parse); it must be byte for byte what httpx's own merge of base URL, path and params gives."""
    with ProviderHttp(base_url, max_rps=float("inf")) as http, httpx.Client(base_url=base_url) as plain:
        built = plain.build_request("GET", path, params=params).url
        assert http._url(path, params) == str(built)
        assert httpx.URL(http._url(path, params)).raw_path == built.raw_path


async def _cookie_setter(scope: dict[str, Any], _receive: Any, send: Any) -> None:
    """Answers every request with a ``Set-Cookie`` and, as JSON, the ``Cookie`` header it carried."""
    if scope["type"] != "http":
        return
    carried = dict(scope["headers"]).get(b"cookie", b"").decode()
    headers = [(b"content-type", b"application/json"), (b"set-cookie", b"session=s1; Path=/")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps({"cookie": carried}).encode()})


def test_a_cookie_the_provider_sets_is_never_sent_back() -> None:
    """An API client authenticates by key: a response's ``Set-Cookie`` is not kept, so no later request
    carries it (a plain httpx client, which keeps cookies, sends it back)."""
    with ServerThread(_cookie_setter) as server:
        with httpx.Client(base_url=server.base_url) as plain:
            assert [plain.get("/v1/x").json()["cookie"] for _ in range(2)] == ["", "session=s1"]
        with ProviderHttp(server.base_url, max_rps=float("inf")) as http:
            assert [http.get_json("/v1/x") for _ in range(2)] == [{"cookie": ""}] * 2


# What the body server answers, by path: UTF-8 JSON, then what is not JSON between systems (RFC 8259).
BODIES = {
    "/v1/utf8": '{"description": "Zimmer 12 · café · 東京", "amount": 9007199254740993}'.encode(),
    "/v1/nan": b'{"amount": NaN}',
    "/v1/latin1": '{"description": "café"}'.encode("latin-1"),
    "/v1/huge": b'{"amount": 1e400}',
}


async def _body_server(scope: dict[str, Any], _receive: Any, send: Any) -> None:
    """Answers each path of ``BODIES`` with its bytes as ``application/json``, whatever they are."""
    if scope["type"] != "http":
        return
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODIES[scope["path"]]})


def test_a_body_is_json_only_as_utf_8_and_anything_else_is_retried_as_invalid() -> None:
    """UTF-8 JSON decodes exactly (an integer past a double's precision stays an integer); NaN, Latin-1
    and a number past a double's range are invalid bodies, retried up to the attempts and then reported."""
    with (
        ServerThread(_body_server) as server,
        ProviderHttp(server.base_url, retry=FAST_RETRY, max_rps=float("inf")) as http,
    ):
        assert http.get_json("/v1/utf8") == json.loads(BODIES["/v1/utf8"])
        for path in ("/v1/nan", "/v1/latin1", "/v1/huge"):
            with pytest.raises(ProviderUnavailable, match=rf"GET {path} failed after .*invalid body"):
                http.get_json(path)


class _Target(http.server.BaseHTTPRequestHandler):
    """Answers every request with its request target, as JSON: absolute as a proxy is asked, else a path."""

    def do_GET(self) -> None:
        body = json.dumps({"target": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        """Quiet."""


def test_requests_go_through_the_proxy_the_environment_names_unless_no_proxy_exempts_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As httpx and requests do: ``HTTP_PROXY`` (``HTTPS_PROXY`` for https) carries the provider's requests,
    in absolute form, unless ``NO_PROXY`` names the provider's host."""
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Target) for _ in range(2)]
    proxy, provider = (f"http://127.0.0.1:{server.server_address[1]}" for server in servers)
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy)
        for no_proxy, target in (("", f"{provider}/base/v1/x?limit=1"), ("127.0.0.1", "/base/v1/x?limit=1")):
            monkeypatch.setenv("NO_PROXY", no_proxy)
            with ProviderHttp(f"{provider}/base", max_rps=float("inf")) as client:
                assert client.get_json("/v1/x", params={"limit": 1}) == {"target": target}, no_proxy
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def test_by_id_reads_share_the_clients_threads_and_a_failure_waits_for_the_started_ones() -> None:
    """``fetch_each`` runs on the client's own threads (started once, not per call, never more than its
    concurrency); the first failure is raised only once the reads already started have ended, as a pool
    of the call's own ended them."""
    threads: set[str] = set()
    ended: list[str] = []

    def fetch_one(object_id: str) -> dict[str, Any]:
        threads.add(threading.current_thread().name)
        if object_id == "bad":
            raise ProviderDataError("bad answer")
        if object_id == "slow":
            threading.Event().wait(0.3)
        ended.append(object_id)
        return {"id": object_id}

    with ProviderHttp("http://127.0.0.1:9", max_concurrency=2, max_rps=float("inf")) as http:
        for _ in range(3):
            ids = [f"ch_{n}" for n in range(5)]
            assert fetch_each(ids, fetch_one, http) == {i: {"id": i} for i in ids}
        assert 1 <= len(threads) <= 2 and all(name.startswith("provider-http") for name in threads)
        with pytest.raises(ProviderDataError, match="bad answer"):
            fetch_each(["slow", "bad"], fetch_one, http)
        assert ended[-1] == "slow"
