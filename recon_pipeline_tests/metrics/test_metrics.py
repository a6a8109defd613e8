"""The operational metrics, scraped over real HTTP on 127.0.0.1 after a scripted sequence whose every
figure the test predicts; the same figures as Dagster run metadata; the queues' recovery-SLO checks."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, update

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import payment_event_processing, payment_events
from recon_pipeline.errors import ConfigError
from recon_pipeline.events.processor import process_available
from recon_pipeline.events.queue import claim_batch, retry_later
from recon_pipeline.keys import adjustment_id, adjustment_idempotency_key
from recon_pipeline.metrics.slo import SloLevel, judge_oldest_age, queue_slo_s
from recon_pipeline.postings.adapter import Posting
from recon_pipeline.postings.drain import drain
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.stripe.webhook import sign
from recon_pipeline.retry import RetrySchedule
from recon_pipeline.serving import ServerThread
from recon_pipeline.webhooks.receiver import build_receiver
from recon_pipeline_tests.support.dagster_processes import free_port, wait_until
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.posting_fixtures import NOW, POLICY, Clock, FaultyPms, approve

SECRET = "whsec_metrics_0123456789"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: httpx.Client) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def customer_event(event_id: str) -> bytes:
    """A Stripe event about no payment: the processor settles it without asking the provider."""
    event = {
        "id": event_id,
        "object": "event",
        "type": "customer.updated",
        "created": 1_760_000_000,
        "data": {"object": {"id": "cus_1", "object": "customer"}},
    }
    return json.dumps(event).encode()


def deliver(client: httpx.Client, body: bytes) -> dict[str, Any]:
    headers = {"Stripe-Signature": sign(body, SECRET, int(time.time())), "Content-Type": "application/json"}
    response = client.post("/webhooks/stripe", content=body, headers=headers)
    assert response.status_code == 200
    return dict(response.json())


class NeverAsked:
    """The provider, which events without a payment reference never reach: asking it fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the provider was asked {name} for an event without a payment")


def test_a_scrape_of_the_receiver_shows_each_metric_as_predicted(engine: Engine) -> None:
    n, k = 5, 3
    app = build_receiver(engine, [SECRET])
    with ServerThread(app) as server, loopback_client(base_url=server.base_url, timeout=10) as client:
        before = scrape(client)
        for i in range(n):
            if i == k:
                first_open_sent = datetime.now(UTC)
            assert deliver(client, customer_event(f"evt_{i}"))["duplicate"] is False
        assert deliver(client, customer_event("evt_0"))["duplicate"] is True
        client_never_asked: ProviderClient = NeverAsked()  # type: ignore[assignment]
        counts = process_available(engine, client_never_asked, "w1", batch_size=k, max_batches=1)
        assert counts.processed == k

        pms = FaultyPms(engine)
        approve(engine, "ch_2")
        approve(engine, "ch_3")
        key = adjustment_idempotency_key("P1", "2026-12-01", "post_missing_payment", "ch_3")
        # ch_3 is already in the PMS (booked by an earlier attempt): its post is a duplicate suppressed
        pms.real.post(Posting(key, adjustment_id(key), "P1", "2026-12-01", None, "ch_3", 1250, "EUR", "x"))
        rng = random.Random(3)
        assert drain(engine, pms, "p1", policy=POLICY, clock=Clock(), rng=rng).by_state == {"posted": 2}
        approve(engine, "ch_1")
        pms.mode = "silence"  # sent, no answer
        assert drain(engine, pms, "p1", policy=POLICY, clock=Clock(), rng=rng).by_state == {"unknown": 1}

        scraped_from = datetime.now(UTC)
        after = scrape(client)
        scraped_until = datetime.now(UTC)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert value(after, "recon_metrics_database_up") == 1
    events_depth = {"pending": n - k, "processing": 0, "failed": 0, "processed": k, "dead": 0}
    for state, count in events_depth.items():
        assert value(after, "recon_queue_depth", queue="events", state=state) == count, state
    postings_depth = {"approved": 0, "posting": 0, "posted": 2, "failed": 0, "unknown": 1}
    for state, count in postings_depth.items():
        assert value(after, "recon_queue_depth", queue="postings", state=state) == count, state
    assert value(after, "recon_queue_unknown_outcomes", queue="postings") == 1
    events_age = value(after, "recon_queue_oldest_open_age_seconds", queue="events")
    assert 0 <= events_age <= (scraped_until - first_open_sent).total_seconds()
    postings_age = value(after, "recon_queue_oldest_open_age_seconds", queue="postings")
    assert (scraped_from - NOW).total_seconds() <= postings_age <= (scraped_until - NOW).total_seconds()

    assert delta("recon_duplicates_suppressed_total", queue="events") == 1
    assert delta("recon_duplicates_suppressed_total", queue="postings") == 1
    assert delta("recon_queue_acknowledgements_total", queue="events", outcome="processed") == k
    assert delta("recon_queue_acknowledgements_total", queue="postings", outcome="posted") == 2
    assert delta("recon_queue_acknowledgements_total", queue="postings", outcome="unknown") == 1
    assert delta("recon_unknown_outcome_transitions_total", queue="postings") == 1
    assert delta("recon_queue_processing_seconds_count", queue="events") == k
    assert delta("recon_queue_processing_seconds_count", queue="postings") == 3
    assert delta("recon_queue_processing_seconds_sum", queue="events") > 0


