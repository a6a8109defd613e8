"""The ``discrepancies`` table, whose rows are findings: the run's upsert of a night's findings (those no
longer seen cleared, reviewed ones re-detected at another difference re-opened), the one query type the
command line, the checks and the review desk select findings with (``FindingFilter``), the values its
review columns hold, and the writes of a person's review (``review/store.py`` decides them).

A finding no longer seen is cleared, not deleted (the rule: ``reconcile/lifecycle.py``). Review status
survives re-detection: a re-run refreshes a finding's facts and keeps its status, unless the finding was
acknowledged or resolved at another difference than it has now; then it goes back to ``open`` and
``discrepancy_reviews`` records the automatic re-open, as ``PIPELINE_REVIEWER``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import pandas as pd
from sqlalchemy import ColumnElement, Connection, RowMapping, func, insert, select, update

from recon_pipeline.categories import ALL_CATEGORIES, FINDING_COLUMNS
from recon_pipeline.db.schema import FINDING_KEY, discrepancies, discrepancy_reviews
from recon_pipeline.db.upsert import upsert
from recon_pipeline.frames import for_database, records
from recon_pipeline.keys import parse_night, validate_property_id
from recon_pipeline.ledger.queries import in_chunks
from recon_pipeline.storage.adjustments import WriteCounts
from recon_pipeline.storage.conditions import filter_conditions
from recon_pipeline.storage.partition import lock_partitions

# The review statuses a finding is in and the actions its history records (``review/rules.py`` says which
# a person may take when).
OPEN: Final = "open"
ACKNOWLEDGED: Final = "acknowledged"
RESOLVED: Final = "resolved"
REVIEW_STATUSES: Final = (OPEN, ACKNOWLEDGED, RESOLVED)

ACKNOWLEDGE: Final = "acknowledge"
RESOLVE: Final = "resolve"
REOPEN: Final = "reopen"
# A comment in the history that leaves the status as it was (not a review action: ``review`` refuses it).
NOTE: Final = "note"
# Who an automatic re-open is recorded as.
PIPELINE_REVIEWER: Final = "recon"


# What a re-detection may refresh; detected_at, run_id, review_status and the review columns keep their
# values (a changed difference re-opens the finding afterwards, see reopen_changed); cleared_at (and the
# run that cleared it) is written too, as the clear rule has it (reconcile/lifecycle.py).
FINDING_FACTS = (
    *(name for name in FINDING_COLUMNS if name not in ("category", "record_key")),
    "cleared_at",
    "cleared_run_id",
)


# What save_findings reads of a partition's rows: the key, whether cleared, and what a re-open
# decides on and records.
_PRESENT_COLUMNS = (
    "discrepancy_id",
    *FINDING_KEY,
    "cleared_at",
    "review_status",
    "reviewed_difference_minor",
    "difference_minor",
    "currency",
)


@dataclass(frozen=True)
class FindingFilter:
    """Which findings `recon findings list` shows; None matches everything. Validated on creation.

    ``cleared``: False for the findings the latest run still sees (what checks count), True for those a
    later run no longer saw, None for both."""

    property_id: str | None = None
    night: str | None = None
    category: str | None = None
    status: str | None = None
    cleared: bool | None = None

    def __post_init__(self) -> None:
        if self.property_id is not None:
            validate_property_id(self.property_id)
        if self.night is not None:
            parse_night(self.night)
        if self.category is not None and self.category not in ALL_CATEGORIES:
            raise ValueError(f"unknown category {self.category!r}: use one of {', '.join(ALL_CATEGORIES)}")
        if self.status is not None and self.status not in REVIEW_STATUSES:
            raise ValueError(f"unknown status {self.status!r}: use one of {', '.join(REVIEW_STATUSES)}")


class UnknownFindingError(LookupError):
    """No row of ``discrepancies`` has this id."""


def matching_conditions(where: FindingFilter) -> list[ColumnElement[bool]]:
    equal = {
        "property_id": where.property_id,
        "night": where.night,
        "category": where.category,
        "review_status": where.status,
    }
    return filter_conditions(discrepancies, equal, where.cleared)


def list_findings(connection: Connection, where: FindingFilter, limit: int) -> list[RowMapping]:
    """Matching findings, newest night first, then property, category and record."""
    query = (
        select(discrepancies)
        .where(*matching_conditions(where))
        .order_by(
            discrepancies.c.night.desc(),
            discrepancies.c.property_id,
            discrepancies.c.category,
            discrepancies.c.record_key,
        )
        .limit(limit)
    )
    return list(connection.execute(query).mappings())


def count_findings(connection: Connection, where: FindingFilter) -> int:
    query = select(func.count()).select_from(discrepancies).where(*matching_conditions(where))
    return int(connection.execute(query).scalar_one())


def get_finding(connection: Connection, finding_id: int, *, lock: bool = False) -> RowMapping:
    """The finding's row, or UnknownFindingError; ``lock`` holds it until the transaction ends."""
    query = select(discrepancies).where(discrepancies.c.discrepancy_id == finding_id)
    row = connection.execute(query.with_for_update() if lock else query).mappings().first()
    if row is None:
        raise UnknownFindingError(f"no finding with id {finding_id}")
    return row


