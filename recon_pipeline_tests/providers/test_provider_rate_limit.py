"""Rate limits on both sides: the simulator's token bucket answers 429 over its limit, and the client's
request pacing (``max_rps`` / RECON_PROVIDER_MAX_RPS) keeps a concurrent pull under it with no 429 at all."""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from recon_pipeline.defs.resources import ProviderResource
from recon_pipeline.errors import ConfigError
from recon_pipeline.providers import PROVIDER_NAMES, provider_named
from recon_pipeline.providers.errors import ProviderUnavailable
from recon_pipeline.providers.http import (
    MAX_MISSED_SLOTS,
    ProviderHttp,
    RequestRateLimiter,
    RetryPolicy,
    start_on_a_slot,
)
from recon_pipeline.providers.ratelimit import SharedRateLimiter, deployment_rate
from recon_pipeline.providers.stripe.client import PropertyAccount, StripeAdapter
from recon_pipeline.simulation.host.faults import FaultSwitches
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.provider_fixtures import (
    DAY,
    FAST_RETRY,
    T0,
    StartSimulator,
    make_charge,
    make_refund,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)
from recon_pipeline_tests.support.rate_processes import busiest_second


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# --- the simulator's token bucket ---------------------------------------------------------------------


def test_bucket_allows_its_depth_then_answers_429_with_retry_after() -> None:
    clock = FakeClock()
    faults = FaultSwitches(clock=clock)
    state = faults.configure({"rate_limit_rps": 2, "rate_limit_burst": 3})
    assert (state["rate_limit_rps"], state["rate_limit_burst"]) == (2.0, 3)
    decisions = [faults.begin("/v1/charges") for _ in range(4)]
    assert [d.status for d in decisions] == [None, None, None, 429]
    assert decisions[3].retry_after == "1"  # 0.5 s to the next token, rounded up to whole seconds
    clock.now += 0.5  # one token back
    assert faults.begin("/v1/refunds").status is None
    assert faults.begin("/v1/refunds").status == 429
    clock.now += 60  # refills to the depth, never beyond
    assert [faults.begin("/v1/charges").status for _ in range(4)] == [None, None, None, 429]
    assert faults.stats()["rate_limited"] == 3


def test_bucket_defaults_to_one_second_and_ignores_path_prefix() -> None:
    clock = FakeClock()
    faults = FaultSwitches(clock=clock)
    faults.configure({"rate_limit_rps": 0.5, "path_prefix": "/v1/refunds"})
    assert faults.state()["rate_limit_burst"] == 1
    assert faults.begin("/v1/charges").status is None
    limited = faults.begin("/v1/charges")
    assert (limited.status, limited.retry_after) == (429, "2")  # 2 s per token at 0.5 rps
    faults.configure({"rate_limit_rps": 10})
    assert faults.state()["rate_limit_burst"] == 10
    assert [faults.begin("/v1/events").status for _ in range(11)].count(429) == 1


def test_limit_comes_before_injected_statuses_and_reset_turns_it_off() -> None:
    faults = FaultSwitches(clock=FakeClock())
    faults.configure({"rate_limit_rps": 1, "statuses": [503]})
    assert faults.begin("/v1/charges").status == 503  # the token is taken, then the injected status
    assert faults.begin("/v1/charges").status == 429
    assert faults.state()["statuses"] == []
    faults.configure({"rate_limit_rps": None})
    assert faults.begin("/v1/charges").status is None
    faults.configure({"rate_limit_rps": 1})
    faults.reset()
    assert [faults.begin("/v1/charges").status for _ in range(3)] == [None, None, None]


@pytest.mark.parametrize(
    "settings",
    [
        {"rate_limit_rps": 0},
        {"rate_limit_rps": -5},
        {"rate_limit_rps": True},
        {"rate_limit_rps": "10"},
        {"rate_limit_burst": 0},
        {"rate_limit_burst": 1.5},
    ],
)
def test_bad_rate_limit_settings_are_rejected(simulator: StartSimulator, settings: dict[str, Any]) -> None:
    sim = simulator(SimulatorStore())
    response = sim.client.post("/_simulator/faults", json=settings)
    assert response.status_code == 400, settings
    assert sim.client.post("/_simulator/faults", json={}).json()["rate_limit_rps"] is None


# --- the client's pacing ------------------------------------------------------------------------------


def test_limiter_spaces_request_starts_without_idle_credit() -> None:
    clock = FakeClock()
    waits: list[float] = []
    limiter = RequestRateLimiter(4, clock=clock, sleep=waits.append)
    assert [limiter.acquire() for _ in range(3)] == [0.0, 0.25, 0.5]
    clock.now += 10  # idle: the next request may start now, but the one after it is paced again
    assert [limiter.acquire(), limiter.acquire()] == [0.0, 0.25]
    assert waits == [0.25, 0.5, 0.25]
    for bad in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError):
            RequestRateLimiter(bad)


def test_a_request_that_wakes_past_its_slot_takes_a_fresh_one_not_a_late_start() -> None:
    """A thread the host woke 0.7 s late does not start beside the requests that start on time: its slot
    is spent and it starts on a fresh one, so no second holds more than rate + 2 starts."""
    clock = FakeClock()
    oversleep = [0.7]

    def sleep(seconds: float) -> None:
        clock.now += seconds + (oversleep.pop() if oversleep else 0.0)

    limiter = RequestRateLimiter(5, clock=clock, sleep=sleep)
    starts = []
    for _ in range(12):
        limiter.acquire()
        starts.append(clock.now)
    assert starts[:3] == pytest.approx([100.0, 100.9, 101.1])  # 100.2 was missed: 100.9 is a fresh slot
    assert all(later - earlier >= 0.2 - 1e-9 for earlier, later in zip(starts, starts[1:], strict=False))
    assert busiest_second(starts) <= 5 + 1


