"""The provider client (ProviderHttp) and the Stripe adapter, against the simulator over real HTTP."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pytest

from recon_pipeline.provider.errors import (
    IncompletePullError,
    ProviderDataError,
    ProviderRequestRejected,
    ProviderUnavailable,
)
from recon_pipeline.provider.http import ProviderHttp, RetryPolicy
from recon_pipeline.provider.records import PROVIDER_RECORD_COLUMNS
from recon_pipeline.provider.stripe import (
    PropertyAccount,
    StripeAdapter,
    charge_rows,
    records_frame,
    refund_row,
)
from recon_pipeline.simulator.store import SimulatorStore
from recon_pipeline_tests.provider_fixtures import (
    DAY,
    FAST_RETRY,
    T0,
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


@pytest.fixture
def clients() -> Iterator[list[ProviderHttp]]:
    """ProviderHttp instances made by a test, closed at its end."""
    made: list[ProviderHttp] = []
    yield made
    for http in made:
        http.close()


def _http(
    sim: RunningSimulator, clients: list[ProviderHttp], retry: RetryPolicy = FAST_RETRY, **kwargs: Any
) -> ProviderHttp:
    http = ProviderHttp(sim.base_url, retry=retry, **kwargs)
    clients.append(http)
    return http


def _adapter(sim: RunningSimulator, clients: list[ProviderHttp], **kwargs: Any) -> StripeAdapter:
    return StripeAdapter(_http(sim, clients, **kwargs))


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
    assert http.get_json("/v1/charges/ch_1") is not None
    assert sleeps == [30.0]  # capped by max_retry_after_s


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
    with caplog.at_level(logging.WARNING, logger="recon_pipeline.provider.http"):
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
    with pytest.raises(ProviderUnavailable, match="ConnectError"):
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
    with pytest.raises(ProviderRequestRejected, match="HTTP 400.*greater than or equal to 1") as caught:
        http.get_json("/v1/charges", params={"limit": 1000})
    assert "sk_test_42" not in str(caught.value)
    assert sim.stats()["api_requests"] == 1
    assert http.get_json("/v1/charges/ch_missing") is None


def test_auth_required_when_api_key_set(simulator: StartSimulator, clients: list[ProviderHttp]) -> None:
    sim = simulator(SimulatorStore(charges=[make_charge("ch_1", T0 + 5)]), api_key="sk_test_right")
    with pytest.raises(IncompletePullError) as caught:
        _adapter(sim, clients, api_key="sk_test_wrong").pull_night(PROP_A, *NIGHT)
    assert isinstance(caught.value.__cause__, ProviderRequestRejected) and "HTTP 401" in str(caught.value)
    assert "sk_test_wrong" not in str(caught.value)
    assert len(_adapter(sim, clients, api_key="sk_test_right").pull_night(PROP_A, *NIGHT)) == 2


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


# --- StripeAdapter --------------------------------------------------------------------------------------


def test_pull_paginates_all_records(simulator: StartSimulator, clients: list[ProviderHttp]) -> None:
    charges = [make_charge(f"ch_{i:04d}", T0 + i * 60, fee=100 + i) for i in range(250)]
    sim = simulator(SimulatorStore(charges=charges))
    frame = _adapter(sim, clients).pull_night(PROP_A, *NIGHT)
    assert sim.stats()["requests_by_path"] == {"/v1/charges": 3, "/v1/refunds": 1}
    payments = frame[frame.kind == "payment"]
    assert sorted(payments.provider_record_id) == [c["id"] for c in charges]
    assert frame.provider_record_id.duplicated().sum() == 250  # each charge once more, as its fee row
    assert set(frame[frame.kind == "fee"].amount_minor) == {-(100 + i) for i in range(250)}
    assert {n: str(d) for n, d in frame.dtypes.items()} == PROVIDER_RECORD_COLUMNS


def test_pull_window_is_gte_inclusive_lt_exclusive(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    charges = [
        make_charge("ch_before", T0 - 1),
        make_charge("ch_first", T0),
        make_charge("ch_last", T0 + DAY - 1),
        make_charge("ch_next", T0 + DAY),
    ]
    sim = simulator(SimulatorStore(charges=charges))
    frame = _adapter(sim, clients).pull_night(PROP_A, *NIGHT)
    assert set(frame.provider_record_id) == {"ch_first", "ch_last"}


def test_pull_attribution_by_account_or_metadata(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    mine, other = make_charge("ch_a", T0 + 1), make_charge("ch_b", T0 + 2, property_id="prop_b")
    connected = make_charge("ch_c", T0 + 3, account="acct_c", property_id=None, fee=0)
    refunds = [make_refund("re_a", mine, T0 + 10, 100), make_refund("re_b", other, T0 + 11, 200)]
    refunds.append(make_refund("re_c", connected, T0 + 12, 300))
    sim = simulator(SimulatorStore(charges=[mine, other, connected], refunds=refunds))
    adapter = _adapter(sim, clients)
    assert _rows(adapter.pull_night(PROP_A, *NIGHT)) == {
        ("ch_a", "payment", 10_000),
        ("ch_a", "fee", -300),
        ("re_a", "refund", -100),
    }
    frame = adapter.pull_night(PropertyAccount("prop_c", "acct_c"), *NIGHT)
    assert _rows(frame) == {("ch_c", "payment", 10_000), ("re_c", "refund", -300)}
    assert set(frame.property_id) == {"prop_c"} and set(frame.booking_id.isna()) == {True}


def test_refund_of_earlier_nights_charge_is_fetched_once(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    old_mine = make_charge("ch_old", T0 - 3 * DAY, amount=9_000, booking_id="bk_old")
    old_other = make_charge("ch_oth", T0 - DAY, property_id="prop_b")
    today = make_charge("ch_new", T0 + 100, amount=5_000)
    refunds = [
        make_refund("re_1", old_mine, T0 + 10, 2_000),  # partial
        make_refund("re_2", old_mine, T0 + 20, 3_000, status="pending"),  # second refund of the same charge
        make_refund("re_3", old_other, T0 + 30, 1_000),  # another property's
        make_refund("re_4", today, T0 + 200, 5_000),  # full refund of today's charge: no fetch
    ]
    sim = simulator(SimulatorStore(charges=[old_mine, old_other, today], refunds=refunds))
    frame = _adapter(sim, clients).pull_night(PROP_A, *NIGHT)
    refund_rows = frame[frame.kind == "refund"].set_index("provider_record_id")
    assert refund_rows.amount_minor.to_dict() == {"re_1": -2_000, "re_2": -3_000, "re_4": -5_000}
    assert refund_rows.settled.to_dict() == {"re_1": True, "re_2": False, "re_4": True}
    assert (
        refund_rows.loc["re_1", "booking_id"] == "bk_old" and refund_rows.loc["re_1", "charge_id"] == "ch_old"
    )
    paths = sim.stats()["requests_by_path"]
    assert paths["/v1/charges/ch_old"] == 1 and paths["/v1/charges/ch_oth"] == 1
    assert "/v1/charges/ch_new" not in paths
    assert "ch_old" not in set(frame[frame.kind == "payment"].provider_record_id)


def test_pull_survives_transient_faults(simulator: StartSimulator, clients: list[ProviderHttp]) -> None:
    charges = [make_charge(f"ch_{i:04d}", T0 + i, currency="jpy", amount=1_000 + i) for i in range(150)]
    sim = simulator(SimulatorStore(charges=charges))
    sim.set_faults(statuses=[429, 503], truncate_next=1, path_prefix="/v1/charges")  # 4th attempt succeeds
    frame = _adapter(sim, clients).pull_night(PROP_A, *NIGHT)
    payments = frame[frame.kind == "payment"]
    assert len(payments) == 150 and set(payments.currency) == {"JPY"}
    assert sorted(payments.amount_minor) == [1_000 + i for i in range(150)]
    assert sim.stats()["responses_by_status"]["429"] == 1


def test_pull_failing_midway_raises_and_returns_nothing(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    charges = [make_charge(f"ch_{i:04d}", T0 + i) for i in range(250)]
    sim = simulator(SimulatorStore(charges=charges))
    sim.set_faults(fail_after_requests=1, path_prefix="/v1/charges")
    result: list[pd.DataFrame] = []
    with pytest.raises(IncompletePullError) as caught:
        result.append(_adapter(sim, clients).pull_night(PROP_A, *NIGHT))
    assert result == []
    assert isinstance(caught.value.__cause__, ProviderUnavailable)
    assert sim.stats()["requests_by_path"]["/v1/charges"] == 1 + FAST_RETRY.max_attempts


def test_pull_with_malformed_record_fails_naming_it(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    bad = make_charge("ch_bad", T0 + 5)
    bad["amount"] = "12.50"
    sim = simulator(SimulatorStore(charges=[make_charge("ch_ok", T0 + 1), bad]))
    with pytest.raises(IncompletePullError, match=r"'ch_bad'.*'amount'") as caught:
        _adapter(sim, clients).pull_night(PROP_A, *NIGHT)
    assert isinstance(caught.value.__cause__, ProviderDataError)


def test_pull_beyond_max_pages_is_incomplete(simulator: StartSimulator, clients: list[ProviderHttp]) -> None:
    sim = simulator(SimulatorStore(charges=[make_charge(f"ch_{i:04d}", T0 + i) for i in range(201)]))
    adapter = StripeAdapter(_http(sim, clients), max_pages=2)
    with pytest.raises(IncompletePullError, match="more than 2 pages"):
        adapter.pull_night(PROP_A, *NIGHT)


def test_fetch_by_id_is_concurrent_and_bounded(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    charges = [make_charge(f"ch_{i:03d}", T0 - DAY + i) for i in range(40)]
    sim = simulator(SimulatorStore(charges=charges))
    sim.set_faults(slow_ms=20)
    ids = [c["id"] for c in charges]
    frame = _adapter(sim, clients, max_concurrency=3).fetch_records_by_id(PROP_A, ids)
    assert sorted(set(frame.provider_record_id)) == ids
    assert sim.stats()["max_in_flight"] == 3


def test_fetch_by_id_absent_unknown_and_foreign(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    mine, other = make_charge("ch_a", T0 - DAY), make_charge("ch_b", T0 - DAY, property_id="prop_b")
    refunds = [make_refund("re_a", mine, T0 - 10, 700), make_refund("re_b", other, T0 - 10, 800)]
    sim = simulator(SimulatorStore(charges=[mine, other], refunds=refunds))
    frame = _adapter(sim, clients).fetch_records_by_id(
        PROP_A, ["re_a", "ch_missing", "re_b", "ch_b", "re_missing"]
    )
    assert _rows(frame) == {("re_a", "refund", -700)}
    assert len(_adapter(sim, clients).fetch_records_by_id(PROP_A, ["ch_missing"])) == 0


def test_fetch_by_id_unavailable_is_not_missing(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    sim = simulator(SimulatorStore(charges=[make_charge("ch_a", T0)]))
    sim.set_faults(fail_after_requests=0)
    with pytest.raises(IncompletePullError) as caught:
        _adapter(sim, clients).fetch_records_by_id(PROP_A, ["ch_a"])
    assert isinstance(caught.value.__cause__, ProviderUnavailable)


def test_fetch_current_state_by_id(simulator: StartSimulator, clients: list[ProviderHttp]) -> None:
    charge = make_charge("ch_c", T0, account="acct_c", property_id=None)
    sim = simulator(SimulatorStore(charges=[charge], payment_intents=[make_payment_intent(charge)]))
    adapter = _adapter(sim, clients)
    account = PropertyAccount("prop_c", "acct_c")
    fetched = adapter.fetch_charge(account, "ch_c")
    assert fetched is not None and fetched["balance_transaction"]["fee"] == 300
    intent = adapter.fetch_payment_intent(account, "pi_c")
    assert intent is not None and intent["latest_charge"] == "ch_c"
    assert adapter.fetch_charge(PropertyAccount("prop_c"), "ch_c") is None  # not on the platform account
    assert adapter.fetch_payment_intent(account, "pi_nope") is None