def write_review(
    connection: Connection,
    finding_id: int,
    status: str,
    reviewer: str,
    note: str,
    difference_minor: int,
    now: datetime,
) -> None:
    """Write a person's review of the finding: its status, who, when, why and the difference they saw."""
    connection.execute(
        update(discrepancies)
        .where(discrepancies.c.discrepancy_id == finding_id)
        .values(
            review_status=status,
            reviewed_by=reviewer,
            reviewed_at=now,
            review_note=note,
            reviewed_difference_minor=difference_minor,
        )
    )


def write_assignee(connection: Connection, finding_id: int, assignee: str | None, now: datetime) -> None:
    """Give the finding to ``assignee`` (None: to no one) from ``now``."""
    connection.execute(
        update(discrepancies)
        .where(discrepancies.c.discrepancy_id == finding_id)
        .values(assigned_to=assignee, assigned_at=None if assignee is None else now)
    )


def reopens(review_status: str, reviewed_difference: int | None, difference: int) -> bool:
    """A reviewed finding re-detected with another difference than the reviewer saw goes back to open."""
    return review_status != OPEN and reviewed_difference is not None and reviewed_difference != difference


def history_row(
    finding: Mapping[Any, Any],
    action: str,
    previous_status: str,
    reviewer: str,
    note: str | None,
    now: datetime,
    run_id: str | None = None,
) -> dict[str, Any]:
    return {
        **{name: finding[name] for name in FINDING_KEY},
        "action": action,
        "previous_status": previous_status,
        "reviewed_by": reviewer,
        "note": note,
        "difference_minor": int(finding["difference_minor"]),
        "currency": finding["currency"],
        "reviewed_at": now,
        "run_id": run_id,
    }


