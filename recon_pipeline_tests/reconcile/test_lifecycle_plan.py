"""The adjustment lifecycle planner, pure: (findings' needs, rows there) → (inserts, transitions)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from recon_pipeline.keys import adjustment_id
from recon_pipeline.reconcile.lifecycle import (
    APPROVED,
    POSTED,
    PROPOSED,
    REJECTED,
    SUPERSEDED,
    WITHDRAWN,
    LifecyclePlan,
    Transition,
    adjustment_state,
    operation_key_of,
    plan_lifecycle,
    revision_key,
)

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
KEY = "p1/2026-11-30/post_missing_payment/ch_1"


def need(amount: int, key: str = KEY, currency: str = "EUR") -> dict[str, Any]:
    """A first-revision proposal as plan_adjustments makes it."""
    return {
        "adjustment_id": adjustment_id(key),
        "idempotency_key": key,
        "property_id": "p1",
        "night": "2026-11-30",
        "kind": "post_missing_payment",
        "provider_record_id": "ch_1",
        "ledger_entry_id": None,
        "amount_minor": amount,
        "currency": currency,
        "reason": "missing_in_ledger: ch_1",
        "status": PROPOSED,
        "created_at": NOW,
        "run_id": "run-x",
        "category": "missing_in_ledger",
        "record_key": "ch_1:payment",
        "revision": 1,
    }


def row(revision: int, status: str, amount: int, key: str = KEY, currency: str = "EUR") -> dict[str, Any]:
    """A stored row as the writer reads it."""
    idempotency_key = revision_key(key, revision)
    return {
        "adjustment_id": adjustment_id(idempotency_key),
        "idempotency_key": idempotency_key,
        "revision": revision,
        "status": status,
        "amount_minor": amount,
        "currency": currency,
    }


def inserted(plan: LifecyclePlan) -> list[tuple[str, int, int]]:
    return [(r["idempotency_key"], r["revision"], r["amount_minor"]) for r in plan.inserts]


def test_revision_keys_derive_from_the_operation_only() -> None:
    assert revision_key(KEY, 1) == KEY  # existing databases keep their keys
    assert revision_key(KEY, 3) == f"{KEY}#3"
    assert operation_key_of(f"{KEY}#3", 3) == KEY
    assert operation_key_of(KEY, 1) == KEY
    assert operation_key_of("p1/n/k/id#2", 1) == "p1/n/k/id#2"  # a '#' in a record id is not a revision


def test_a_first_run_proposes_and_a_rerun_with_no_change_plans_nothing() -> None:
    first = plan_lifecycle([need(1000)], [])
    assert inserted(first) == [(KEY, 1, 1000)] and first.transitions == []
    assert first.inserts[0]["adjustment_id"] == adjustment_id(KEY)
    again = plan_lifecycle([need(1000)], [row(1, PROPOSED, 1000)])
    assert (again.inserts, again.transitions, again.unchanged) == ([], [], 1)


def test_a_finding_no_longer_seen_withdraws_its_proposal() -> None:
    plan = plan_lifecycle([], [row(1, PROPOSED, 1000)])
    assert plan.inserts == []
    assert plan.transitions == [Transition(adjustment_id(KEY), WITHDRAWN)]


def test_a_changed_amount_supersedes_the_proposal_with_the_next_revision() -> None:
    plan = plan_lifecycle([need(1200)], [row(1, PROPOSED, 1000)])
    assert inserted(plan) == [(f"{KEY}#2", 2, 1200)]
    assert plan.transitions == [Transition(adjustment_id(KEY), SUPERSEDED, adjustment_id(f"{KEY}#2"))]
    # After a withdrawal and a supersession, the next revision follows the highest one there.
    later = plan_lifecycle([need(900)], [row(1, SUPERSEDED, 1000), row(2, WITHDRAWN, 1200)])
    assert inserted(later) == [(f"{KEY}#3", 3, 900)] and later.transitions == []


def test_approved_and_posted_rows_are_never_touched_and_a_remainder_is_proposed() -> None:
    rows = [row(1, APPROVED, 1000)]
    assert plan_lifecycle([need(1000)], rows).inserts == []  # approved covers the need: nothing
    more = plan_lifecycle([need(1300)], rows)
    assert inserted(more) == [(f"{KEY}#2", 2, 300)] and more.remainder == 1 and more.transitions == []
    assert "remainder" in more.inserts[0]["reason"]
    less = plan_lifecycle([need(1000)], [row(1, APPROVED, 600), row(2, POSTED, 200), row(3, PROPOSED, 100)])
    assert inserted(less) == [(f"{KEY}#4", 4, 200)]  # 600 + 200 + 200 = the 1000 needed
    assert less.transitions == [Transition(adjustment_id(f"{KEY}#3"), SUPERSEDED, adjustment_id(f"{KEY}#4"))]
    gone = plan_lifecycle([], [row(1, APPROVED, 1000), row(2, PROPOSED, 300)])
    assert gone.inserts == [] and gone.transitions == [Transition(adjustment_id(f"{KEY}#2"), WITHDRAWN)]


def test_a_rejection_stands_while_the_need_is_unchanged_and_a_changed_need_proposes_anew() -> None:
    rejected = [row(1, REJECTED, 1000)]
    assert plan_lifecycle([need(1000)], rejected).inserts == []
    changed = plan_lifecycle([need(1100)], rejected)
    assert inserted(changed) == [(f"{KEY}#2", 2, 1100)]
    # Back to the rejected amount after a change: the need changed since the rejection, propose anew.
    back = plan_lifecycle([need(1000)], [*rejected, row(2, PROPOSED, 1100)])
    assert inserted(back) == [(f"{KEY}#3", 3, 1000)]


def test_operations_are_planned_apart_and_a_repeated_finding_proposes_once() -> None:
    other = "p1/2026-11-30/reverse_unmatched_payment/le_9"
    plan = plan_lifecycle([need(1000), need(1000), need(-700, other)], [row(1, PROPOSED, 5, other)])
    assert sorted(inserted(plan)) == [(KEY, 1, 1000), (f"{other}#2", 2, -700)]
    assert plan.count(SUPERSEDED) == 1 and plan.new == 2


def test_adjustment_state_names_what_counts_with_its_amount() -> None:
    def fmt(amount: int, currency: str) -> str:
        return f"{amount / 100:.2f} {currency}"

    assert adjustment_state([], fmt) == ""
    assert adjustment_state([row(1, PROPOSED, 12000)], fmt) == "proposed 120.00 EUR"
    assert adjustment_state([row(1, WITHDRAWN, 12000)], fmt) == "withdrawn"
    assert (
        adjustment_state([row(2, PROPOSED, 300), row(1, APPROVED, 1000), row(3, SUPERSEDED, 5)], fmt)
        == "approved 10.00 EUR; proposed 3.00 EUR"
    )
