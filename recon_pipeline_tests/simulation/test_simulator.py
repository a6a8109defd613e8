"""The simulator speaks the Stripe subset of docs/design.md over real HTTP, and its fault switches work."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from recon_pipeline.providers.stripe.api_version import API_VERSION
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.dagster_processes import free_port, wait_until
from recon_pipeline_tests.support.provider_fixtures import (
    T0,
    RunningSimulator,
    StartSimulator,
    make_charge,
    make_payment_intent,
    make_refund,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)


def _get(
    sim: RunningSimulator,
    path: str,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, Any] | None = None,
    **more_params: Any,
) -> httpx.Response:
    return sim.client.get(path, params={**(params or {}), **more_params}, headers=headers)


def _ids(response: httpx.Response) -> list[str]:
    return [obj["id"] for obj in response.json()["data"]]


def _charges(n: int, start: int = T0, step: int = 10) -> list[dict[str, Any]]:
    return [make_charge(f"ch_{i:05d}", start + i * step) for i in range(n)]


def test_list_pages_newest_first_without_duplicates(simulator: StartSimulator) -> None:
    charges = _charges(250)
    charges.append(make_charge("ch_tie_b", T0 + 500))  # same created as ch_00050: ordered by id desc
    sim = simulator(SimulatorStore(charges=charges))
    seen: list[str] = []
    pages = []
    cursor: dict[str, str] = {}
    for _ in range(10):
        body = _get(sim, "/v1/charges", limit=100, params=cursor).json()
        assert body["object"] == "list" and body["url"] == "/v1/charges"
        pages.append(len(body["data"]))
        seen += [c["id"] for c in body["data"]]
        if not body["has_more"]:
            break
        cursor = {"starting_after": body["data"][-1]["id"]}
    assert pages == [100, 100, 51]
    assert len(set(seen)) == 251
    expected = sorted(charges, key=lambda c: (c["created"], c["id"]), reverse=True)
    assert seen == [c["id"] for c in expected]
    assert seen.index("ch_tie_b") == seen.index("ch_00050") - 1


def test_created_filters_and_default_limit(simulator: StartSimulator) -> None:
    sim = simulator(SimulatorStore(charges=_charges(30)))  # created T0, T0+10, ..., T0+290
    window = _get(sim, "/v1/charges", limit=100, params={"created[gte]": T0 + 100, "created[lt]": T0 + 200})
    assert _ids(window) == [f"ch_{i:05d}" for i in range(19, 9, -1)]  # 100 included, 200 excluded
    other = _get(sim, "/v1/charges", limit=100, params={"created[gt]": T0 + 100, "created[lte]": T0 + 200})
    assert _ids(other) == [f"ch_{i:05d}" for i in range(20, 10, -1)]
    default = _get(sim, "/v1/charges")
    assert len(default.json()["data"]) == 10 and default.json()["has_more"] is True


@pytest.mark.parametrize(
    "params",
    [{"limit": 0}, {"limit": 101}, {"limit": "ten"}, {"starting_after": "ch_nope"}, {"created[gte]": "x"}],
)
def test_bad_list_parameters_are_stripe_errors(simulator: StartSimulator, params: dict[str, Any]) -> None:
    sim = simulator(SimulatorStore(charges=_charges(3)))
    response = _get(sim, "/v1/charges", **params)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/v1/charges", "created[after]"),
        ("/v1/refunds", "payment"),
        ("/v1/charges/ch_00000", "limit"),
        ("/v1/payment_intents/pi_00000", "expand"),
    ],
)
def test_unknown_parameters_are_refused_as_stripe_does(
    simulator: StartSimulator, path: str, param: str
) -> None:
    charges = _charges(1)
    sim = simulator(SimulatorStore(charges=charges, payment_intents=[make_payment_intent(charges[0])]))
    assert _get(sim, path).status_code == 200
    response = _get(sim, path, **{param: "1"})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "type": "invalid_request_error",
        "message": f"Received unknown parameter: {param}",
        "param": param,
        "code": "parameter_unknown",
    }


def test_expand_balance_transaction_and_account_key_hidden(simulator: StartSimulator) -> None:
    sim = simulator(SimulatorStore(charges=[make_charge("ch_1", T0, fee=250)]))
    plain = _get(sim, "/v1/charges").json()["data"][0]
    assert plain["balance_transaction"] == "txn_1" and "account" not in plain
    expanded = sim.client.get("/v1/charges", params=[("expand[]", "data.balance_transaction")]).json()[
        "data"
    ][0]
    assert expanded["balance_transaction"]["fee"] == 250
    by_id = _get(sim, "/v1/charges/ch_1", params={"expand[]": "balance_transaction"}).json()
    assert by_id["balance_transaction"]["id"] == "txn_1" and "account" not in by_id
    assert _get(sim, "/v1/charges/ch_1").json()["balance_transaction"] == "txn_1"


def test_stripe_account_scopes_lists_and_retrievals(simulator: StartSimulator) -> None:
    platform = make_charge("ch_p", T0)
    connected = make_charge("ch_c", T0 + 1, account="acct_1", property_id=None)
    sim = simulator(
        SimulatorStore(charges=[platform, connected], payment_intents=[make_payment_intent(connected)])
    )
    acct = {"Stripe-Account": "acct_1"}
    assert _ids(_get(sim, "/v1/charges")) == ["ch_p"]
    assert _ids(_get(sim, "/v1/charges", headers=acct)) == ["ch_c"]
    assert _ids(_get(sim, "/v1/charges", headers={"Stripe-Account": "acct_2"})) == []
    assert _get(sim, "/v1/charges/ch_c", headers=acct).status_code == 200
    missing = _get(sim, "/v1/charges/ch_c")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "resource_missing"
    pinned = {**acct, "Stripe-Version": API_VERSION}
    assert _get(sim, "/v1/payment_intents/pi_c", headers=pinned).json()["latest_charge"] == "ch_c"
    assert _get(sim, "/v1/payment_intents/pi_c").status_code == 404


class _CountedIterations(list):  # type: ignore[type-arg]
    """A store's list that counts how often it is walked."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        type(self).walks += 1
        return super().__iter__()


