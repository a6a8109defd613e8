"""The rule by which findings and their proposed adjustments follow the ledger from night to night, stated
here once (pure: no database, no Dagster).

- A finding *clears* when a run of its night no longer sees it: the PMS has since booked the movement
  (often by posting the finding's own adjustment, which ``reconcile/posted.py`` credits to the movement)
  or the ledger was fixed otherwise. Its ``discrepancies`` row is not deleted: it stays for audit with
  ``cleared_at`` set and its review status as it was, and a later run that sees it again makes it
  outstanding again (``cleared_at`` back to NULL). Each writer clears only its own categories.
- A proposal no finding calls for any more is *withdrawn*: the operation's ``proposed`` row becomes
  ``withdrawn`` and nothing new is proposed. So is a ``proposed`` row once nothing is left to propose
  (approved and posted rows cover the need, or a rejection of that very amount stands).
- A proposal whose finding now calls for another amount is *superseded*: a new revision carries the amount
  needed now, and the old ``proposed`` row becomes ``superseded``, naming it (``superseded_by``).
- What a person approved is never rewritten: ``approved``, ``posted`` and ``rejected`` rows are never
  modified; only ``proposed`` rows move. An approval stands when its finding clears (the approval is what
  may have fixed it), and approved and posted amounts count as committed (below).

``plan_lifecycle`` turns the rule into a plan for the adjustments. The writers apply it and do not restate
it: ``save_findings`` (``storage/findings.py``) clears the findings no longer seen, ``sync_adjustments``
(``storage/adjustments.py``) applies the plan, and ``batches/write.py`` runs both for a batch's
property-nights in one transaction under their partitions' locks, so a finding clears in the commit that
withdraws its proposal.

Per operation (property, night, kind, record; the idempotency key of its first revision):

- committed = the sum of the operation's ``approved`` and ``posted`` amounts (in the finding's currency);
  the row the ledger still needs is the remainder, need − committed, and none when that is 0, so
  approved + posted + proposed always add up to the correction the current ledger needs.
- A ``proposed`` row of the needed amount is left alone: a re-run with no change modifies no row.
- A rejection stands while nothing changed: the latest revision being ``rejected`` at the very amount
  needed now proposes nothing; a changed need proposes anew (and a later rejection stands again).

Revision n > 1 of an operation has the key ``<key of revision 1>#n``: still derived from the business
operation only (never a run), so two identical runs insert the same row, once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from recon_pipeline.keys import adjustment_id

PROPOSED: Final = "proposed"
APPROVED: Final = "approved"
REJECTED: Final = "rejected"
POSTED: Final = "posted"
WITHDRAWN: Final = "withdrawn"
SUPERSEDED: Final = "superseded"
ADJUSTMENT_STATUSES: Final = (PROPOSED, APPROVED, REJECTED, POSTED, WITHDRAWN, SUPERSEDED)
# Decided by a person (or the PMS): the pipeline never touches these rows again.
COMMITTED_STATUSES: Final = (APPROVED, POSTED)
# What a plan reports, per property-night (``LifecyclePlan.counts``), in the ``adjustments`` asset's metadata.
ADJUSTMENT_COUNTS: Final = ("new", WITHDRAWN, SUPERSEDED, "remainder", "unchanged")


def revision_key(operation_key: str, revision: int) -> str:
    """The idempotency key of the operation's ``revision``; revision 1 keeps the operation's own key."""
    return operation_key if revision == 1 else f"{operation_key}#{revision}"


def operation_key_of(idempotency_key: str, revision: int) -> str:
    """The operation's key (its first revision's) from any revision's key."""
    return idempotency_key if revision == 1 else idempotency_key.removesuffix(f"#{revision}")


@dataclass(frozen=True)
class Transition:
    """A ``proposed`` row that changes status; ``superseded_by`` names its replacement."""

    adjustment_id: str
    status: str
    superseded_by: str | None = None


@dataclass
class LifecyclePlan:
    """Rows to insert and status changes to apply; the counts the ``adjustments`` asset reports.

    ``new`` counts every inserted row, of which ``remainder`` carry what is left after approved or
    posted rows; ``unchanged`` counts proposed rows left exactly as they were."""

    inserts: list[Mapping[str, Any]] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)
    remainder: int = 0
    unchanged: int = 0

    @property
    def new(self) -> int:
        return len(self.inserts)

    def count(self, status: str) -> int:
        return sum(1 for transition in self.transitions if transition.status == status)

    def counts(self) -> dict[str, int]:
        """The plan's ``ADJUSTMENT_COUNTS``: rows new (of which ``remainder`` carry a remainder), withdrawn,
        superseded, and left unchanged."""
        return {
            "new": self.new,
            WITHDRAWN: self.count(WITHDRAWN),
            SUPERSEDED: self.count(SUPERSEDED),
            "remainder": self.remainder,
            "unchanged": self.unchanged,
        }


