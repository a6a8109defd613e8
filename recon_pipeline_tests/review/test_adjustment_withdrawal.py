"""Withdrawing an approval (``review.adjustments.withdraw_approval``) on SQLite and PostgreSQL: an approver
takes their own approval back before posting begins, audited as a review; only live approvals count (four
eyes, the desk's count); an approved adjustment goes back to proposed and its untouched posting is deleted;
once a drainer claimed the posting the withdrawal is refused, whichever of the two comes first in a race;
`recon adjustments withdraw-approval` does the same from the shell."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import Engine, select, update

from recon_pipeline import cli
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.errors import ReviewError
from recon_pipeline.postings.drain import claim_due
from recon_pipeline.postings.outbox import Claimed
from recon_pipeline.review.adjustments import (
    APPROVE,
    REJECT,
    WITHDRAW_APPROVAL,
    approvers,
    live_approval_count,
    review_adjustment,
    withdraw_approval,
)
from recon_pipeline.review.four_eyes import set_four_eyes_threshold
from recon_pipeline_tests.support.posting_fixtures import NOW, propose, state

THRESHOLD = 1000  # P1's four-eyes threshold: 1250 needs two approvers, 500 one
LATER = NOW + timedelta(minutes=5)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        set_four_eyes_threshold(connection, "P1", THRESHOLD, NOW)
    yield engine
    engine.dispose()


def decide(engine: Engine, adjustment: str, action: str, reviewer: str) -> None:
    with engine.begin() as connection:
        review_adjustment(connection, adjustment, action, reviewer, "checked", None, NOW)


def withdraw(engine: Engine, adjustment: str, reviewer: str) -> str:
    with engine.begin() as connection:
        return withdraw_approval(connection, adjustment, reviewer, "wrong folio", LATER).summary


def live_count(engine: Engine, adjustment: str) -> int:
    """The desk's SQL count of live approvals."""
    with engine.connect() as connection:
        query = select(live_approval_count(adjustments.c.adjustment_id)).where(
            adjustments.c.adjustment_id == adjustment
        )
        return int(connection.execute(query).scalar_one())


def claim(engine: Engine) -> list[Claimed]:
    return claim_due(engine, "drainer", 10, LATER + timedelta(minutes=5), LATER + timedelta(minutes=1))


def test_a_first_of_two_approvals_withdrawn_no_longer_counts(engine: Engine) -> None:
    adjustment = propose(engine, "ch_big", 1250)
    decide(engine, adjustment, APPROVE, "ana")
    assert withdraw(engine, adjustment, "ana") == "approval by ana withdrawn (0 of 2 approvals)"
    assert live_count(engine, adjustment) == 0
    with engine.connect() as connection:
        assert approvers(connection, adjustment) == []
    decide(engine, adjustment, APPROVE, "bob")  # bob is the first approver now: still proposed
    assert state(engine, adjustment)[:2] == ("proposed", 0)
    decide(engine, adjustment, APPROVE, "ana")  # ana may approve anew, as the second
    status, postings, reviews = state(engine, adjustment)
    assert (status, postings, live_count(engine, adjustment)) == ("approved", 1, 2)
    assert reviews == [
        ("ana", APPROVE, "proposed", "proposed"),
        ("ana", WITHDRAW_APPROVAL, "proposed", "proposed"),
        ("bob", APPROVE, "proposed", "proposed"),
        ("ana", APPROVE, "proposed", "approved"),
    ]


def test_withdrawing_the_approval_that_approved_it_cancels_the_untouched_posting(engine: Engine) -> None:
    adjustment = propose(engine, "ch_small", 500)
    decide(engine, adjustment, APPROVE, "ana")
    assert state(engine, adjustment)[:2] == ("approved", 1)
    assert withdraw(engine, adjustment, "ana") == (
        "approval by ana withdrawn (0 of 1 approvals); back to proposed, its posting cancelled"
    )
    status, postings, reviews = state(engine, adjustment)
    assert (status, postings) == ("proposed", 0)
    assert reviews[-1] == ("ana", WITHDRAW_APPROVAL, "approved", "proposed")
    assert claim(engine) == []  # nothing left for a drainer
    decide(engine, adjustment, APPROVE, "bob")  # approved again: a fresh posting
    assert state(engine, adjustment)[:2] == ("approved", 1)


