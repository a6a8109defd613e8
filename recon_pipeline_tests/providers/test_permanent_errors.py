"""Permanent provider errors fail fast (issue 24): a 4xx other than 404/408/409/425/429 is sent once, by
the client, the step and the run; the property-night fails with one line naming the provider, the endpoint
and the provider's own message; transient errors keep their bounded retries.

Client tests run against the simulator over real HTTP; the pipeline tests through Dagster's ``materialize``
on an instance with run retries enabled, judged by Dagster's own run-retry logic (the ``dagster/will_retry``
tag the run worker sets at failure and the daemon's ``filter_runs_to_should_retry``)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
import pytest
import urllib3
from dagster._core.storage.tags import RETRY_ON_ASSET_OR_OP_FAILURE_TAG, WILL_RETRY_TAG
from dagster._daemon.auto_run_reexecution.auto_run_reexecution import filter_runs_to_should_retry
from sqlalchemy import select

from recon_pipeline.db.schema import night_reconciliations
from recon_pipeline.defs.concurrency import RETRY_ON_STEP_FAILURE_TAG
from recon_pipeline.nights import night_window
from recon_pipeline.providers.errors import (
    IncompletePullError,
    PermanentPullError,
    ProviderRequestRejected,
    incomplete_pull,
    is_permanent,
    is_permanent_status,
)
from recon_pipeline.providers.http import ProviderHttp, _provider_message
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.simulation.host.faults import FaultSwitches
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, seeded
from recon_pipeline_tests.support.provider_fixtures import (
    DAY,
    FAST_RETRY,
    T0,
    Flavour,
    StartSimulator,
    flavour_of,
    make_charge,
)

TRANSIENT = [408, 409, 425, 429, 500, 503]
PERMANENT = [400, 401, 403, 422]
PROP_A = PropertyAccount("prop_a")
WINDOW = (datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0, UTC) + timedelta(seconds=DAY))
REFUSAL = "This property cannot be expanded (charge)."
RUN_RETRIES = {"run_retries": {"enabled": True, "max_retries": 2}}


@pytest.fixture(params=["stripe", "razorpay"], name="provider")
def listing_provider(request: pytest.FixtureRequest) -> Flavour:
    """The providers whose night's pull lists payments (Adyen's reports: ``test_adyen_client.py``)."""
    return flavour_of(request.param)


def _client(
    simulator: StartSimulator, provider: Flavour, clients: list[ProviderHttp], api_key: str | None = None
) -> tuple[Any, Any]:
    store = provider.served(SimulatorStore(charges=[make_charge(provider.charge_id("1"), T0 + 5)]))
    sim = simulator(store, api_key=api_key, flavour=provider.name)
    http = ProviderHttp(sim.base_url, api_key, retry=FAST_RETRY, provider=provider.name)
    clients.append(http)
    return sim, provider.adapter(http, api_key)


# --- classification -------------------------------------------------------------------------------------


def test_permanence_is_decided_by_status_alone() -> None:
    assert [s for s in range(400, 600) if is_permanent_status(s)] == [
        s for s in range(400, 500) if s not in (404, 408, 409, 425, 429)
    ]


@pytest.mark.parametrize("status", TRANSIENT)
def test_a_transient_status_is_retried_and_the_pull_completes(
    simulator: StartSimulator, provider: Flavour, clients: list[ProviderHttp], status: int
) -> None:
    sim, adapter = _client(simulator, provider, clients)
    sim.set_faults(statuses=[status], retry_after="0", path_prefix=provider.payments_path)
    assert len(adapter.pull_night(PROP_A, *WINDOW)) == 2  # the charge and its fee
    stats = sim.stats()
    assert stats["responses_by_status"][str(status)] == 1
    assert stats["requests_by_path"][provider.payments_path] == 2  # refused once, then answered


@pytest.mark.parametrize("status", PERMANENT)
def test_a_permanent_status_is_sent_once_and_stays_permanent_through_the_pull(
    simulator: StartSimulator, provider: Flavour, clients: list[ProviderHttp], status: int
) -> None:
    sim, adapter = _client(simulator, provider, clients)
    sim.set_faults(statuses=[status] * 10, path_prefix=provider.payments_path)
    with pytest.raises(PermanentPullError) as caught:
        adapter.pull_night(PROP_A, *WINDOW)
    assert is_permanent(caught.value) and isinstance(caught.value.__cause__, ProviderRequestRejected)
    assert sim.stats()["requests_by_path"][provider.payments_path] == 1
    assert f"{provider.name} GET {provider.payments_path} rejected: HTTP {status}" in str(caught.value)


def test_the_refusal_names_the_endpoint_and_message_but_no_query_value_nor_key(
    simulator: StartSimulator, clients: list[ProviderHttp]
) -> None:
    """A provider echoing what it was sent (ids, times, the key) is quoted without them, on one line."""
    stripe = flavour_of("stripe")
    sim, _ = _client(simulator, stripe, clients, api_key=stripe.api_key)
    echo = f"No such object: 'ch_cursor42'; created 1767225600;\n key {stripe.api_key} ({REFUSAL})"
    sim.set_faults(reject={"path": "/v1/charges", "message": echo})
    http = clients[-1]
    params = {"created[gte]": T0, "starting_after": "ch_cursor42", "expand[]": "data.source.charge"}
    with pytest.raises(ProviderRequestRejected) as caught:
        http.get_json("/v1/charges", params=params)
    line = str(caught.value)
    assert line.startswith("stripe GET /v1/charges rejected: HTTP 400 (invalid_request_error): No such")
    assert REFUSAL in line and "<starting_after>" in line and "<created[gte]>" in line
    for secret in ("ch_cursor42", str(T0), stripe.api_key, "?", "\n"):
        assert secret not in line
    assert sim.stats()["api_requests"] == 1


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"error": {"type": "invalid_request_error", "code": "parameter_unknown", "message": "Bad"}},
            "(invalid_request_error/parameter_unknown): Bad",
        ),
        (
            {"error": {"code": "BAD_REQUEST_ERROR", "description": "Bad", "source": "NA", "step": "NA"}},
            "(BAD_REQUEST_ERROR): Bad",
        ),
        (
            {"status": 422, "errorCode": "14_030", "message": "Bad", "errorType": "validation"},
            "(validation/14_030): Bad",
        ),
        ("HTTP Status 403 -\n Forbidden", ": HTTP Status 403 - Forbidden"),
        ("", ": (empty body)"),
    ],
    ids=["stripe", "razorpay", "adyen", "text", "empty"],
)
def test_each_providers_error_shape_is_read(body: Any, expected: str) -> None:
    text = json.dumps(body) if isinstance(body, dict) else body
    response = urllib3.HTTPResponse(io.BytesIO(text.encode()), status=400, preload_content=True)  # as read
    assert _provider_message(response) == expected


def test_incomplete_pull_keeps_permanence_and_only_it() -> None:
    refused = pytest.raises(PermanentPullError, match="pull of P1 failed: stripe GET")
    with refused, incomplete_pull("pull of P1"):
        raise ProviderRequestRejected("stripe GET /v1/charges rejected: HTTP 400: no")
    with pytest.raises(IncompletePullError) as caught, incomplete_pull("pull of P1"):
        raise IncompletePullError("/v1/charges: pull aborted")
    assert not is_permanent(caught.value) and not is_permanent(ValueError("x"))


def test_the_reject_switch_takes_only_a_permanent_status() -> None:
    faults = FaultSwitches()
    for bad in ({"path": "/v1/charges", "status": 429}, {"status": 400}, {"path": "/x", "what": 1}):
        with pytest.raises(ValueError, match="reject"):
            faults.configure({"reject": bad})
    assert faults.configure({"reject": {"path": "/v1/x"}})["reject"]["status"] == 400
    assert faults.begin("/v1/x").status == 400 and faults.begin("/v1/y").status is None
    assert faults.configure({"reject": None})["reject"] is None


def test_the_run_retry_tag_is_dagsters() -> None:
    assert RETRY_ON_STEP_FAILURE_TAG == RETRY_ON_ASSET_OR_OP_FAILURE_TAG


# --- through Dagster --------------------------------------------------------------------------------------

PIPELINE_WORLDS = [
    pytest.param(("stripe", "sqlite_url"), id="stripe-sqlite"),
    pytest.param(("razorpay", "sqlite_url"), id="razorpay-sqlite"),
    pytest.param(("stripe", "postgres_url"), id="stripe-postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=PIPELINE_WORLDS)
def retried_pipeline(request: pytest.FixtureRequest) -> Iterator[SeededPipeline]:
    """A provider's demo world on an instance with run retries on, as dagster.yaml has them."""
    flavour, database_fixture = request.param
    with (
        seeded(str(request.getfixturevalue(database_fixture)), flavour) as pipeline,
        dg.instance_for_test(overrides=RUN_RETRIES) as instance,
    ):
        pipeline.instance = instance
        yield pipeline


