"""Provider pulls stay bounded: amounts beyond the contract, cursors that repeat, lists that never end and
a Retry-After beyond the allowed wait each fail the pull at once with a named error, over real HTTP on
127.0.0.1 (the simulator's fault switches), once per provider flavour."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recon_pipeline.errors import ConfigError
from recon_pipeline.money import MAX_AMOUNT_MINOR
from recon_pipeline.providers.errors import (
    IncompletePullError,
    PagingError,
    ProviderDataError,
    RetryAfterTooLong,
)
from recon_pipeline.providers.http import ProviderHttp, RetryPolicy
from recon_pipeline.providers.stripe.client import PropertyAccount
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.provider_fixtures import (
    DAY,
    FAST_RETRY,
    T0,
    Flavour,
    RunningSimulator,
    StartSimulator,
    make_charge,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)

PROP_A = PropertyAccount("prop_a")
NIGHT = (datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0 + DAY, UTC))


@pytest.fixture(name="provider")
def listing_only(listing_provider: Flavour) -> Flavour:
    """These tests page through a list API: Adyen, which lists nothing, is tested in test_adyen_client.py."""
    return listing_provider


def served(simulator: StartSimulator, provider: Flavour, charges: int) -> RunningSimulator:
    """``charges`` charges of prop_a in the night: more than 100 fill a first page of either provider."""
    store = SimulatorStore(
        charges=[make_charge(provider.charge_id(f"{i:04d}"), T0 + i) for i in range(charges)]
    )
    return simulator(store, flavour=provider.name)


def http(sim: RunningSimulator, clients: list[ProviderHttp], retry: RetryPolicy = FAST_RETRY) -> ProviderHttp:
    client = ProviderHttp(sim.base_url, retry=retry)
    clients.append(client)
    return client


def test_a_provider_amount_beyond_the_bound_fails_the_pull_naming_the_record(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    at_bound = make_charge(provider.charge_id("max"), T0 + 1, amount=MAX_AMOUNT_MINOR, fee=0)
    beyond = make_charge(provider.charge_id("huge"), T0 + 2, amount=MAX_AMOUNT_MINOR + 1, fee=0)
    sim = simulator(SimulatorStore(charges=[at_bound, beyond]), flavour=provider.name)
    with pytest.raises(IncompletePullError) as caught:
        provider.adapter(http(sim, clients)).pull_night(PROP_A, *NIGHT)
    assert isinstance(caught.value.__cause__, ProviderDataError)
    message = str(caught.value)
    assert f"'{beyond['id']}'" in message and "100000000001" in message and "100,000,000,000" in message
    assert "\n" not in message
    only_at_bound = simulator(SimulatorStore(charges=[at_bound]), flavour=provider.name)
    frame = provider.adapter(http(only_at_bound, clients)).pull_night(PROP_A, *NIGHT)
    assert frame["amount_minor"].tolist() == [MAX_AMOUNT_MINOR]


def test_a_repeating_cursor_fails_the_pull_after_one_page(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    sim = served(simulator, provider, 150)
    sim.set_faults(paging="repeat", path_prefix=provider.payments_path)
    with pytest.raises(IncompletePullError, match="returned twice") as caught:
        provider.adapter(http(sim, clients)).pull_night(PROP_A, *NIGHT)
    assert isinstance(caught.value.__cause__, PagingError)
    assert sim.stats()["requests_by_path"][provider.payments_path] == 2  # the page, and its repeat


def test_pages_that_never_end_fail_the_pull_at_max_pages(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour
) -> None:
    sim = served(simulator, provider, 3)
    sim.set_faults(paging="endless", path_prefix=provider.payments_path)
    adapter = provider.adapter(http(sim, clients))
    adapter.max_pages = 7
    with pytest.raises(IncompletePullError, match=rf"{provider.payments_path}: more than 7 pages") as caught:
        adapter.pull_night(PROP_A, *NIGHT)
    assert isinstance(caught.value.__cause__, PagingError)
    assert sim.stats()["requests_by_path"][provider.payments_path] == 7


def test_a_retry_after_beyond_the_maximum_fails_at_once_instead_of_sleeping(
    simulator: StartSimulator, clients: list[ProviderHttp], provider: Flavour, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = served(simulator, provider, 3)
    monkeypatch.setenv("RECON_PROVIDER_MAX_RETRY_AFTER_S", "20")
    retry = RetryPolicy(max_attempts=3)  # the maximum comes from the environment, read now
    assert retry.max_retry_after_s == 20
    sleeps: list[float] = []
    client = ProviderHttp(sim.base_url, retry=retry, sleep=sleeps.append)
    clients.append(client)
    sim.set_faults(statuses=[429, 429], retry_after="20")  # at the maximum: waited out in full
    assert len(provider.adapter(client).pull_night(PROP_A, *NIGHT)) > 0
    assert sleeps == [20.0, 20.0]
    sleeps.clear()
    sim.client.post("/_simulator/reset-stats").raise_for_status()
    sim.set_faults(statuses=[429], retry_after="3600")
    with pytest.raises(IncompletePullError, match="retry after 3600 s, beyond the 20 s allowed") as caught:
        provider.adapter(client).pull_night(PROP_A, *NIGHT)
    assert isinstance(caught.value.__cause__, RetryAfterTooLong)
    assert "RECON_PROVIDER_MAX_RETRY_AFTER_S" in str(caught.value)
    assert sleeps == []
    assert sim.stats()["responses_by_status"].get("429") == 1


def test_the_retry_after_maximum_is_a_named_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RetryPolicy().max_retry_after_s == 30
    monkeypatch.setenv("RECON_PROVIDER_MAX_RETRY_AFTER_S", "soon")
    with pytest.raises(ConfigError, match="RECON_PROVIDER_MAX_RETRY_AFTER_S must be a positive integer"):
        RetryPolicy()
