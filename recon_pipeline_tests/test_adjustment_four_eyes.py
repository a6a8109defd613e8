"""Four eyes on adjustments (``review.adjustments.review_adjustment``), on SQLite and PostgreSQL: above the
property's threshold an adjustment needs approvals by two different people before it is approved and its
posting enqueued; below it one suffices; the same person twice is refused; a rejection ends it; the CLI
says how many approvals it has; and two approvers at once on PostgreSQL approve it exactly once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from recon_pipeline import cli
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustment_reviews, adjustments
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.review.adjustments import APPROVE, REJECT, review_adjustment
from recon_pipeline.review.rules import ReviewError
from recon_pipeline.review.store import set_threshold
from recon_pipeline_tests.test_postings import NOW, propose

THRESHOLD = 1000  # P1's own: 1250 needs two approvers, 1000 one


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        set_threshold(connection, "P1", THRESHOLD, NOW)
    yield engine
    engine.dispose()


def decide(engine: Engine, adjustment: str, action: str, reviewer: str, amount: int | None = None) -> Any:
    with engine.begin() as connection:
        return review_adjustment(connection, adjustment, action, reviewer, "checked", amount, NOW)


def state(engine: Engine, adjustment: str) -> tuple[str, int, list[tuple[str, str, str, str]]]:
    """The adjustment's status, its outbox rows, and its review rows (who, action, previous → status)."""
    with engine.connect() as connection:
        status = connection.execute(
            select(adjustments.c.status).where(adjustments.c.adjustment_id == adjustment)
        ).scalar_one()
        postings = connection.execute(
            select(func.count()).select_from(outbox).where(outbox.c.adjustment_id == adjustment)
        ).scalar_one()
        reviews = connection.execute(
            select(
                adjustment_reviews.c.reviewed_by,
                adjustment_reviews.c.action,
                adjustment_reviews.c.previous_status,
                adjustment_reviews.c.status,
            )
            .where(adjustment_reviews.c.adjustment_id == adjustment)
            .order_by(adjustment_reviews.c.review_id)
        ).all()
    return status, int(postings), [tuple(row) for row in reviews]


def test_at_or_below_the_threshold_one_approval_suffices(engine: Engine) -> None:
    adjustment = propose(engine, "ch_small", THRESHOLD)
    outcome = decide(engine, adjustment, APPROVE, "ana", THRESHOLD)
    assert (outcome.status, outcome.approvals, outcome.approvals_needed) == ("approved", 1, 1)
    assert outcome.summary == "proposed -> approved"
    assert state(engine, adjustment) == ("approved", 1, [("ana", "approve", "proposed", "approved")])


def test_above_the_threshold_two_different_approvers_are_needed(engine: Engine) -> None:
    adjustment = propose(engine, "ch_big", -1250)  # |amount| counts: a negative correction too
    first = decide(engine, adjustment, APPROVE, "ana", -1250)
    assert (first.status, first.approvals, first.approvals_needed, first.waiting) == ("proposed", 1, 2, True)
    assert first.summary == "approved 1 of 2: waiting for a second approver"
    assert state(engine, adjustment) == ("proposed", 0, [("ana", "approve", "proposed", "proposed")])

    with pytest.raises(ReviewError, match="already approved by ana; a second approver must be someone else"):
        decide(engine, adjustment, APPROVE, "ana", -1250)
    assert state(engine, adjustment)[:2] == ("proposed", 0)

    second = decide(engine, adjustment, APPROVE, "bob", -1250)
    assert (second.previous_status, second.status, second.approvals, second.waiting) == (
        "proposed",
        "approved",
        2,
        False,
    )
    assert state(engine, adjustment) == (
        "approved",
        1,
        [("ana", "approve", "proposed", "proposed"), ("bob", "approve", "proposed", "approved")],
    )
    # Approving an approved row again, by anyone, is harmless.
    again = decide(engine, adjustment, APPROVE, "ana")
    assert (again.changed, again.summary) == (False, "already approved, unchanged")
    assert state(engine, adjustment)[:2] == ("approved", 1) and len(state(engine, adjustment)[2]) == 2


def test_the_default_threshold_applies_to_a_property_without_its_own(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECON_UNEXPLAINED_THRESHOLD_MINOR", "500")
    big = propose(engine, "ch_p2", 501, property_id="P2")
    assert decide(engine, big, APPROVE, "ana").waiting
    small = propose(engine, "ch_p2_small", 500, property_id="P2")
    assert decide(engine, small, APPROVE, "ana").status == "approved"


def test_a_rejection_after_the_first_approval_ends_it(engine: Engine) -> None:
    adjustment = propose(engine, "ch_big")
    decide(engine, adjustment, APPROVE, "ana")
    rejected = decide(engine, adjustment, REJECT, "bob")
    assert (rejected.previous_status, rejected.status) == ("proposed", "rejected")
    with pytest.raises(ReviewError, match="is rejected; only a proposed one can be approved"):
        decide(engine, adjustment, APPROVE, "carl")
    assert state(engine, adjustment) == (
        "rejected",
        0,
        [("ana", "approve", "proposed", "proposed"), ("bob", "reject", "proposed", "rejected")],
    )


def test_a_changed_amount_is_refused_before_any_approval_is_recorded(engine: Engine) -> None:
    adjustment = propose(engine, "ch_big")
    with pytest.raises(ReviewError, match="proposes 1250 minor units, not 1200"):
        decide(engine, adjustment, APPROVE, "ana", 1200)
    assert state(engine, adjustment) == ("proposed", 0, [])


def test_the_cli_says_how_many_approvals_the_adjustment_has(
    engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    adjustment = propose(engine, "ch_big")
    approve = ["adjustments", "approve", adjustment, "--note", "folio checked", "--amount-seen", "1250"]
    assert cli.main([*approve, "--by", "ana"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == (
        f"adjustment {adjustment}: approved 1 of 2: waiting for a second approver (by ana at 12.50 EUR)"
    )
    assert cli.main([*approve, "--by", "ana"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a second approver must be someone else" in err
    assert cli.main([*approve, "--by", "bob"]) == 0
    assert (
        capsys.readouterr().out.strip()
        == f"adjustment {adjustment}: proposed -> approved by bob at 12.50 EUR"
    )


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_two_approvers_at_once_on_postgresql_approve_it_once(engine: Engine) -> None:
    """Both threads start together; the partition lock makes one the first and the other the second."""
    outcomes: list[Any] = []
    errors: list[BaseException] = []
    for round_ in range(5):
        adjustment = propose(engine, f"ch_race_{round_}")
        barrier = threading.Barrier(2)

        def approve(
            reviewer: str, adjustment: str = adjustment, barrier: threading.Barrier = barrier
        ) -> None:
            barrier.wait()
            try:
                outcomes.append(decide(engine, adjustment, APPROVE, reviewer, 1250))
            except BaseException as error:  # reported below: a thread's exception is otherwise lost
                errors.append(error)

        threads = [threading.Thread(target=approve, args=(name,)) for name in ("ana", "bob")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert errors == []
        status, postings, reviews = state(engine, adjustment)
        assert (status, postings) == ("approved", 1)
        assert sorted(r[3] for r in reviews) == ["approved", "proposed"] and len({r[0] for r in reviews}) == 2
    assert sorted(o.waiting for o in outcomes) == [False] * 5 + [True] * 5