def test_a_thread_that_keeps_waking_late_starts_after_a_bounded_number_of_fresh_slots() -> None:
    clock = FakeClock()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.now += seconds + 1.0  # never on time

    def next_slot() -> float:  # other threads keep the bucket's next free slot ahead of this one
        return clock.now + 0.2

    start_on_a_slot(next_slot, 0.2, clock, sleep)
    assert len(slept) == 1 + MAX_MISSED_SLOTS  # the first slot and every fresh one, then it starts


def test_max_rps_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, clients: list[ProviderHttp]
) -> None:
    monkeypatch.delenv("RECON_PROVIDER_MAX_RPS", raising=False)
    clients.append(ProviderHttp("http://127.0.0.1:9"))
    assert clients[-1].max_rps is None
    monkeypatch.setenv("RECON_PROVIDER_MAX_RPS", "25")
    clients.append(ProviderHttp("http://127.0.0.1:9"))
    assert clients[-1].max_rps == 25
    clients.append(ProviderHttp("http://127.0.0.1:9", max_rps=7))
    assert clients[-1].max_rps == 7
    clients.append(ProviderHttp("http://127.0.0.1:9", max_rps=math.inf))
    assert clients[-1].max_rps is None
    for raw in ("0", "fast", "2.5"):
        monkeypatch.setenv("RECON_PROVIDER_MAX_RPS", raw)
        with pytest.raises(ConfigError, match="RECON_PROVIDER_MAX_RPS"):
            ProviderHttp("http://127.0.0.1:9")


KEYS = {"stripe": "sk_live_x", "razorpay": "rzp_live_id:secret", "adyen": "ws@Company.X:secret"}


def test_the_deployment_rate_defaults_to_the_providers_documented_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RECON_PROVIDER_MAX_RPS unset: each real provider's client is paced at its documented limit, from
    the shared bucket; the variable or the resource's ``max_rps`` wins; the simulator documents none."""
    monkeypatch.delenv("RECON_PROVIDER_MAX_RPS", raising=False)
    assert set(KEYS) == set(PROVIDER_NAMES)
    for name in PROVIDER_NAMES:
        resource = ProviderResource(provider=name, api_key=KEYS[name], base_url="http://127.0.0.1:9")
        http = resource.http()  # the process's cached client (its RECON_HOME is the test's own)
        assert http.max_rps == provider_named(name).default_max_rps > 0, name
        limiter = http._limiter
        assert isinstance(limiter, SharedRateLimiter), name  # the deployment's bucket, not the client's
        assert limiter.rate == http.max_rps
    assert ProviderResource(provider="stripe", api_key="sk_live_x", max_rps=7).http().max_rps == 7
    simulator = ProviderResource(provider="simulator", base_url="http://127.0.0.1:9")
    assert simulator.http().max_rps is None
    monkeypatch.setenv("RECON_PROVIDER_MAX_RPS", "3")
    assert ProviderResource(provider="adyen", api_key=KEYS["adyen"]).http().max_rps == 3
    assert simulator.http().max_rps == 3
    assert deployment_rate(simulator.settings(), None) is None


# --- both sides over real HTTP ----------------------------------------------------------------------


def _store(charges: int) -> SimulatorStore:
    made = [make_charge(f"ch_{i:05d}", T0 + 60 + i) for i in range(charges)]
    refunds = [make_refund(f"re_{i:05d}", made[i], T0 + 30_000 + i, 100) for i in range(0, charges, 3)]
    return SimulatorStore(charges=made, refunds=refunds)


def test_unpaced_concurrent_client_gets_429s(simulator: StartSimulator, clients: list[ProviderHttp]) -> None:
    sim = simulator(_store(1))
    sim.set_faults(rate_limit_rps=20, rate_limit_burst=2)
    http = ProviderHttp(sim.base_url, retry=RetryPolicy(max_attempts=1), max_concurrency=4, max_rps=math.inf)
    clients.append(http)
    outcomes: list[str] = []

    def hammer() -> None:
        for _ in range(10):
            try:
                http.get_json("/v1/charges/ch_00000")
                outcomes.append("ok")
            except ProviderUnavailable as error:
                outcomes.append(str(error))

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    stats = sim.stats()
    assert len(outcomes) == 40 == stats["api_requests"]
    assert stats["rate_limited"] == stats["responses_by_status"]["429"] > 0
    assert sum("HTTP 429" in outcome for outcome in outcomes) == stats["rate_limited"]


def test_paced_pulls_stay_under_the_providers_limit(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    rate, pulls = 25, 5
    # 5 pages of charges, 2 of refunds, 5 of balance transactions (the charges'): 60 requests, over the
    # bucket's 25
    sim = simulator(_store(450))
    sim.set_faults(rate_limit_rps=rate)
    http = ProviderHttp(sim.base_url, retry=FAST_RETRY, max_concurrency=8, max_rps=rate)
    clients.append(http)
    adapter = StripeAdapter(http)
    window = (datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0 + DAY, UTC))
    frames: list[Any] = []
    started = time.monotonic()
    threads = [  # concurrent pulls share the client's pace
        threading.Thread(target=lambda: frames.append(adapter.pull_night(PropertyAccount("prop_a"), *window)))
        for _ in range(pulls)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    elapsed = time.monotonic() - started
    stats = sim.stats()
    assert [len(frame) for frame in frames] == [450 * 2 + 150] * pulls
    assert stats["api_requests"] == pulls * 12
    assert stats["rate_limited"] == 0 and set(stats["responses_by_status"]) == {"200"}
    assert elapsed >= (stats["api_requests"] - 1) / rate