def test_every_account_s_lists_come_from_one_pass_over_the_world_not_one_pass_each() -> None:
    """A world of many connected accounts: each account's first list reads its own objects, not every
    object of the world (one scan per account made 10,000 accounts cost the simulator its size squared)."""
    accounts = [f"acct_{n}" for n in range(50)]
    charges = _CountedIterations(
        make_charge(f"ch_{n}_{i}", T0 + i, account=account, property_id=None)
        for n, account in enumerate(accounts)
        for i in range(3)
    )
    store = SimulatorStore(charges=charges)
    walked_to_index = _CountedIterations.walks
    for account in accounts:
        assert [c["id"] for c in store.view("charges", account).objects] == [
            f"ch_{accounts.index(account)}_{i}" for i in range(3)
        ]
        assert store.view("charges", account, "status", "succeeded").objects
    assert _CountedIterations.walks - walked_to_index == 1


def test_refunds_list_by_charge_and_by_id(simulator: StartSimulator) -> None:
    first, second = make_charge("ch_1", T0), make_charge("ch_2", T0 + 1)
    refunds = [
        make_refund("re_1", first, T0 + 10, 1000),
        make_refund("re_2", first, T0 + 20, 2000),
        make_refund("re_3", second, T0 + 30, 500),
    ]
    sim = simulator(SimulatorStore(charges=[first, second], refunds=refunds))
    assert _ids(_get(sim, "/v1/refunds", charge="ch_1")) == ["re_2", "re_1"]
    assert _ids(_get(sim, "/v1/refunds")) == ["re_3", "re_2", "re_1"]
    assert _ids(_get(sim, "/v1/refunds", charge="ch_none")) == []
    assert _get(sim, "/v1/refunds/re_3").json()["charge"] == "ch_2"
    assert _get(sim, "/v1/refunds/re_9").status_code == 404


