"""Conclude a batch's looked-up nights (pure): the diff, the holds and the orphaned captured payments, each
run once over the batch, then each night's findings, proposals, matches and takings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pandas as pd

from recon_pipeline.batches.at_once import beside, ok
from recon_pipeline.batches.holds import holds_night
from recon_pipeline.batches.property_nights import (
    Comparison,
    Concluded,
    LookedUp,
    LookUps,
    NightInput,
    RunScope,
)
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.reconcile.diff import DiffResult, NightToDiff, diff_nights, with_findings
from recon_pipeline.reconcile.holds import HoldsNight, expiring_authorizations_of_nights
from recon_pipeline.reconcile.identity import name_booked_ids
from recon_pipeline.reconcile.matching import PERSON, KnownMatch, MatchOutcome
from recon_pipeline.reconcile.orphans import orphans_of_nights
from recon_pipeline.reconcile.report import build_night_report
from recon_pipeline.reconcile.takings import night_takings
from recon_pipeline.reconcile.unattributed import unattributed_findings


def conclude_all(
    nights: Sequence[NightInput],
    found: LookUps,
    states: Mapping[str, str],
    run: RunScope,
) -> list[Concluded | BaseException]:
    """The diff, the holds and the orphaned captured payments over every looked-up night at once
    (``diff_nights``, ``expiring_authorizations_of_nights``, ``orphans_of_nights``), then each night's
    conclusions; a night whose input breaks a step fails alone."""
    now = datetime.now(UTC)
    paired = [
        part if isinstance(part, BaseException) else (night, part)
        for night, part in zip(nights, found, strict=True)
    ]
    diffs = beside(paired, lambda ready: diff_nights([_to_diff(n, *p) for n, p in ready]), "diff")
    holds = beside(
        paired,
        lambda ready: expiring_authorizations_of_nights([_holds(n, p[1], states) for n, p in ready]),
        "holds",
    )
    orphans = beside(
        paired,
        lambda ready: orphans_of_nights([p[1].captured for _, p in ready], states, now, run.orphan_grace),
        "orphans",
    )
    concluded: list[Concluded | BaseException] = []
    for pair, diffed, expiring, orphaned in zip(paired, diffs, holds, orphans, strict=True):
        failed = next((p for p in (diffed, expiring, orphaned) if isinstance(p, BaseException)), None)
        if failed is not None:
            concluded.append(failed)
            continue
        night, (compared, looked_up) = ok(pair)
        judged = Judged(ok(diffed), ok(expiring), ok(orphaned))
        try:
            concluded.append(conclude(night, compared, looked_up, judged, run, now))
        except Exception as error:
            concluded.append(error)
    return concluded


@dataclass(frozen=True)
class Judged:
    """What the batch's steps at once made of one night: the diff's result, the holds' findings and the
    orphaned captured payments."""

    diffed: DiffResult
    expiring: pd.DataFrame
    orphans: pd.DataFrame


def _to_diff(night: NightInput, compared: Comparison, looked_up: LookedUp) -> NightToDiff:
    """What the diff compares of a night: the matcher's frames, the records found elsewhere, the
    property's tolerance and currency."""
    row, matching = night.target.row, compared.matching
    return NightToDiff(
        matching.provider_records,
        matching.ledger,
        looked_up.elsewhere,
        row.fx_tolerance,
        row.currency,
        matching.cuts,
    )


def _holds(night: NightInput, looked_up: LookedUp, states: Mapping[str, str]) -> HoldsNight:
    """What judges a night's holds: those read from the provider, the bookings they pay and their states."""
    target = night.target
    return holds_night(target.row, target.window, looked_up.holds, looked_up.hold_bookings, states)


def conclude(
    night: NightInput, compared: Comparison, looked_up: LookedUp, judged: Judged, run: RunScope, now: datetime
) -> Concluded:
    """The diff's findings with the matcher's, the invalid entries', the unowned payments' and the holds',
    the proposals, the night's takings and its report with the orphaned captured payments."""
    row, matching = night.target.row, compared.matching
    result = with_findings(
        replace(judged.diffed, findings=name_booked_ids(judged.diffed.findings, compared.tendered.provider)),
        matching.findings,
        unattributed_findings(compared.nobody),
        compared.entries.invalid,
        judged.expiring,
    )
    proposals = plan_adjustments(row.property_id, run.night, result.findings, run.run_id, now)
    tonights, counts = _tonights(matching, night.pms.known[row.property_id])
    # per tender, and the cards per brand on both sides
    takings = night_takings(compared.tendered, compared.own)
    return Concluded(
        compared,
        looked_up,
        result,
        judged.orphans,
        proposals,
        build_night_report(result, judged.orphans, compared.taken, counts, takings),
        tonights,
        counts,
        takings,
        now,
    )


def _tonights(matching: MatchOutcome, decided: Sequence[KnownMatch]) -> tuple[pd.DataFrame, dict[str, int]]:
    """The night's matches to store and count per rule: without the adjacent nights' machine matches the
    matcher applied first (so that their entries are not taken twice). Those are their own night's: stored
    here too, each night would hand its copy back to the other as decided and a match could never clear
    (an ambiguity the tiers held back even turned into a proposal once its pairs came back as known);
    counted here too, a quiet night would report its neighbour's matches as its own."""
    found, counts = matching.matches, matching.counts_by_rule
    theirs = {match.match_key for match in decided if match.confirmed and match.rule != PERSON}
    if not theirs or found.empty:
        return found, counts
    applied = found["match_key"].isin(theirs)
    if not applied.any():
        return found, counts
    for rule, n in found.loc[applied, "rule"].value_counts().items():
        counts = {**counts, str(rule): counts.get(str(rule), 0) - int(n)}
    return found[~applied].reset_index(drop=True), counts
