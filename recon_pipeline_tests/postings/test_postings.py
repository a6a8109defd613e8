"""Posting approved adjustments through the outbox and the ``sql`` adapter, on a real SQLite file and a
real PostgreSQL: approval writes the outbox row in its transaction, every state transition of the drain,
lookups that resolve unknown outcomes (never a blind re-post), two drainers at once, and the operator
commands. The PMS's faults are injected around the real ``sql`` adapter (``FaultyPms``), the one edge the
tests play: the PMS can accept and go silent, refuse, or be unreachable for lookups."""

from __future__ import annotations

import dataclasses
import random
import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from recon_pipeline import cli
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import ledger_entries
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.postings.adapter import Posting, PostingOutcome, PostingResult
from recon_pipeline.postings.drain import claim_due, drain, process_one, settle
from recon_pipeline.postings.outbox import Settlement
from recon_pipeline.postings.sql_adapter import SqlPostingAdapter, entry_id_for
from recon_pipeline.review.adjustments import APPROVE, REJECT, review_adjustment
from recon_pipeline_tests.support.posting_fixtures import (
    NOW,
    POLICY,
    Clock,
    FaultyPms,
    approve,
    posting,
    propose,
)


def ledger_rows(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        return [dict(row) for row in connection.execute(select(ledger_entries)).mappings()]


def run_drain(engine: Engine, pms: FaultyPms, clock: Clock, worker: str = "w1") -> dict[str, int]:
    counts = drain(engine, pms, worker, policy=POLICY, clock=clock, rng=random.Random(7), concurrency=2)
    return counts.by_state


def test_approving_writes_the_outbox_row_in_the_approval_transaction(engine: Engine) -> None:
    adjustment = propose(engine, "ch_1")
    with pytest.raises(RuntimeError), engine.begin() as connection:
        review_adjustment(connection, adjustment, APPROVE, "ana", "ok", None, NOW)
        raise RuntimeError("the approval's transaction fails after the review")
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(outbox)).scalar_one() == 0
    with engine.begin() as connection:
        review_adjustment(connection, adjustment, APPROVE, "ana", "ok", None, NOW)
        review_adjustment(connection, adjustment, APPROVE, "ana", "again", None, NOW)  # no second row
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["adjustment_status"]) == ("approved", 0, "approved")
    assert row["idempotency_key"] == "P1/2026-12-01/post_missing_payment/ch_1"
    rejected = propose(engine, "ch_2")
    with engine.begin() as connection:
        review_adjustment(connection, rejected, REJECT, "ana", "no", None, NOW)
    with engine.connect() as connection:
        assert connection.execute(select(outbox.c.adjustment_id)).scalars().all() == [adjustment]


def test_the_sql_adapter_books_once_per_key_and_looks_the_key_up(engine: Engine) -> None:
    adapter = SqlPostingAdapter(engine, clock=lambda: NOW)
    key = "P1/2026-12-01/post_missing_payment/ch_9"
    assert adapter.lookup(key) is None
    sent = Posting(key, "adj_x", "P1", "2026-12-01", "B1", "ch_9", -300, "EUR", "post_missing_payment")
    first, again = adapter.post(sent), adapter.post(sent)
    expected = PostingResult(PostingOutcome.POSTED, pms_reference=entry_id_for(key))
    assert first == adapter.lookup(key) == expected
    assert again == dataclasses.replace(expected, already_posted=True)
    booked = ledger_rows(engine)
    assert [(r["entry_id"], r["kind"], r["amount_minor"], r["booking_id"]) for r in booked] == [
        (entry_id_for(key), "adjustment", -300, "B1")
    ]


def test_a_post_that_lands_is_posted_with_the_adjustment(engine: Engine) -> None:
    adjustment = approve(engine, "ch_1")
    pms, clock = FaultyPms(engine), Clock()
    assert run_drain(engine, pms, clock) == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["adjustment_status"]) == ("posted", 1, "posted")
    assert row["pms_reference"] == entry_id_for(row["idempotency_key"])
    assert [entry["amount_minor"] for entry in ledger_rows(engine)] == [1250]
    assert run_drain(engine, pms, clock) == {}  # nothing left due