def test_refunds_list_expands_each_refunds_charge(simulator: StartSimulator) -> None:
    charge = make_charge("ch_1", T0, fee=250, booking_id="bk_1")
    sim = simulator(SimulatorStore(charges=[charge], refunds=[make_refund("re_1", charge, T0 + 10, 1000)]))
    listed = sim.client.get("/v1/refunds", params=[("expand[]", "data.charge")]).json()["data"][0]
    assert listed["charge"]["id"] == "ch_1" and listed["charge"]["metadata"]["booking_id"] == "bk_1"
    assert listed["charge"]["balance_transaction"] == "txn_1" and "account" not in listed["charge"]
    deeper = [("expand[]", "data.charge"), ("expand[]", "data.charge.balance_transaction")]
    listed = sim.client.get("/v1/refunds", params=deeper).json()["data"][0]
    assert listed["charge"]["balance_transaction"]["fee"] == 250
    assert _get(sim, "/v1/refunds").json()["data"][0]["charge"] == "ch_1"


def test_events_list_filters(simulator: StartSimulator) -> None:
    events = [
        {
            "id": f"evt_{i}",
            "object": "event",
            "type": "charge.succeeded" if i % 2 else "charge.refunded",
            "created": T0 + i,
            "data": {"object": {"id": f"ch_{i}"}},
            "account": None,
        }
        for i in range(6)
    ]
    sim = simulator(SimulatorStore(events=events))
    assert _ids(_get(sim, "/v1/events", params={"created[gte]": T0 + 3})) == ["evt_5", "evt_4", "evt_3"]
    assert _ids(_get(sim, "/v1/events", type="charge.succeeded")) == ["evt_5", "evt_3", "evt_1"]
    assert _ids(_get(sim, "/v1/events", starting_after="evt_2", limit=1)) == ["evt_1"]


def test_api_key_required_when_set(simulator: StartSimulator) -> None:
    sim = simulator(SimulatorStore(charges=_charges(1)), api_key="sk_test_secret")
    assert _get(sim, "/v1/charges").status_code == 401
    wrong = _get(sim, "/v1/charges", headers={"Authorization": "Bearer sk_test_other"})
    assert wrong.status_code == 401 and "sk_test" not in wrong.text
    assert _get(sim, "/v1/charges", headers={"Authorization": "Bearer sk_test_secret"}).status_code == 200
    assert sim.stats()["api_requests"] == 3  # control endpoints need no key and are not counted


def test_injected_statuses_retry_after_and_stats(simulator: StartSimulator) -> None:
    sim = simulator(SimulatorStore(charges=_charges(1)))
    state = sim.set_faults(statuses=[429, 503], retry_after="7")
    assert state["statuses"] == [429, 503]
    first = _get(sim, "/v1/charges")
    assert first.status_code == 429 and first.headers["Retry-After"] == "7"
    assert _get(sim, "/v1/charges").status_code == 503
    assert _get(sim, "/v1/charges").status_code == 200
    stats = sim.stats()
    assert stats["api_requests"] == 3
    assert stats["responses_by_status"] == {"200": 1, "429": 1, "503": 1}
    assert stats["requests_by_path"] == {"/v1/charges": 3}
    sim.client.post("/_simulator/reset-stats")
    assert sim.stats()["api_requests"] == 0


def test_fail_after_requests_and_reset(simulator: StartSimulator) -> None:
    sim = simulator(SimulatorStore(charges=_charges(1)))
    sim.set_faults(fail_after_requests=2)
    assert [_get(sim, "/v1/charges").status_code for _ in range(4)] == [200, 200, 500, 500]
    sim.client.delete("/_simulator/faults")
    assert _get(sim, "/v1/charges").status_code == 200


