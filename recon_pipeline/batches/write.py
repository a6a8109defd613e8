"""Write a batch's concluded nights: the adjustments, the findings, the matches, the provider's records
they name (``evidence.py``) and the takings in one transaction for the batch, each table's rows in
set-based statements; then each property-night's result and report."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from recon_pipeline.batches.at_once import at_once
from recon_pipeline.batches.property_nights import Concluded, NightInput, RunScope
from recon_pipeline.categories import RECONCILIATION_CATEGORIES
from recon_pipeline.checkpoints import ADJUSTMENTS_BEFORE_COMMIT, ADJUSTMENTS_COMMITTED, reached
from recon_pipeline.frames import present
from recon_pipeline.nights import NightWindow
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.reconcile.lifecycle import LifecyclePlan
from recon_pipeline.reconcile.report import NightReport
from recon_pipeline.storage.adjustments import WriteCounts, sync_batch_adjustments
from recon_pipeline.storage.findings import save_batch_findings
from recon_pipeline.storage.matches import MatchSaveCounts, save_batch_matches
from recon_pipeline.storage.night_takings import save_batch_takings
from recon_pipeline.storage.provider_records import (
    NightRecords,
    named_record_ids,
    save_batch_provider_records,
)


@dataclass(frozen=True)
class PropertyNightResult:
    """One property's night, reconciled: the window, what was pulled and written, and its report."""

    property_row: PropertyRow
    window: NightWindow
    pulled: int
    unattributed: int
    looked_up: int
    found_elsewhere: int
    invalid_entries: int
    fees_by_status: dict[str, int]  # where a provider settles fees later: settled vs provisional
    matches_by_rule: dict[str, int]  # movements matched per rule ("exact_id" included), suggestions apart
    matches_saved: dict[str, int]  # the matches table's changes: new, unchanged, updated, cleared...
    report: NightReport
    adjustments: dict[str, int]
    findings: dict[str, int]
    proposed: int


def write(
    engine: Engine, client: ProviderClient, nights: Sequence[tuple[NightInput, Concluded]], run: RunScope
) -> list[PropertyNightResult | BaseException]:
    """The concluded property-nights' results, in their order: the batch's in one transaction (each table's
    rows in set-based statements); if that fails, each property-night in its own (``at_once``), so that the
    one at fault (a bad row, a refused statement) fails alone with its error while the rest commit."""
    return at_once(nights, lambda part: _commit(engine, client, part, run), "write")


def _commit(
    engine: Engine, client: ProviderClient, nights: Sequence[tuple[NightInput, Concluded]], run: RunScope
) -> list[PropertyNightResult]:
    """The property-nights' adjustments, findings, matches, the provider's records they name and the
    takings in one transaction (a finding clears in the commit that withdraws its proposal), between the
    crash window's checkpoints; then each one's result and report. The writes are stamped with the latest
    conclusion's time."""
    now = max(concluded.now for _, concluded in nights)
    by_property = {night.target.row.property_id: (night, concluded) for night, concluded in nights}
    records = {
        property_id: NightRecords(
            (concluded.comparison.own, concluded.comparison.nobody, concluded.looked_up.elsewhere),
            named_record_ids(concluded.findings, concluded.matches),
            night.target.account.provider_account,
        )
        for property_id, (night, concluded) in by_property.items()
    }

    def each(part: str) -> dict[str, Any]:
        """One part of every property-night's conclusions, by property."""
        return {property_id: getattr(concluded, part) for property_id, (_, concluded) in by_property.items()}

    on, run_id, categories = run.night, run.run_id, RECONCILIATION_CATEGORIES
    with engine.begin() as connection:
        plans = sync_batch_adjustments(connection, on, each("proposals"), now, categories)
        saved = save_batch_findings(connection, on, each("findings"), run_id, now, categories)
        matched = save_batch_matches(connection, on, each("matches"), run_id, now)
        save_batch_provider_records(connection, on, records, client.name, client.dashboard_url, run_id, now)
        save_batch_takings(connection, on, each("takings"), run_id, now)
        reached(ADJUSTMENTS_BEFORE_COMMIT)
    reached(ADJUSTMENTS_COMMITTED)  # the crash window: committed, the materialization not yet reported
    return [
        _result(night, concluded, plans[p], saved[p], matched[p])
        for night, concluded in nights
        for p in (night.target.row.property_id,)
    ]


def _result(
    night: NightInput, concluded: Concluded, plan: LifecyclePlan, saved: WriteCounts, matched: MatchSaveCounts
) -> PropertyNightResult:
    """A written property-night's result and report."""
    target, compared, looked_up = night.target, concluded.comparison, concluded.looked_up
    own = compared.own
    return PropertyNightResult(
        property_row=target.row,
        window=target.window,
        pulled=len(own),
        unattributed=compared.unattributed,
        looked_up=looked_up.unmatched,
        found_elsewhere=len(looked_up.elsewhere),
        invalid_entries=len(compared.entries.invalid),
        fees_by_status=_fees_by_status(own),
        matches_by_rule=concluded.matches_by_rule,
        matches_saved=asdict(matched),
        report=concluded.report,
        adjustments=plan.counts(),
        findings={
            "new": saved.new,
            "unchanged": saved.already_present,
            "cleared": saved.cleared,
            "reopened": saved.reopened,
        },
        proposed=len(concluded.proposals),
    )


def _fees_by_status(own: pd.DataFrame) -> dict[str, int]:
    """How many of the night's fee rows are in each status (a null status uncounted), most first: a
    ``value_counts`` of a few dozen rows costs more than the night's other counts together."""
    statuses = Counter(
        str(status)
        for kind, status in zip(own["kind"].tolist(), own["status"].tolist(), strict=True)
        if kind == "fee" and present(status)
    )
    return dict(statuses.most_common())