def test_a_refusal_fails_for_good_with_its_reason(engine: Engine) -> None:
    adjustment = approve(engine, "ch_1")
    pms, clock = FaultyPms(engine), Clock()
    pms.mode = "reject"
    assert run_drain(engine, pms, clock) == {"failed": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["last_error"]) == ("failed", 1, "folio closed")
    assert row["adjustment_status"] == "approved"
    clock.advance(timedelta(days=1))
    assert run_drain(engine, pms, clock) == {}


def test_a_timeout_after_accept_is_resolved_by_lookup_not_by_a_second_post(engine: Engine) -> None:
    adjustment = approve(engine, "ch_1")
    pms, clock = FaultyPms(engine), Clock()
    pms.mode = "accept_then_silence"
    assert run_drain(engine, pms, clock) == {"unknown": 1}
    assert posting(engine, adjustment)["state"] == "unknown"
    assert run_drain(engine, pms, clock) == {}  # not due before its backoff
    pms.lookup_down = True
    clock.advance(timedelta(hours=1))
    assert run_drain(engine, pms, clock) == {"unknown": 1}  # the PMS cannot be asked: still unknown
    pms.lookup_down = False
    clock.advance(timedelta(hours=1))
    assert run_drain(engine, pms, clock) == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"], row["adjustment_status"]) == (
        "posted",
        1,
        2,
        "posted",
    )
    assert sum(pms.posts.values()) == 1 and len(ledger_rows(engine)) == 1


def test_an_unanswered_post_the_pms_never_got_is_posted_afresh_after_lookup(engine: Engine) -> None:
    adjustment = approve(engine, "ch_1")
    pms, clock = FaultyPms(engine), Clock()
    pms.mode = "silence"
    assert run_drain(engine, pms, clock) == {"unknown": 1}
    clock.advance(timedelta(hours=1))
    assert run_drain(engine, pms, clock) == {"approved": 1}  # looked up: nothing under the key
    row = posting(engine, adjustment)
    assert row["state"] == "approved" and row["next_attempt_at"] > clock.now  # backoff before a re-post
    pms.mode = "ok"
    clock.advance(timedelta(hours=1))
    assert run_drain(engine, pms, clock) == {"posted": 1}
    assert posting(engine, adjustment)["attempts"] == 2 and len(ledger_rows(engine)) == 1


def test_the_retry_budget_counts_posts_and_fails_only_after_a_lookup_found_nothing(engine: Engine) -> None:
    adjustment = approve(engine, "ch_1")
    pms, clock = FaultyPms(engine), Clock()
    pms.mode = "silence"
    seen = []
    for _ in range(2 * POLICY.max_attempts + 2):  # bounded: post, lookup, post, lookup, ...
        seen.append(run_drain(engine, pms, clock))
        clock.advance(timedelta(hours=2))
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"]) == ("failed", POLICY.max_attempts)
    assert "no posting after 3 posts" in row["last_error"]
    assert pms.posts[row["idempotency_key"]] == POLICY.max_attempts
    assert seen[: 2 * POLICY.max_attempts] == [{"unknown": 1}, {"approved": 1}] * 2 + [
        {"unknown": 1},
        {"failed": 1},
    ]


@pytest.mark.parametrize("sent", [False, True], ids=["died-before-send", "died-after-send"])
def test_a_posting_whose_poster_died_is_looked_up_never_re_posted_blind(engine: Engine, sent: bool) -> None:
    adjustment = approve(engine, "ch_1")
    pms, clock = FaultyPms(engine), Clock()
    [claimed] = claim_due(engine, "dead-poster", 10, NOW + POLICY.lease, NOW)
    if sent:  # the PMS booked it, and the poster died before committing the answer
        pms.real.post(
            Posting(claimed.idempotency_key, adjustment, "P1", "2026-12-01", None, "ch_1", 1250, "EUR", "x")
        )
    assert posting(engine, adjustment)["state"] == "posting"
    assert run_drain(engine, pms, clock) == {}  # the claim still holds
    clock.advance(POLICY.lease + timedelta(seconds=1))
    if sent:  # found by lookup: posted, nothing sent again
        assert run_drain(engine, pms, clock) == {"posted": 1}
        assert sum(pms.posts.values()) == 0
    else:  # looked up, nothing there: due at once for a fresh post, no attempt spent by the dead poster
        assert run_drain(engine, pms, clock) == {"approved": 1, "posted": 1}
        assert sum(pms.posts.values()) == 1 and posting(engine, adjustment)["attempts"] == 1
    assert len(ledger_rows(engine)) == 1 and posting(engine, adjustment)["adjustment_status"] == "posted"