def _pulls(pipeline: SeededPipeline) -> int:
    """How many pulls the night takes: one per provider account and window (a shared account's
    properties are pulled once)."""
    return len(
        {
            (p.provider_account, night_window(NIGHT.isoformat(), p.timezone, p.night_cutoff).start)
            for p in pipeline.properties
        }
    )


def _will_retry(pipeline: SeededPipeline, run_id: str) -> tuple[str | None, bool]:
    """The run's ``dagster/will_retry`` tag as the run worker set it at failure, and whether the run-retry
    daemon's own filter would re-execute the run."""
    run = pipeline.instance.get_run_by_id(run_id)
    assert run is not None and run.status == dg.DagsterRunStatus.FAILURE
    return run.tags.get(WILL_RETRY_TAG), bool(list(filter_runs_to_should_retry([run], pipeline.instance)))


def _step_retries(result: dg.ExecuteInProcessResult) -> int:
    return sum(1 for event in result.all_events if event.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY)


@pytest.mark.slow
def test_a_refused_endpoint_is_asked_once_per_property_night_and_the_run_is_not_retried(
    retried_pipeline: SeededPipeline,
) -> None:
    pipeline = retried_pipeline
    path = flavour_of(pipeline.flavour).payments_path
    pipeline.faults(reject={"path": path, "message": REFUSAL})
    result = pipeline.materialize(raise_on_error=False)
    assert not result.success
    assert _step_retries(result) == 0
    [failure] = [event for event in result.all_events if event.is_step_failure]
    assert f"{len(pipeline.properties)} of {len(pipeline.properties)} properties failed" in str(
        failure.step_failure_data.error
    )
    refused = pipeline.stats()["responses_by_status"]["400"]
    assert refused == pipeline.stats()["requests_by_path"][path] == _pulls(pipeline)
    assert refused <= len(pipeline.properties)
    assert _will_retry(pipeline, result.run_id) == ("false", False)
    with pipeline.engine.connect() as connection:
        rows = connection.execute(select(night_reconciliations)).all()
    assert {row.property_id for row in rows} == {p.property_id for p in pipeline.properties}
    for row in rows:
        assert row.status == "failed" and row.run_id == result.run_id
        assert row.error.startswith(f"property {row.property_id} night {NIGHT}: PermanentPullError")
        assert f"{pipeline.flavour} GET {path} rejected: HTTP 400" in row.error and REFUSAL in row.error
        assert "\n" not in row.error and "?" not in row.error


@pytest.mark.slow
def test_a_transient_failure_keeps_its_step_and_run_retries(retried_pipeline: SeededPipeline) -> None:
    pipeline = retried_pipeline
    pipeline.faults(fail_after_requests=0)  # every request answered 500: the provider is down
    result = pipeline.materialize(pipeline.properties[0].property_id, raise_on_error=False)
    assert not result.success
    assert _step_retries(result) == 2  # provider_step_retry_policy's bound
    assert _will_retry(pipeline, result.run_id) == ("true", True)
    with pipeline.engine.connect() as connection:
        [error] = connection.execute(select(night_reconciliations.c.error)).scalars()
    assert "IncompletePullError" in error and "failed after" in error and "PermanentPullError" not in error