def record_reviews(connection: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Append rows to the review history."""
    if rows:
        connection.execute(insert(discrepancy_reviews), list(rows))


def save_findings(
    connection: Connection,
    property_id: str,
    night: str,
    findings: pd.DataFrame,
    run_id: str | None,
    now: datetime,
    categories: Collection[str] | None = None,
) -> WriteCounts:
    """``save_batch_findings`` of one partition: its counts."""
    return save_batch_findings(connection, night, {property_id: findings}, run_id, now, categories)[
        property_id
    ]


def save_batch_findings(
    connection: Connection,
    night: str,
    findings: Mapping[str, pd.DataFrame],
    run_id: str | None,
    now: datetime,
    categories: Collection[str] | None = None,
) -> dict[str, WriteCounts]:
    """Make each partition's outstanding findings (``findings`` per property of ``night``) equal its
    frame: upsert them and clear the ones no longer seen, as ``reconcile/lifecycle.py`` states the rule;
    the counts per property. One read of every partition's rows, one upsert, one clear for the batch.

    ``categories``: the categories this writer owns (default: all); findings of other categories in the
    partition are another writer's and left alone (the payouts asset and the night's reconciliation
    share property-nights).

    A reviewed finding re-detected with another difference than its reviewer saw is re-opened. Writers of
    one partition take turns (``lock_partitions``), so each one's read of what was there is current: two
    concurrent identical runs count the findings as new once, and neither clears what the other wrote.
    """
    lock_partitions(connection, night, findings)
    if categories is not None:
        foreign = {str(c) for frame in findings.values() for c in frame["category"]} - set(categories)
        if foreign:
            raise ValueError(f"findings of {sorted(foreign)} are not this writer's ({sorted(categories)})")
    # The partitions' rows, read once (and locked, in id order, for the re-opens): what was there decides
    # what is new and what is stale, and with the facts written below, what re-opens.
    present: list[RowMapping] = []
    for chunk in in_chunks(sorted(findings)):
        present += connection.execute(
            select(*(discrepancies.c[name] for name in _PRESENT_COLUMNS))
            .where(discrepancies.c.night == night, discrepancies.c.property_id.in_(chunk))
            .order_by(discrepancies.c.discrepancy_id)
            .with_for_update()
        ).mappings()
    before = {
        (row["property_id"], row["category"], row["record_key"]): row
        for row in present
        if categories is None or row["category"] in categories
    }
    rows = [
        {
            **for_database(record),
            "property_id": property_id,
            "night": night,
            "detected_at": now,
            "run_id": run_id,
            "cleared_at": None,
            "cleared_run_id": None,
        }
        for property_id, frame in findings.items()
        for record in records(frame, FINDING_COLUMNS)
    ]
    upsert(connection, discrepancies, rows, FINDING_KEY, FINDING_FACTS)
    written = {(row["property_id"], row["category"], row["record_key"]): row for row in rows}
    reopened = reopen_changed(
        connection,
        [
            {**row, **written.get((row["property_id"], row["category"], row["record_key"]), {})}
            for row in present
        ],
        run_id,
        now,
    )
    stale = [row for key, row in before.items() if key not in written and row["cleared_at"] is None]
    for chunk in in_chunks([row["discrepancy_id"] for row in stale]):
        connection.execute(
            update(discrepancies)
            .where(discrepancies.c.discrepancy_id.in_(chunk), discrepancies.c.cleared_at.is_(None))
            .values(cleared_at=now, cleared_run_id=run_id)
        )
    new = Counter(key[0] for key in written.keys() - before.keys())
    cleared = Counter(row["property_id"] for row in stale)
    counted = Counter(row["property_id"] for row in rows)
    return {
        property_id: WriteCounts(
            new=new[property_id],
            already_present=counted[property_id] - new[property_id],
            cleared=cleared[property_id],
            reopened=reopened[property_id],
        )
        for property_id in findings
    }


def reopen_changed(
    connection: Connection, findings: Sequence[Mapping[str, Any]], run_id: str | None, now: datetime
) -> Counter[str]:
    """Re-open the reviewed ``findings`` (rows of the batch's partitions, as they are now, in id order)
    whose difference is no longer the one reviewed, with an audit row each; how many were re-opened per
    property.

    The caller holds the partitions' locks and the rows (read ``FOR UPDATE``), so a concurrent identical
    run waits and, once this commits, finds nothing left to re-open.
    """
    changed = [
        row
        for row in findings
        if reopens(row["review_status"], row["reviewed_difference_minor"], row["difference_minor"])
    ]
    if not changed:
        return Counter()
    for chunk in in_chunks([row["discrepancy_id"] for row in changed]):
        connection.execute(
            update(discrepancies).where(discrepancies.c.discrepancy_id.in_(chunk)).values(review_status=OPEN)
        )
    record_reviews(
        connection,
        [
            history_row(
                row,
                REOPEN,
                row["review_status"],
                PIPELINE_REVIEWER,
                f"re-detected with difference {row['difference_minor']} (reviewed at "
                f"{row['reviewed_difference_minor']}, minor units)",
                now,
                run_id,
            )
            for row in changed
        ],
    )
    return Counter(row["property_id"] for row in changed)


def unexplained_amounts(
    connection: Connection, property_id: str, night: str, category: str | None = None
) -> dict[str, int]:
    """Sum of |difference_minor| of the property-night's open findings that the latest run still sees (of
    ``category``, if given), per currency, in minor units."""
    where = FindingFilter(property_id, night, category, OPEN, cleared=False)
    query = (
        select(discrepancies.c.currency, func.sum(func.abs(discrepancies.c.difference_minor)))
        .where(*matching_conditions(where))
        .group_by(discrepancies.c.currency)
    )
    return {currency: int(amount) for currency, amount in connection.execute(query).tuples()}


def reported_payments(
    connection: Connection, property_ids: Sequence[str], night: str, category: str
) -> dict[str, dict[str, str | None]]:
    """Per property, provider_record_id → booking_id of its findings of ``category`` on ``night`` (cleared
    or not): what a re-run must look at again to keep a finding true once its source no longer lists it.
    Every property of ``property_ids`` has a mapping, maybe empty."""
    found: dict[str, dict[str, str | None]] = {property_id: {} for property_id in property_ids}
    for chunk in in_chunks(sorted(found)):
        query = select(
            discrepancies.c.property_id, discrepancies.c.provider_record_id, discrepancies.c.booking_id
        ).where(
            discrepancies.c.property_id.in_(chunk),
            discrepancies.c.night == night,
            discrepancies.c.category == category,
            discrepancies.c.provider_record_id.is_not(None),
        )
        for property_id, record_id, booking_id in connection.execute(query):
            found[property_id][record_id] = booking_id
    return found