def test_a_claim_that_ran_out_before_its_turn_sends_nothing_and_writes_nothing(engine: Engine) -> None:
    adjustment = approve(engine, "ch_1")
    pms, clock = FaultyPms(engine), Clock()
    [claimed] = claim_due(engine, "slow", 10, NOW + POLICY.lease, NOW)
    clock.advance(POLICY.lease)
    assert process_one(engine, pms, claimed, POLICY, clock) is None
    assert sum(pms.posts.values()) == 0 and posting(engine, adjustment)["state"] == "posting"


def test_a_drainer_whose_claim_was_taken_over_writes_nothing(engine: Engine) -> None:
    adjustment = approve(engine, "ch_1")
    [stale] = claim_due(engine, "slow", 10, NOW + POLICY.lease, NOW)
    later = NOW + POLICY.lease + timedelta(seconds=1)
    [current] = claim_due(engine, "fresh", 10, later + POLICY.lease, later)
    assert current.needs_lookup and current.claim != stale.claim
    assert not settle(engine, stale, Settlement("failed", 1, 0, later, last_error="late"), "sql", later)
    assert settle(engine, current, Settlement("approved", 0, 1, later), "sql", later)
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"], row["last_error"]) == ("approved", 0, 1, None)


def test_a_post_is_counted_before_it_is_sent_and_never_sent_under_a_lost_claim(engine: Engine) -> None:
    adjustment = approve(engine, "ch_1")
    pms = FaultyPms(engine)
    [stale] = claim_due(engine, "slow", 10, NOW + POLICY.lease, NOW)
    later = NOW + POLICY.lease + timedelta(seconds=1)
    [current] = claim_due(engine, "fresh", 10, later + POLICY.lease, later)
    assert settle(engine, current, Settlement("approved", 0, 1, later), "sql", later)  # nothing found
    [fresh] = claim_due(engine, "fresh", 10, later + POLICY.lease, later)
    assert process_one(engine, pms, stale, POLICY, lambda: NOW) is None  # its claim was taken over
    assert sum(pms.posts.values()) == 0 and posting(engine, adjustment)["attempts"] == 0
    pms.mode = "accept_then_silence"  # stored by the PMS, the answer lost: the post still counts
    assert process_one(engine, pms, fresh, POLICY, lambda: later) == "unknown"
    assert sum(pms.posts.values()) == 1 and posting(engine, adjustment)["attempts"] == 1