def test_only_a_live_approval_of_ones_own_before_posting_can_be_withdrawn(engine: Engine) -> None:
    adjustment = propose(engine, "ch_big", 1250)
    with pytest.raises(ReviewError, match=f"^bob has no approval of adjustment {adjustment} to withdraw$"):
        withdraw(engine, adjustment, "bob")
    decide(engine, adjustment, APPROVE, "ana")
    decide(engine, adjustment, REJECT, "bob")
    with pytest.raises(ReviewError, match="is rejected; an approval can be withdrawn only before posting"):
        withdraw(engine, adjustment, "ana")
    assert state(engine, adjustment)[2][-1] == ("bob", REJECT, "proposed", "rejected")


def test_a_posting_a_drainer_claimed_first_refuses_the_withdrawal(engine: Engine) -> None:
    adjustment = propose(engine, "ch_small", 500)
    decide(engine, adjustment, APPROVE, "ana")
    assert [c.adjustment_id for c in claim(engine)] == [adjustment]
    with pytest.raises(ReviewError, match=f"the posting of adjustment {adjustment} has begun"):
        withdraw(engine, adjustment, "ana")
    status, postings, reviews = state(engine, adjustment)
    assert (status, postings, len(reviews)) == ("approved", 1, 1)


def test_a_retried_posting_counts_as_begun(engine: Engine) -> None:
    adjustment = propose(engine, "ch_small", 500)
    decide(engine, adjustment, APPROVE, "ana")
    with engine.begin() as connection:  # failed once, retried by hand: approved, 0 attempts, but posted to
        connection.execute(
            update(outbox).where(outbox.c.adjustment_id == adjustment).values(adapter="sql", last_error="x")
        )
    with pytest.raises(ReviewError, match="has begun"):
        withdraw(engine, adjustment, "ana")


def test_a_drainer_racing_a_withdrawal_in_progress_finds_nothing_to_claim(engine: Engine) -> None:
    adjustment = propose(engine, "ch_small", 500)
    decide(engine, adjustment, APPROVE, "ana")
    claimed: list[list[Claimed]] = []
    with engine.begin() as connection:
        withdraw_approval(connection, adjustment, "ana", "wrong folio", LATER)
        drainer = threading.Thread(target=lambda: claimed.append(claim(engine)))
        drainer.start()  # PostgreSQL: skips the locked row; SQLite: waits for the write lock
        time.sleep(0.3)
    drainer.join(timeout=30)
    assert claimed == [[]] and claim(engine) == []
    assert state(engine, adjustment)[:2] == ("proposed", 0)


def test_a_withdrawal_racing_a_claim_in_progress_is_refused(engine: Engine) -> None:
    adjustment = propose(engine, "ch_small", 500)
    decide(engine, adjustment, APPROVE, "ana")
    refused: list[str] = []

    def withdrawal() -> None:
        try:
            withdraw(engine, adjustment, "ana")
        except ReviewError as error:
            refused.append(str(error))

    with engine.connect() as connection:  # a drainer's claim, as claim_due writes it, not yet committed
        if connection.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        connection.execute(select(outbox.c.adjustment_id).with_for_update())
        connection.execute(update(outbox).values(state="posting", claimed_by="drainer:1", locked_until=LATER))
        racing = threading.Thread(target=withdrawal)
        racing.start()  # waits on the outbox row (PostgreSQL) or the write lock (SQLite)
        time.sleep(0.3)
        assert racing.is_alive()
        connection.commit()
    racing.join(timeout=30)
    assert refused and "has begun" in refused[0]
    status, postings, reviews = state(engine, adjustment)
    assert (status, postings, len(reviews)) == ("approved", 1, 1)


def test_the_cli_withdraws_an_approval(
    engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    adjustment = propose(engine, "ch_small", 500)
    decide(engine, adjustment, APPROVE, "ana")
    command = ["adjustments", "withdraw-approval", adjustment, "--note", "wrong folio"]
    assert cli.main([*command, "--by", "bob"]) == 2
    assert "bob has no approval of adjustment" in capsys.readouterr().err
    assert cli.main([*command, "--by", "ana"]) == 0
    assert capsys.readouterr().out.strip() == (
        f"adjustment {adjustment}: approval by ana withdrawn (0 of 1 approvals); back to proposed, "
        "its posting cancelled"
    )
    assert state(engine, adjustment)[:2] == ("proposed", 0)