def plan_lifecycle(
    proposals: Sequence[Mapping[str, Any]], existing: Iterable[Mapping[Any, Any]]
) -> LifecyclePlan:
    """From what the findings call for now (rows as ``plan_adjustments`` makes them, revision 1) and the
    partition's rows (``adjustment_id``, ``idempotency_key``, ``revision``, ``status``, ``amount_minor``,
    ``currency``), the inserts and transitions that make the rows follow the ledger."""
    needs: dict[str, Mapping[str, Any]] = {}
    for proposal in proposals:
        needs.setdefault(proposal["idempotency_key"], proposal)  # a repeated finding proposes once
    history: dict[str, list[Mapping[Any, Any]]] = {}
    for row in existing:
        key = operation_key_of(row["idempotency_key"], int(row["revision"]))
        history.setdefault(key, []).append(row)
    plan = LifecyclePlan()
    # The findings' order, then operations no finding calls for any more (100,000 of them in a bulk run:
    # no sorting, and a first proposal is the row plan_adjustments made, not a copy).
    for key in [*needs, *(key for key in history if key not in needs)]:
        rows = sorted(history.get(key, []), key=lambda row: int(row["revision"]))
        _plan_operation(plan, key, needs.get(key), rows)
    return plan


def _plan_operation(
    plan: LifecyclePlan, key: str, need: Mapping[str, Any] | None, rows: list[Mapping[Any, Any]]
) -> None:
    proposed = [row for row in rows if row["status"] == PROPOSED]
    target = None if need is None else _target(need, rows)
    wanted = None if need is None or target is None else (target, need["currency"])
    keep = next((row for row in proposed if (row["amount_minor"], row["currency"]) == wanted), None)
    replacement = None
    if keep is not None:
        plan.unchanged += 1
    elif need is not None and target is not None:
        revision = max((int(row["revision"]) for row in rows), default=0) + 1
        replacement = _revision(need, key, revision, target)
        plan.inserts.append(replacement)
        plan.remainder += target != need["amount_minor"]
    for row in proposed:
        if row is keep:
            continue
        if replacement is None:
            plan.transitions.append(Transition(row["adjustment_id"], WITHDRAWN))
        else:
            plan.transitions.append(
                Transition(row["adjustment_id"], SUPERSEDED, replacement["adjustment_id"])
            )


def _target(need: Mapping[str, Any], rows: list[Mapping[Any, Any]]) -> int | None:
    """The amount the operation's proposed row must carry now, or None for no proposed row."""
    committed = sum(
        int(row["amount_minor"])
        for row in rows
        if row["status"] in COMMITTED_STATUSES and row["currency"] == need["currency"]
    )
    remainder = int(need["amount_minor"]) - committed
    if remainder == 0:
        return None
    latest = rows[-1] if rows else None
    if latest is not None and latest["status"] == REJECTED and int(latest["amount_minor"]) == remainder:
        return None  # rejected at this very amount, and nothing changed since
    return remainder


def _revision(need: Mapping[str, Any], key: str, revision: int, amount: int) -> Mapping[str, Any]:
    if revision == 1 and amount == need["amount_minor"]:
        return need
    idempotency_key = revision_key(key, revision)
    reason = need["reason"]
    if amount != need["amount_minor"]:
        reason = (
            f"{reason} (remainder: {need['amount_minor']} needed, {need['amount_minor'] - amount} approved)"
        )
    return {
        **need,
        "adjustment_id": adjustment_id(idempotency_key),
        "idempotency_key": idempotency_key,
        "revision": revision,
        "amount_minor": amount,
        "reason": reason,
        "status": PROPOSED,
    }


def adjustment_state(rows: Iterable[Mapping[Any, Any]], format_amount: Callable[[int, str], str]) -> str:
    """What a finding's adjustments say, for reports: ``proposed 120.00 EUR``, ``approved 50.00 EUR;
    proposed 20.00 EUR``, ``withdrawn``; empty when the finding never proposed one.

    Rows that still count (approved, posted, rejected, proposed) are listed with their amounts, oldest
    first; a finding whose every row was withdrawn or superseded is ``withdrawn``."""
    ordered = sorted(rows, key=lambda row: int(row["revision"]))
    live = [row for row in ordered if row["status"] not in (WITHDRAWN, SUPERSEDED)]
    if live:
        return "; ".join(
            f"{row['status']} {format_amount(int(row['amount_minor']), row['currency'])}" for row in live
        )
    return WITHDRAWN if ordered else ""