@pytest.mark.postgres
def test_two_drainers_on_postgresql_never_post_one_adjustment_twice(postgres_url: str) -> None:
    engine = make_engine(postgres_url, pool_size=8)
    migrations.upgrade(engine)
    try:
        approved = [approve(engine, f"ch_{n}") for n in range(120)]
        pms, clock = FaultyPms(engine), Clock()
        results: list[dict[str, int]] = []
        barrier = threading.Barrier(2)

        def drainer(name: str) -> None:
            barrier.wait()
            counts = drain(engine, pms, name, policy=POLICY, batch_size=10, concurrency=3, clock=clock)
            results.append(counts.by_state)

        threads = [threading.Thread(target=drainer, args=(f"d{n}",)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert sum(result.get("posted", 0) for result in results) == len(approved)
        assert all(results), results  # both drainers took part
        assert set(pms.posts.values()) == {1} and len(pms.posts) == len(approved)
        assert len(ledger_rows(engine)) == len(approved)
        assert {posting(engine, a)["adjustment_status"] for a in approved} == {"posted"}
    finally:
        engine.dispose()


def recon(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_postings_commands_list_show_retry_and_resolve_with_who_and_why(
    engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    approved = [approve(engine, "ch_1"), approve(engine, "ch_2")]
    pms, clock = FaultyPms(engine), Clock()
    pms.mode = "reject"
    drain(engine, pms, "w", policy=POLICY, clock=clock, batch_size=1, max_batches=1)
    pms.mode = "accept_then_silence"
    assert run_drain(engine, pms, clock) == {"unknown": 1}
    failed, unknown = sorted(approved, key=lambda adjustment: posting(engine, adjustment)["state"])

    code, out, _ = recon(capsys, "postings", "list")
    assert code == 0 and failed in out and unknown in out and "folio closed" in out
    code, out, _ = recon(capsys, "postings", "list", "--state", "unknown")
    assert code == 0 and unknown in out and failed not in out
    code, out, _ = recon(capsys, "postings", "show", unknown)
    assert code == 0 and "state: unknown" in out and "timed out after sending" in out

    code, out, err = recon(capsys, "postings", "retry", failed, "--by", "ana")
    assert (code, out.strip()) == (0, f"posting of {failed}: failed -> approved by ana")
    assert posting(engine, failed)["attempts"] == 0
    code, _, err = recon(capsys, "postings", "retry", failed, "--by", "ana")
    assert (
        code == 2
        and err == f"error: posting of {failed} is approved; only a failed or unknown one is retried\n"
    )

    reference = entry_id_for(posting(engine, unknown)["idempotency_key"])
    code, out, _ = recon(
        capsys, "postings", "resolve", unknown, "--posted", reference, "--by", "ben", "--note", "found in PMS"
    )
    assert (code, out.strip()) == (0, f"posting of {unknown}: unknown -> posted by ben")
    row = posting(engine, unknown)
    assert (row["state"], row["pms_reference"], row["resolved_by"], row["resolution_note"]) == (
        "posted",
        reference,
        "ben",
        "found in PMS",
    )
    assert row["adjustment_status"] == "posted"
    code, _, err = recon(capsys, "postings", "resolve", unknown, "--failed", "--by", "ben", "--note", "x")
    assert code == 2 and "only an unknown or failed one is resolved by hand" in err
    code, _, err = recon(capsys, "postings", "resolve", failed, "--by", "ben", "--note", "x")
    assert code == 2 and "--posted" in err
    code, _, err = recon(capsys, "postings", "show", "adj_" + "0" * 24)
    assert code == 2 and "was never approved" in err


def test_the_sensor_requests_post_adjustments_for_due_rows_and_the_job_posts_them(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dagster as dg

    from recon_pipeline.defs.postings import due_postings_sensor, post_adjustments
    from recon_pipeline.defs.resources import PostingResource, ReconDatabase

    monkeypatch.delenv("RECON_POSTING_ADAPTER", raising=False)
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    recon_db = ReconDatabase(database_url=sqlite_url)
    with dg.instance_for_test() as instance:

        def evaluate() -> dg.SensorResult:
            context = dg.build_sensor_context(instance=instance, resources={"recon_db": recon_db})
            result = due_postings_sensor(context)
            assert isinstance(result, dg.SensorResult)
            return result

        assert evaluate().run_requests == []
        adjustment = approve(engine, "ch_1")
        [request] = evaluate().run_requests or []
        [again] = evaluate().run_requests or []
        assert request.run_key == again.run_key and request.tags["recon/outbox_due"] == "1"
        result = post_adjustments.execute_in_process(
            instance=instance, resources={"recon_db": recon_db, "posting": PostingResource()}
        )
        assert result.success
        assert posting(engine, adjustment)["adjustment_status"] == "posted"
        assert evaluate().run_requests == []
    engine.dispose()


def test_an_unknown_posting_adapter_fails_naming_its_variable(sqlite_url: str) -> None:
    from recon_pipeline.defs.resources import PostingResource
    from recon_pipeline.errors import ConfigError

    engine = make_engine(sqlite_url)
    with pytest.raises(ConfigError, match="^RECON_POSTING_ADAPTER must be one of sql, http, not 'ftp'$"):
        PostingResource(adapter="ftp").build(engine)
    with pytest.raises(ConfigError, match="^RECON_PMS_POSTING_URL must name"):
        PostingResource(adapter="http", api_key="k").build(engine)
    assert PostingResource().build(engine).name == "sql"