def test_truncated_body_has_matching_content_length(simulator: StartSimulator) -> None:
    sim = simulator(SimulatorStore(charges=_charges(3)))
    sim.set_faults(truncate_next=1)
    cut = _get(sim, "/v1/charges")
    assert cut.status_code == 200 and int(cut.headers["content-length"]) == len(cut.content)
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.content)
    assert len(_get(sim, "/v1/charges").json()["data"]) == 3


def test_slow_ms_and_path_prefix(simulator: StartSimulator) -> None:
    sim = simulator(SimulatorStore(charges=_charges(1), refunds=[make_refund("re_1", _charges(1)[0], T0, 1)]))
    sim.set_faults(slow_ms=150, statuses=[500], path_prefix="/v1/refunds")
    began = time.monotonic()
    assert _get(sim, "/v1/charges").status_code == 200
    assert time.monotonic() - began < 0.15
    began = time.monotonic()
    assert _get(sim, "/v1/refunds").status_code == 500
    assert time.monotonic() - began >= 0.15


def test_bad_fault_settings_are_rejected(simulator: StartSimulator) -> None:
    sim = simulator(SimulatorStore())
    for body in ({"statuses": [200]}, {"slow_ms": -1}, {"nonsense": 1}):
        response = sim.client.post("/_simulator/faults", json=body)
        assert response.status_code == 400, body


def test_store_json_round_trip_and_duplicate_ids(tmp_path: Path) -> None:
    charge = make_charge("ch_1", T0)
    store = SimulatorStore(charges=[charge], refunds=[make_refund("re_1", charge, T0 + 5, 100)])
    store.to_json(tmp_path / "store.json")
    loaded = SimulatorStore.from_json(tmp_path / "store.json")
    assert loaded == store
    assert loaded.get("refunds", "re_1") == store.refunds[0]
    assert loaded.get("charges", "ch_2") is None
    with pytest.raises(ValueError, match="duplicate"):
        SimulatorStore(charges=[charge, dict(charge)])


def test_server_thread_binds_loopback_and_stops() -> None:
    with ServerThread(build_app(SimulatorStore())) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        url = f"{server.base_url}/_simulator/stats"
        assert httpx.get(url, timeout=5).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=2)


def test_razorpay_flavour_serves_the_same_store_as_collections(simulator: StartSimulator) -> None:
    charges = [make_charge(f"pay_{i:03d}", T0 + i * 10) for i in range(25)]
    charges[7]["metadata"] = {}
    refunds = [
        make_refund("rfnd_1", charges[0], T0 + 5, 100),
        make_refund("rfnd_2", charges[1], T0 + 15, 200),
    ]
    sim = simulator(
        SimulatorStore(charges=charges, refunds=refunds), api_key="rzp_key:secret", flavour="razorpay"
    )
    auth = ("rzp_key", "secret")
    page = sim.client.get(
        "/v1/payments", params={"from": T0 + 20, "to": T0 + 100, "count": 5, "skip": 2}, auth=auth
    )
    body = page.json()
    assert (body["entity"], body["count"]) == ("collection", 5)
    assert [p["id"] for p in body["items"]] == [f"pay_{i:03d}" for i in range(8, 3, -1)]  # `to` inclusive
    assert body["items"][1]["notes"] == [] and body["items"][0]["currency"] == "EUR"
    assert {p["entity"] for p in body["items"]} == {"payment"}
    default = sim.client.get("/v1/payments", auth=auth).json()
    assert default["count"] == 10 and default["items"][0]["id"] == "pay_024"
    refunds_of = sim.client.get("/v1/payments/pay_001/refunds", auth=auth).json()
    assert [(r["id"], r["payment_id"], r["status"]) for r in refunds_of["items"]] == [
        ("rfnd_2", "pay_001", "processed")
    ]
    assert [r["id"] for r in sim.client.get("/v1/refunds", auth=auth).json()["items"]] == ["rfnd_2", "rfnd_1"]
    assert sim.client.get("/v1/refunds/rfnd_1", auth=auth).json()["amount"] == 100
    unknown = sim.client.get("/v1/payments/pay_nope", auth=auth)
    assert unknown.status_code == 400
    assert unknown.json()["error"]["description"] == "The id provided does not exist"
    too_many = sim.client.get("/v1/payments", params={"count": 101}, auth=auth)
    assert too_many.status_code == 400 and too_many.json()["error"]["field"] == "count"
    assert sim.client.get("/v1/payments", auth=("rzp_key", "wrong")).status_code == 401
    assert sim.client.get("/v1/events", auth=auth).status_code == 404  # Razorpay has no events API
    assert sim.client.get("/v1/charges", auth=auth).status_code == 404


