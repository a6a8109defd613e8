"""Conclude a batch's looked-up nights (pure): the diff, run once over the batch, then each night's
findings, orphaned captured payments, proposals, matches and takings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

import pandas as pd

from recon_pipeline.batches.at_once import beside, ok
from recon_pipeline.batches.holds import authorization_findings
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
from recon_pipeline.reconcile.identity import name_booked_ids
from recon_pipeline.reconcile.matching import PERSON, KnownMatch, MatchOutcome
from recon_pipeline.reconcile.orphans import find_orphaned_captured_payments
from recon_pipeline.reconcile.report import build_night_report
from recon_pipeline.reconcile.takings import night_takings
from recon_pipeline.reconcile.unattributed import unattributed_findings


def conclude_all(
    nights: Sequence[NightInput],
    found: LookUps,
    states: Mapping[str, str],
    run: RunScope,
) -> list[Concluded | BaseException]:
    """The diff over every looked-up night at once (``diff_nights``), then each night's conclusions; a
    night whose input breaks a step fails alone."""
    paired = [
        part if isinstance(part, BaseException) else (night, part)
        for night, part in zip(nights, found, strict=True)
    ]
    diffs = beside(paired, lambda ready: diff_nights([_to_diff(n, *p) for n, p in ready]), "diff")
    concluded: list[Concluded | BaseException] = []
    for pair, diffed in zip(paired, diffs, strict=True):
        if isinstance(diffed, BaseException):
            concluded.append(diffed)
            continue
        night, (compared, looked_up) = ok(pair)
        try:
            concluded.append(conclude(night, compared, looked_up, diffed, states, run))
        except Exception as error:
            concluded.append(error)
    return concluded


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


def conclude(
    night: NightInput,
    compared: Comparison,
    looked_up: LookedUp,
    result: DiffResult,
    states: Mapping[str, str],
    run: RunScope,
) -> Concluded:
    """The diff's findings with the matcher's, the invalid entries', the unowned payments' and the
    holds', the orphaned captured payments, the proposals, the night's takings and its report (``states``: the
    bookings the night's captured payments and holds name, maybe more)."""
    row, matching = night.target.row, compared.matching
    result = with_findings(
        replace(result, findings=name_booked_ids(result.findings, compared.tendered.provider)),
        matching.findings,
        unattributed_findings(compared.nobody),
        compared.entries.invalid,
        authorization_findings(row, night.target.window, looked_up.holds, looked_up.hold_bookings, states),
    )
    now = datetime.now(UTC)
    orphans = find_orphaned_captured_payments(looked_up.captured, states, now, run.orphan_grace)
    proposals = plan_adjustments(row.property_id, run.night, result.findings, run.run_id, now)
    tonights, counts = _tonights(matching, night.pms.known[row.property_id])
    # per tender, and the cards per brand on both sides
    takings = night_takings(compared.tendered, compared.own)
    return Concluded(
        compared,
        looked_up,
        result,
        orphans,
        proposals,
        build_night_report(result, orphans, compared.taken, counts, takings),
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
