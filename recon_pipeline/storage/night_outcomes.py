"""What each property's night came to: one ``night_reconciliations`` row per property-night, overwritten by
its latest reconciliation. Dagster's partition status is per night; this is per property."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from recon_pipeline.db.schema import night_reconciliations
from recon_pipeline.db.upsert import upsert

SUCCEEDED = "succeeded"
FAILED = "failed"


@dataclass(frozen=True)
class PropertyOutcome:
    """One property's night in one run: succeeded with its counts, or failed with a one-line error."""

    property_id: str
    night: str
    run_id: str
    batch_key: str | None
    status: str
    started_at: datetime
    finished_at: datetime
    error: str | None = None
    findings: int | None = None
    adjustments_proposed: int | None = None

    @property
    def succeeded(self) -> bool:
        return self.status == SUCCEEDED


_UPDATED = [c.name for c in night_reconciliations.columns if c.name not in ("property_id", "night")]


def record_outcomes(connection: Connection, outcomes: Iterable[PropertyOutcome]) -> None:
    """Keep each property-night's latest outcome (the previous run's row is overwritten)."""
    upsert(
        connection, night_reconciliations, [asdict(o) for o in outcomes], ["property_id", "night"], _UPDATED
    )


def load_outcomes(
    connection: Connection, night: str, property_ids: Iterable[str] | None = None
) -> dict[str, PropertyOutcome]:
    """The latest outcome of ``night`` per property (of ``property_ids`` only, when given)."""
    query = select(night_reconciliations).where(night_reconciliations.c.night == night)
    if property_ids is not None:
        query = query.where(night_reconciliations.c.property_id.in_(list(property_ids)))
    return {row.property_id: PropertyOutcome(**row._asdict()) for row in connection.execute(query)}


def succeeded_nights(connection: Connection, since_night: str) -> dict[tuple[str, str], datetime]:
    """(property_id, night) of every night since ``since_night`` whose latest reconciliation succeeded,
    with the time that reconciliation started (what it cannot have seen came later)."""
    query = select(
        night_reconciliations.c.property_id, night_reconciliations.c.night, night_reconciliations.c.started_at
    ).where(night_reconciliations.c.night >= since_night, night_reconciliations.c.status == SUCCEEDED)
    return {(row.property_id, row.night): row.started_at for row in connection.execute(query)}


@dataclass(frozen=True)
class NightTotals:
    """Every batch of a night summed: its property-nights by latest outcome and what the succeeded found."""

    succeeded: int = 0
    failed: int = 0
    findings: int = 0
    adjustments_proposed: int = 0


def night_totals(connection: Connection, night: str) -> NightTotals:
    """The night's latest outcomes summed over every batch that reconciled it (one query)."""
    c = night_reconciliations.c
    query = (
        select(c.status, func.count(), func.sum(c.findings), func.sum(c.adjustments_proposed))
        .where(c.night == night)
        .group_by(c.status)
    )
    by_status = {row[0]: row for row in connection.execute(query)}
    done = by_status.get(SUCCEEDED)
    failed = by_status.get(FAILED)
    return NightTotals(
        succeeded=int(done[1]) if done else 0,
        failed=int(failed[1]) if failed else 0,
        findings=int(done[2] or 0) if done else 0,
        adjustments_proposed=int(done[3] or 0) if done else 0,
    )