def test_an_unreadable_database_is_a_scrape_saying_so(tmp_path: Any) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'empty.sqlite'}")  # no tables: every query fails
    app = build_receiver(engine, [SECRET])
    with ServerThread(app) as server, loopback_client(base_url=server.base_url, timeout=10) as client:
        samples = scrape(client)
    assert value(samples, "recon_metrics_database_up") == 0
    assert not any(name == "recon_queue_depth" for name, _ in samples)


@pytest.mark.slow  # starts a process
def test_recon_metrics_serve_reads_the_queues_from_the_database(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    approve(engine, "ch_1")
    engine.dispose()
    port = free_port()
    env = {**os.environ, "RECON_DATABASE_URL": sqlite_url}
    command = [sys.executable, "-m", "recon_pipeline.cli", "metrics", "serve", "--port", str(port)]
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as server:
        try:
            with loopback_client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:

                def answered() -> Samples | None:
                    try:
                        return scrape(client)
                    except httpx.TransportError:
                        return None

                samples = wait_until("recon metrics serve", answered, timeout_s=60)
        finally:
            server.terminate()
            server.wait(timeout=30)
    assert value(samples, "recon_queue_depth", queue="postings", state="approved") == 1
    assert value(samples, "recon_queue_depth", queue="events", state="pending") == 0
    # its own counters exist and are zero: counters are per process
    assert value(samples, "recon_queue_acknowledgements_total", queue="postings", outcome="posted") == 0


def test_the_slo_is_judged_on_age_warn_at_half() -> None:
    assert judge_oldest_age(0, 900).level is SloLevel.OK
    assert judge_oldest_age(449.9, 900).level is SloLevel.OK
    assert judge_oldest_age(450, 900).level is SloLevel.WARN
    assert judge_oldest_age(900, 900).level is SloLevel.BREACHED


def test_the_slo_s_old_name_is_refused_naming_the_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECON_MAX_PENDING_AGE_S", "600")
    with pytest.raises(ConfigError, match="RECON_MAX_PENDING_AGE_S was renamed RECON_QUEUE_SLO_S"):
        queue_slo_s()
    monkeypatch.delenv("RECON_MAX_PENDING_AGE_S")
    monkeypatch.setenv("RECON_QUEUE_SLO_S", "600")
    assert queue_slo_s() == 600


def slo_check(engine: Engine, database_url: str, name: str) -> dg.AssetCheckResult:
    from recon_pipeline.defs import checks
    from recon_pipeline.defs.resources import ReconDatabase

    check = getattr(checks, name)
    result = check(recon_db=ReconDatabase(database_url=database_url))
    assert isinstance(result, dg.AssetCheckResult)
    return result


def queue_events(engine: Engine, count: int, received_at: datetime) -> None:
    with engine.begin() as connection:
        connection.execute(
            payment_events.insert(),
            [
                {"event_id": f"evt_{i}", "provider": "stripe", "event_type": "x", "payload": "{}"}
                | {"received_at": received_at}
                for i in range(count)
            ],
        )
        connection.execute(
            payment_event_processing.insert(),
            [
                {"event_id": f"evt_{i}", "provider": "stripe", "status": "pending", "attempts": 0}
                | {"available_at": received_at}
                for i in range(count)
            ],
        )


def test_a_burst_of_young_retries_passes_the_slo_an_old_job_fails_it(
    engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECON_QUEUE_SLO_S", "600")
    now = datetime.now(UTC)
    queue_events(engine, 50, now - timedelta(seconds=30))
    batch = claim_batch(engine, "w1", 50, timedelta(minutes=5), now)
    with engine.begin() as connection:  # every one of them failed just now: 50 retries waiting
        for event in batch:
            assert retry_later(connection, event, "w1", "provider 503", now, RetrySchedule()) == "failed"
    burst = slo_check(engine, database_url, "oldest_pending_event_age")
    assert burst.passed, burst.metadata
    assert burst.metadata["events/depth/failed"].value == 50

    with engine.begin() as connection:  # one of them has been retried since well before half the SLO
        connection.execute(
            update(payment_events)
            .where(payment_events.c.event_id == "evt_7")
            .values(received_at=now - timedelta(seconds=400))
        )
    warned = slo_check(engine, database_url, "oldest_pending_event_age")
    assert (warned.passed, warned.severity, warned.metadata["slo_level"].value) == (
        False,
        dg.AssetCheckSeverity.WARN,
        "warn",
    )
    with engine.begin() as connection:
        connection.execute(
            update(payment_events)
            .where(payment_events.c.event_id == "evt_7")
            .values(received_at=now - timedelta(seconds=700))
        )
    breached = slo_check(engine, database_url, "oldest_pending_event_age")
    assert (breached.passed, breached.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert breached.metadata["events/oldest_open_age_s"].value >= 700


def test_an_unknown_posting_older_than_the_slo_fails_the_outbox_check(
    engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECON_QUEUE_SLO_S", "600")
    assert slo_check(engine, database_url, "oldest_open_posting_age").passed  # empty outbox
    approve(engine, "ch_1")  # approved at NOW, long before the test runs
    pms = FaultyPms(engine)
    pms.mode = "silence"
    drain(engine, pms, "p1", policy=POLICY, clock=Clock(), rng=random.Random(1))
    result = slo_check(engine, database_url, "oldest_open_posting_age")
    assert (result.passed, result.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert result.metadata["postings/unknown"].value == 1


def step_output_metadata(result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    [output] = [event for event in result.all_events if event.is_successful_output]
    return {key: entry.value for key, entry in output.step_output_data.metadata.items()}


def test_the_runs_that_drain_the_queues_report_them_in_their_metadata(sqlite_url: str) -> None:
    from recon_pipeline.defs.events import process_payment_events_job
    from recon_pipeline.defs.postings import post_adjustments
    from recon_pipeline.defs.resources import PostingResource, ProviderResource, ReconDatabase

    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    queue_events(engine, 2, datetime.now(UTC))
    with engine.begin() as connection:  # one event without a payment is processed, one will be left
        connection.execute(update(payment_event_processing).values(available_at=NOW + timedelta(days=3650)))
        connection.execute(
            update(payment_event_processing)
            .where(payment_event_processing.c.event_id == "evt_0")
            .values(available_at=NOW)
        )
    approve(engine, "ch_1")
    recon_db = ReconDatabase(database_url=sqlite_url)
    provider = ProviderResource(
        database_url=sqlite_url, flavour="stripe", base_url="http://127.0.0.1:9", api_key="sk_test_x"
    )
    with dg.instance_for_test() as instance:
        events_run = process_payment_events_job.execute_in_process(
            instance=instance, resources={"recon_db": recon_db, "provider": provider}
        )
        postings_run = post_adjustments.execute_in_process(
            instance=instance, resources={"recon_db": recon_db, "posting": PostingResource()}
        )
    engine.dispose()
    events = step_output_metadata(events_run)
    assert (events["processed"], events["events/depth/processed"], events["events/depth/pending"]) == (
        1,
        1,
        1,
    )
    assert events["events/open"] == 1 and 0 <= events["events/oldest_open_age_s"] < 600
    postings = step_output_metadata(postings_run)
    assert (postings["settled/posted"], postings["postings/depth/posted"], postings["postings/unknown"]) == (
        1,
        1,
        0,
    )
    assert postings["postings/open"] == 0 and postings["postings/oldest_open_age_s"] == 0