def test_razorpay_statuses_rendered_from_the_store(simulator: StartSimulator) -> None:
    captured, refunded = make_charge("pay_c", T0), make_charge("pay_r", T0 + 1)
    refunded.update(amount_refunded=10_000, refunded=True)
    partial = make_charge("pay_p", T0 + 2)
    partial["amount_refunded"] = 100
    authorized = make_charge("pay_a", T0 + 3, captured=False, fee=None)
    failed = make_charge("pay_f", T0 + 4, status="failed", captured=False, fee=None)
    store = SimulatorStore(charges=[captured, refunded, partial, authorized, failed])
    sim = simulator(store, flavour="razorpay")
    items = {p["id"]: p for p in sim.client.get("/v1/payments").json()["items"]}
    assert {i: (p["status"], p["captured"], p["refund_status"], p["fee"]) for i, p in items.items()} == {
        "pay_c": ("captured", True, None, 300),
        "pay_r": ("refunded", True, "full", 300),
        "pay_p": ("captured", True, "partial", 300),
        "pay_a": ("authorized", False, None, None),
        "pay_f": ("failed", False, None, None),
    }


def test_razorpay_orders_list_their_payments(simulator: StartSimulator) -> None:
    """``GET /v1/orders/{id}/payments`` as Razorpay serves it: every payment of the order, newest first;
    a payment names its order in ``order_id``; an unknown order is Razorpay's 400."""
    failed = make_charge("pay_1", T0, status="failed", captured=False, fee=None, payment_intent="order_1")
    paid = make_charge("pay_2", T0 + 60, payment_intent="order_1")
    plain = make_charge("pay_3", T0 + 90)
    sim = simulator(SimulatorStore(charges=[failed, paid, plain]), flavour="razorpay")
    body = sim.client.get("/v1/orders/order_1/payments").json()
    assert (body["entity"], body["count"]) == ("collection", 2)
    assert [(p["id"], p["status"], p["order_id"]) for p in body["items"]] == [
        ("pay_2", "captured", "order_1"),
        ("pay_1", "failed", "order_1"),
    ]
    assert sim.client.get("/v1/payments/pay_3").json()["order_id"] is None
    for unknown in ("order_nope", "pi_3"):
        answer = sim.client.get(f"/v1/orders/{unknown}/payments")
        assert answer.status_code == 400
        assert answer.json()["error"]["description"] == "The id provided does not exist"


