"""Four eyes on adjustments (``review.adjustments.review_adjustment``), on SQLite and PostgreSQL: above the
property's four-eyes threshold an adjustment needs approvals by two different people before it is approved
and its posting enqueued; below it one suffices; the same person twice is refused; a rejection ends it; the
CLI says how many approvals it has; and two approvers at once on PostgreSQL approve it exactly once. The
threshold in force is the property's own, else RECON_FOUR_EYES_THRESHOLD_MINOR, else the property's
unexplained-amount threshold; `recon adjustments four-eyes` shows and sets it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, func, insert, select

from recon_pipeline import cli
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import approval_thresholds, properties
from recon_pipeline.errors import ReviewError
from recon_pipeline.review.adjustments import APPROVE, REJECT, review_adjustment
from recon_pipeline.review.four_eyes import UNEXPLAINED, four_eyes_threshold, set_four_eyes_threshold
from recon_pipeline.review.store import Threshold, set_threshold, threshold_for
from recon_pipeline_tests.support.posting_fixtures import NOW, propose, state

THRESHOLD = 1000  # P1's own four-eyes threshold: 1250 needs two approvers, 1000 one


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        set_four_eyes_threshold(connection, "P1", THRESHOLD, NOW)
    yield engine
    engine.dispose()


def decide(engine: Engine, adjustment: str, action: str, reviewer: str, amount: int | None = None) -> Any:
    with engine.begin() as connection:
        return review_adjustment(connection, adjustment, action, reviewer, "checked", amount, NOW)


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


def test_the_propertys_own_threshold_wins_over_the_default_and_the_unexplained_one(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P1's own 1000 applies whatever RECON_FOUR_EYES_THRESHOLD_MINOR and its unexplained threshold say."""
    monkeypatch.setenv("RECON_FOUR_EYES_THRESHOLD_MINOR", "5000")
    with engine.begin() as connection:
        set_threshold(connection, "P1", 0, NOW)  # the blocking check's: no say in four eyes
        assert four_eyes_threshold(connection, "P1") == Threshold(THRESHOLD, "property")
    assert decide(engine, propose(engine, "ch_big"), APPROVE, "ana").waiting
    assert decide(engine, propose(engine, "ch_small", THRESHOLD), APPROVE, "ana").status == "approved"


def test_recon_four_eyes_threshold_minor_applies_to_a_property_without_its_own(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECON_FOUR_EYES_THRESHOLD_MINOR", " 500 ")
    monkeypatch.setenv("RECON_UNEXPLAINED_THRESHOLD_MINOR", "100000")
    with engine.begin() as connection:
        set_threshold(connection, "P2", 0, NOW)
        assert four_eyes_threshold(connection, "P2") == Threshold(500, "default")
    big = propose(engine, "ch_p2", 501, property_id="P2")
    assert decide(engine, big, APPROVE, "ana").waiting
    small = propose(engine, "ch_p2_small", -500, property_id="P2")
    assert decide(engine, small, APPROVE, "ana").status == "approved"


def test_without_either_the_propertys_unexplained_threshold_applies(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither P2's own nor RECON_FOUR_EYES_THRESHOLD_MINOR (empty counts as unset): P2's unexplained
    threshold, its own row or else RECON_UNEXPLAINED_THRESHOLD_MINOR, as before four eyes had its own."""
    monkeypatch.setenv("RECON_FOUR_EYES_THRESHOLD_MINOR", "")
    monkeypatch.setenv("RECON_UNEXPLAINED_THRESHOLD_MINOR", "500")
    with engine.connect() as connection:
        assert four_eyes_threshold(connection, "P2") == Threshold(500, UNEXPLAINED)
    big = propose(engine, "ch_p2", 501, property_id="P2")
    assert decide(engine, big, APPROVE, "ana").waiting
    small = propose(engine, "ch_p2_small", 500, property_id="P2")
    assert decide(engine, small, APPROVE, "ana").status == "approved"
    with engine.begin() as connection:
        set_threshold(connection, "P2", 2000, NOW)
    assert decide(engine, propose(engine, "ch_p2_mid", 1500, property_id="P2"), APPROVE, "ana").changed


def test_a_bad_recon_four_eyes_threshold_minor_is_one_line_naming_it(
    engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    monkeypatch.setenv("RECON_FOUR_EYES_THRESHOLD_MINOR", "-1")
    adjustment = propose(engine, "ch_p2", 501, property_id="P2")
    approve = ["adjustments", "approve", adjustment, "--note", "checked", "--by", "ana"]
    assert cli.main(approve) == 2
    assert capsys.readouterr().err == (
        "error: RECON_FOUR_EYES_THRESHOLD_MINOR must be a non-negative integer of minor units, not '-1'\n"
    )
    assert state(engine, adjustment) == ("proposed", 0, [])


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
    refusal = "now proposes 12.50 EUR, not the 12.00 EUR you saw: look at it again before deciding"
    with pytest.raises(ReviewError, match=refusal):
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


def test_recon_adjustments_four_eyes_shows_sets_and_clears_the_threshold(
    engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each call prints the threshold in force and its source; setting it leaves the blocking check's
    threshold alone, and an unknown property is one line (exit 2) that changes nothing."""
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    monkeypatch.delenv("RECON_FOUR_EYES_THRESHOLD_MINOR", raising=False)
    monkeypatch.setenv("RECON_UNEXPLAINED_THRESHOLD_MINOR", "300000")
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            {"property_id": "P2", "name": "P2", "timezone": "Europe/Paris", "currency": "EUR"},
        )

    def four_eyes(*options: str) -> str:
        assert cli.main(["adjustments", "four-eyes", "P2", *options]) == 0
        return capsys.readouterr().out

    assert four_eyes() == (
        "P2: four-eyes threshold 3,000.00 EUR (300000 minor units per currency; its unexplained amount "
        "threshold, as neither this property's own nor RECON_FOUR_EYES_THRESHOLD_MINOR is set)\n"
    )
    assert four_eyes("--above", "700") == (
        "P2: four-eyes threshold 7.00 EUR (700 minor units per currency; this property's own)\n"
    )
    assert decide(engine, propose(engine, "ch_p2", 701, property_id="P2"), APPROVE, "ana").waiting
    assert four_eyes("--above", "800") == (
        "P2: four-eyes threshold 8.00 EUR (800 minor units per currency; this property's own)\n"
    )
    with engine.connect() as connection:
        assert threshold_for(connection, "P2") == Threshold(300000, "default")  # the check's: unmoved
    monkeypatch.setenv("RECON_FOUR_EYES_THRESHOLD_MINOR", "2500")
    assert four_eyes("--clear") == (
        "P2: four-eyes threshold 25.00 EUR (2500 minor units per currency; the default, "
        "RECON_FOUR_EYES_THRESHOLD_MINOR)\n"
    )
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(approval_thresholds)).scalar_one() == 1

    assert cli.main(["adjustments", "four-eyes", "nowhere", "--above", "5"]) == 2
    assert capsys.readouterr().err == "error: property 'nowhere' is not in the properties table\n"
    with engine.connect() as connection:
        assert connection.execute(
            select(approval_thresholds.c.property_id, approval_thresholds.c.four_eyes_above_minor)
        ).all() == [("P1", THRESHOLD)]
    assert cli.main(["adjustments", "four-eyes", "P2", "--above", "-1"]) == 2
    assert "--above" in capsys.readouterr().err