def test_razorpay_settlement_recon_lists_what_settled_on_a_day(simulator: StartSimulator) -> None:
    # T0 is Thursday 2026-01-01 05:30 IST: what is created that day settles on Monday 01-05 at 11:00 IST
    # (T+2 working days: the weekend does not count).
    paid = [make_charge(f"pay_{i:02d}", T0 + i * 60, fee=236) for i in range(12)]
    next_day = make_charge("pay_next", T0 + 86_400)  # created Friday 01-02 IST: settles Tuesday 01-06
    pending = make_charge("pay_auth", T0 + 5, captured=False, fee=None)
    connected = make_charge("pay_conn", T0 + 6, account="acc_x")
    refund = make_refund("rfnd_1", paid[0], T0 + 30, 1_000)
    settles_at = T0 + 4 * 86_400 + 5 * 3600 + 1800  # 01-05 11:00 IST
    now = [settles_at]
    store = SimulatorStore(
        charges=[*paid, next_day, pending, connected],
        refunds=[refund],
        settled_fees={"pay_03": 250},
        clock=lambda: now[0],
    )
    sim = simulator(store, flavour="razorpay")
    saturday = {"year": 2026, "month": 1, "day": 3}
    assert _get(sim, "/v1/settlements/recon/combined", params=saturday).json()["count"] == 0
    day = {"year": 2026, "month": 1, "day": 5}
    first = _get(sim, "/v1/settlements/recon/combined", params={**day, "count": 5}).json()
    rest = _get(sim, "/v1/settlements/recon/combined", params={**day, "count": 1000, "skip": 5}).json()
    assert (first["entity"], first["count"], rest["count"]) == ("collection", 5, 8)
    items = first["items"] + rest["items"]
    assert [i["entity_id"] for i in items] == [c["id"] for c in paid] + ["rfnd_1"]  # oldest first
    by_id = {i["entity_id"]: i for i in items}
    assert {(i["type"], i["settled"], i["settled_at"], i["settlement_id"]) for i in items} == {
        ("payment", True, settles_at, "setl_sim20260105"),
        ("refund", True, settles_at, "setl_sim20260105"),
    }
    assert {i["card_network"] for i in items} == {"Visa"} and {i["dispute_id"] for i in items} == {None}
    assert (by_id["pay_00"]["fee"], by_id["pay_00"]["tax"], by_id["pay_00"]["credit"]) == (236, 36, 9_764)
    assert (by_id["pay_03"]["fee"], by_id["pay_03"]["credit"]) == (250, 9_750)  # revised at settlement
    assert (by_id["rfnd_1"]["debit"], by_id["rfnd_1"]["payment_id"], by_id["rfnd_1"]["fee"]) == (
        1_000,
        "pay_00",
        0,
    )
    month = _get(sim, "/v1/settlements/recon/combined", params={"year": 2026, "month": 1, "count": 100})
    assert month.json()["count"] == 13  # 01-06 has not settled yet
    now[0] = settles_at + 86_400
    month = _get(sim, "/v1/settlements/recon/combined", params={"year": 2026, "month": 1, "count": 100})
    assert [i["entity_id"] for i in month.json()["items"]][-1] == "pay_next"
    now[0] = settles_at - 1
    assert _get(sim, "/v1/settlements/recon/combined", params=day).json()["count"] == 0
    for params, field in (
        ({"month": 1}, "year"),
        ({"year": 2026}, "month"),
        ({**day, "day": 32}, "day"),
        ({**day, "day": 0}, "day"),
        ({**day, "year": 99_999}, "year"),
    ):
        bad = _get(sim, "/v1/settlements/recon/combined", params=params)
        assert bad.status_code == 400 and bad.json()["error"]["field"] == field
    too_many = _get(sim, "/v1/settlements/recon/combined", params={**day, "count": 1001})
    assert too_many.status_code == 400 and too_many.json()["error"]["field"] == "count"


@pytest.mark.slow  # a `recon simulator serve` process
def test_cli_serves_the_razorpay_demo_world() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECON_")}
    port = free_port()
    command = [sys.executable, "-m", "recon_pipeline.cli", "simulator", "serve", "--flavour", "razorpay"]
    with subprocess.Popen(
        [*command, "--bookings", "5", "--port", str(port)], env=env, stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            assert f"http://127.0.0.1:{port} speaking razorpay" in process.stdout.readline()
            url = f"http://127.0.0.1:{port}/v1/payments"

            def payments() -> dict[str, Any] | None:
                with contextlib.suppress(httpx.TransportError):
                    return dict(httpx.get(url, params={"count": 100}, timeout=2).json())
                return None

            items = wait_until("the simulator", payments, timeout_s=20, interval_s=0.1)["items"]
        finally:
            process.terminate()
            process.wait(timeout=10)
    assert items and {p["entity"] for p in items} == {"payment"}
    assert {p["notes"]["property_id"] for p in items} == {"mumbai-marine"}
