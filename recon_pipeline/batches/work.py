"""Reconcile a batch of properties of one night: the work a ``reconcile_night`` run does, without Dagster.

A batch goes through four named steps, each over all of its property-nights: **compare** (pure: the
ledgers and captured payment orders as one frame each, each night's entries by tender and its pull
attributed, then the matcher, run once over the batch), **look up** by id what the comparison left loose
(records the ledger names that a night lacks, open holds: a bounded pool of requests; then the bookings
of every captured payment and hold in one statement), **conclude** (pure: the diff, run once over the
batch, then every finding, the orphaned captured payments, the proposals, the takings), and **write** the
adjustments, the findings, the matches and the provider's records they name (``evidence.py``) and the
nights' takings in one transaction for the batch, each table's rows in set-based statements, so that a
finding clears in the commit that withdraws its proposal (the rule: ``reconcile/lifecycle.py``; the crash
window's checkpoints around its commit). A step run at
once over the batch that one night's input breaks is run night by night (``at_once``), so that night fails
alone. Every result lands in the reconciliation database; the caller gets counts and a report to
summarise, nothing another host must read from this one's disk.

Properties that share a provider account and the night window (the platform account, attributed by
metadata) are pulled **once** and the pull is split by attribution; the account groups of a batch are
worked on by a bounded thread pool over one process-wide provider client, whose rate bound is the
deployment's. One property failing (a bad ``properties`` row, an incomplete pull, a database error) fails
that property alone, with a one-line error naming it; the rest of the batch still reconciles. A property
whose pull the provider refused for good (``errors.is_permanent``) is kept apart (``BatchResult.permanent``)
so that a batch no retry can change is not retried.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Connection, Engine

from recon_pipeline.batches.at_once import at_once, beside, ok
from recon_pipeline.batches.holds import authorization_findings, hold_payments, open_holds
from recon_pipeline.batches.property_nights import (
    Comparison,
    Concluded,
    LookedUp,
    LookUps,
    NightInput,
    PmsInput,
    RunScope,
    Target,
)
from recon_pipeline.categories import RECONCILIATION_CATEGORIES
from recon_pipeline.checkpoints import ADJUSTMENTS_BEFORE_COMMIT, ADJUSTMENTS_COMMITTED, reached
from recon_pipeline.frames import SCOPE, pieces
from recon_pipeline.ledger.queries import (
    captured_orders_frame,
    ledger_frames,
    list_properties,
    load_booking_statuses,
    load_payment_order_owners,
    read_booking_groups,
    read_captured_order_rows,
    read_ledger_rows,
)
from recon_pipeline.ledger.validation import LedgerSplit, split_ledger_records
from recon_pipeline.nights import NightWindow, night_window
from recon_pipeline.postings.store import read_posted_adjustments
from recon_pipeline.properties import PropertyRow, split_valid_properties
from recon_pipeline.providers.attribution import attribute, reports_unattributed, unclaimed_payment_ids
from recon_pipeline.providers.errors import is_permanent
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.records import empty_provider_records
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.reconcile.captured import captured_payments, with_ledger_bookings
from recon_pipeline.reconcile.diff import (
    DiffResult,
    NightToDiff,
    diff_nights,
    unmatched_ids_of_nights,
    with_findings,
)
from recon_pipeline.reconcile.fees import FeesTaken, fees_for_diff
from recon_pipeline.reconcile.identity import (
    PaymentAliases,
    canonical_ledger,
    name_booked_ids,
    payment_aliases,
)
from recon_pipeline.reconcile.lifecycle import LifecyclePlan
from recon_pipeline.reconcile.matching import (
    PERSON,
    KnownMatch,
    MatchOutcome,
    MatchPolicy,
    NightToMatch,
    match_nights,
    with_groups,
)
from recon_pipeline.reconcile.orphans import find_orphaned_captured_payments
from recon_pipeline.reconcile.posted import fold_posted_adjustments
from recon_pipeline.reconcile.report import NightReport, build_night_report
from recon_pipeline.reconcile.takings import Tendered, by_tender, night_takings
from recon_pipeline.reconcile.unattributed import unattributed_findings
from recon_pipeline.storage.adjustments import WriteCounts, sync_batch_adjustments
from recon_pipeline.storage.findings import save_batch_findings
from recon_pipeline.storage.matches import MatchSaveCounts, known_matches, save_batch_matches
from recon_pipeline.storage.night_outcomes import FAILED, SUCCEEDED, PropertyOutcome, record_outcomes
from recon_pipeline.storage.night_takings import save_batch_takings
from recon_pipeline.storage.provider_records import (
    NightRecords,
    named_record_ids,
    save_batch_provider_records,
)

logger = logging.getLogger(__name__)

DEFAULT_WORKERS = 8
FINDING_COUNTS = ("new", "unchanged", "cleared", "reopened")


@dataclass(frozen=True)
class BatchRequest:
    """What one run reconciles: a night and the properties (all valid ones of the table when empty)."""

    night: str
    property_ids: tuple[str, ...] = ()
    batch_key: str | None = None
    orphan_grace: timedelta = timedelta(minutes=60)
    workers: int = DEFAULT_WORKERS


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


@dataclass
class BatchResult:
    """The batch's outcome per property, and the results of those that succeeded."""

    outcomes: list[PropertyOutcome] = field(default_factory=list)
    results: list[PropertyNightResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # invalid properties rows, when the batch is "all"
    unrunnable: list[str] = field(default_factory=list)  # named properties unknown or with an invalid row
    permanent: list[str] = field(default_factory=list)  # properties the provider refused for good

    @property
    def failed(self) -> list[PropertyOutcome]:
        return [o for o in self.outcomes if not o.succeeded]

    @property
    def retryable(self) -> bool:
        """Whether a retry could succeed where this attempt failed: some property failed on its way
        (provider unavailable, database), not only on its ``properties`` row or on a request the provider
        refused for good (a permanent 4xx), which no retry changes."""
        final = {*self.unrunnable, *self.permanent}
        return any(o.property_id not in final for o in self.failed)

    def total(self, part: str, name: str) -> int:
        """A count summed over the batch: ``part`` is "adjustments" or "findings"."""
        return sum(getattr(result, part)[name] for result in self.results)


def _targets(connection: Connection, request: BatchRequest) -> tuple[list[Target], dict[str, str], list[str]]:
    """The batch's valid properties with their windows and accounts; a one-line error per named property
    that is unknown or invalid; and the invalid rows skipped when the batch is every property."""
    rows = list_properties(connection)
    valid, invalid = split_valid_properties(rows)
    by_id = {row.property_id: row for row in valid}
    errors: dict[str, str] = {}
    skipped: list[str] = []
    if request.property_ids:
        wanted = request.property_ids
        invalid_by_id = {e.property_id: str(e) for e in invalid}
        for property_id in wanted:
            if property_id not in by_id:
                errors[property_id] = invalid_by_id.get(
                    property_id, f"property {property_id!r} is not in the properties table"
                )
    else:
        wanted = tuple(by_id)
        skipped = [str(e) for e in invalid]
    sharing: dict[str | None, tuple[str, ...]] = {}
    for row in rows:
        sharing[row.provider_account] = (*sharing.get(row.provider_account, ()), row.property_id)
    targets = [
        Target(
            row,
            night_window(request.night, row.timezone, row.night_cutoff),
            PropertyAccount(
                row.property_id, row.provider_account, tuple(sorted(sharing[row.provider_account]))
            ),
        )
        for row in (by_id[property_id] for property_id in wanted if property_id in by_id)
    ]
    return targets, errors, skipped


def _read_pms_input(engine: Engine, targets: Sequence[Target], night: str) -> PmsInput:
    """The ledger entries (with the adjacent nights') and captured payment orders of every target's
    window, the holds to look at, the night's posted adjustments and the matches decided before: one
    statement per table, not one per property."""
    windows = {target.row.property_id: target.window for target in targets}
    with engine.connect() as connection:
        return PmsInput(
            read_ledger_rows(connection, windows),
            read_captured_order_rows(connection, windows),
            hold_payments(connection, list(windows), night),
            read_posted_adjustments(connection, list(windows), night),
            known_matches(connection, list(windows), night),
            read_booking_groups(connection, list(windows)),
        )


def _payment_owners(engine: Engine, claimed: pd.DataFrame) -> dict[str, str]:
    """Who ``payment_orders`` says owns the pull's payments that name no property (a shared account's):
    read once for every property the pull serves."""
    unclaimed = unclaimed_payment_ids(claimed)
    if not unclaimed:
        return {}
    with engine.connect() as connection:
        return load_payment_order_owners(connection, unclaimed)


def _pull(
    engine: Engine, client: ProviderClient
) -> Callable[[list[Target]], tuple[pd.DataFrame, dict[str, str]] | BaseException]:
    """One account group's pull and the owners of its payments that name no property; an incomplete pull,
    or its owners unread, is the error of every property it serves."""

    def pull(group: list[Target]) -> tuple[pd.DataFrame, dict[str, str]] | BaseException:
        try:
            claimed = client.pull_claimed(_pull_scope(group), group[0].window.start, group[0].window.end)
            return claimed, _payment_owners(engine, claimed)
        except Exception as error:
            return error

    return pull


def _pull_groups(targets: Sequence[Target]) -> list[list[Target]]:
    """Targets that one pull serves: same provider account and same window (a shared account's window is
    read once); a property alone on its account is its own group."""
    groups: dict[tuple[str | None, datetime, datetime], list[Target]] = {}
    for target in targets:
        key = (target.account.provider_account, target.window.start, target.window.end)
        groups.setdefault(key, []).append(target)
    return list(groups.values())


def _pull_scope(group: Sequence[Target]) -> PropertyAccount:
    """The account scope of one shared pull: the group's first property, serving all of them."""
    first = group[0].account
    return replace(first, pulled_for=tuple(t.row.property_id for t in group) if len(group) > 1 else ())


@dataclass(frozen=True)
class _Prepared:
    """A night's comparison up to the matcher: what the matcher is handed, and the fees set aside."""

    entries: LedgerSplit
    tendered: Tendered
    own: pd.DataFrame
    nobody: pd.DataFrame
    unattributed: int
    aliases: PaymentAliases
    to_match: NightToMatch
    taken: FeesTaken | None
    orders: pd.DataFrame


def compare(nights: Sequence[NightInput]) -> list[Comparison | BaseException]:
    """Every night's ledger entries and captured payment orders as one frame each (split once into what
    the diff takes and the invalid entries' findings), each night's ledger by tender and pull split by
    attribution, then the matcher over all the nights at once (``match_nights``: a batch pays its fixed
    costs once). A bad ledger row becomes a finding; a bad match_policy, or anything else one night's
    input breaks, fails that night alone (with its name)."""
    ledgers = at_once(nights, _ledgers, "ledger frame")
    orders = at_once(nights, _orders, "payment orders frame")
    prepared: list[_Prepared | BaseException] = []
    for night, entries, captured in zip(nights, ledgers, orders, strict=True):
        try:
            prepared.append(_prepare(night, ok(entries), ok(captured)))
        except Exception as error:
            prepared.append(error)
    matchings = beside(prepared, lambda ready: match_nights([p.to_match for p in ready]), "matching")
    unmatched = beside(
        matchings,
        lambda ready: unmatched_ids_of_nights([(m.provider_records, m.ledger) for m in ready]),
        "unmatched ids",
    )
    compared: list[Comparison | BaseException] = []
    for part, matching, loose in zip(prepared, matchings, unmatched, strict=True):
        if isinstance(loose, BaseException):  # the first step's error, kept in its place by the next
            compared.append(loose)
            continue
        done = ok(part)
        compared.append(
            Comparison(
                done.entries,
                done.tendered,
                done.own,
                done.nobody,
                done.unattributed,
                done.aliases,
                ok(matching),
                done.taken,
                done.orders,
                loose,
            )
        )
    return compared


def _ledgers(nights: Sequence[NightInput]) -> list[LedgerSplit]:
    """The nights' ledger rows as one frame, split once into the entries the diff takes and the invalid
    entries' findings, then handed to each night."""
    parts = [(night.pms.ledger[night.target.row.property_id], night.target.window) for night in nights]
    split = split_ledger_records(ledger_frames(parts))
    valid = pieces(split.valid, split.valid[SCOPE].to_numpy(), len(parts))
    invalid = pieces(split.invalid, split.invalid[SCOPE].to_numpy(), len(parts))
    return [LedgerSplit(entries, found) for entries, found in zip(valid, invalid, strict=True)]


def _orders(nights: Sequence[NightInput]) -> list[pd.DataFrame]:
    """The nights' captured payment orders as one frame, handed to each night."""
    parts = [night.pms.captured_orders[night.target.row.property_id] for night in nights]
    scopes = np.repeat(np.arange(len(parts), dtype=np.int64), [len(rows) for rows in parts])
    return pieces(captured_orders_frame([row for rows in parts for row in rows]), scopes, len(parts))


def _prepare(night: NightInput, entries: LedgerSplit, orders: pd.DataFrame) -> _Prepared:
    """The night's ledger by tender and pull by attribution, and what the matcher is to compare."""
    target = night.target
    # Cash, bank transfers, OTA-collected money: the hotel's takings, never the provider's (takings.py).
    tendered = by_tender(entries.valid)
    split = attribute(night.claimed, target.account, night.owners)
    own = split.own
    nobody = split.unattributed if reports_unattributed(target.account) else split.unattributed.iloc[0:0]
    # Ledger ids are mapped to charge ids first (identity.py): an entry booked by PaymentIntent or order id
    # is explained by its charge and not looked up.
    aliases = payment_aliases(own)  # the pull's: the lookups add to it only when they found something
    to_match, taken = _to_match(night, tendered, own, aliases)
    unattributed = len(split.unattributed)
    return _Prepared(entries, tendered, own, nobody, unattributed, aliases, to_match, taken, orders)


def _to_match(
    night: NightInput, tendered: Tendered, own: pd.DataFrame, aliases: PaymentAliases
) -> tuple[NightToMatch, FeesTaken | None]:
    """What the matcher compares, and from it the diff: the ledger keyed by charge, the night's posted
    corrections credited to the entries they correct (so a corrected movement is matched and its finding
    clears), the fees the property does not book per movement set aside; the matcher then pairs what names
    no provider id (reconcile/matching)."""
    row, property_id = night.target.row, night.target.row.property_id
    policy = _match_policy(row)
    ledger = fold_posted_adjustments(
        canonical_ledger(tendered.provider, aliases), night.pms.posted[property_id]
    )
    compared, ledger, taken = fees_for_diff(own, ledger, row.fee_booking_mode)
    grouped = with_groups(compared, night.pms.groups[property_id])
    return NightToMatch(grouped, ledger, policy, night.pms.known[property_id]), taken


def look_up(client: ProviderClient, night: NightInput, compared: Comparison) -> tuple[Comparison, LookedUp]:
    """By id: the records the ledger names that the pull lacks (a timing difference; the comparison
    re-matched when their aliases re-key an entry) and the open holds; and the night's captured payments
    (whose bookings, with the holds', the batch reads at once: ``_booking_states``)."""
    target = night.target
    matching, unmatched = compared.matching, compared.unmatched
    elsewhere = (
        client.fetch_records_by_id(target.account, unmatched) if unmatched else empty_provider_records()
    )
    if len(elsewhere):
        aliases = payment_aliases(compared.own, elsewhere)
        if _renames(compared.tendered.provider, compared.aliases, aliases):
            to_match, taken = _to_match(night, compared.tendered, compared.own, aliases)
            compared = replace(compared, matching=match_nights([to_match])[0], taken=taken)
    captured = captured_payments(compared.own, compared.orders, compared.aliases)
    # A payment the provider names no booking of (a terminal's) is the booking its folio posting names.
    captured = with_ledger_bookings(captured, matching.ledger)
    # Holds (open across nights) are read by id, beside the night's pull: they propose no adjustment.
    booking_of = night.pms.holds[target.row.property_id]
    holds = open_holds(client, target.account, booking_of)
    return compared, LookedUp(elsewhere, len(unmatched), holds, booking_of, captured)


def _booking_states(engine: Engine, found: LookUps) -> dict[str, str]:
    """The bookings every looked-up night's conclusions read, in one statement for the batch (a booking id
    is one booking whichever property asks)."""
    wanted = [
        booking_id
        for part in found
        if not isinstance(part, BaseException)
        for booking_id in part[1].booking_ids()
    ]
    with engine.connect() as connection:
        return load_booking_statuses(connection, wanted)


def _renames(ledger: pd.DataFrame, before: PaymentAliases, after: PaymentAliases) -> bool:
    """Whether the aliases the lookups added key some ledger entry by another charge: only then does the
    matcher, whose input is otherwise the same, see anything new (most lookups find timing differences)."""
    keyed = canonical_ledger(ledger, before)["provider_record_id"]
    return not keyed.equals(canonical_ledger(ledger, after)["provider_record_id"])


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
        matching.provider_records, matching.ledger, looked_up.elsewhere, row.fx_tolerance, row.currency
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
    holds', the orphaned captured payments, the proposals and the night's takings (``states``: the
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
    return Concluded(
        compared,
        looked_up,
        result,
        orphans,
        proposals,
        pd.concat([result.findings, orphans], ignore_index=True),
        tonights,
        counts,
        night_takings(compared.tendered, compared.own),  # per tender, and the cards per brand on both sides
        now,
    )


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
        fees_by_status={
            str(status): int(n)
            for status, n in own.loc[own["kind"] == "fee", "status"].value_counts().items()
        },
        matches_by_rule=concluded.matches_by_rule,
        matches_saved=asdict(matched),
        report=build_night_report(
            concluded.diff, concluded.orphans, compared.taken, concluded.matches_by_rule, concluded.takings
        ),
        adjustments=plan.counts(),
        findings={
            "new": saved.new,
            "unchanged": saved.already_present,
            "cleared": saved.cleared,
            "reopened": saved.reopened,
        },
        proposed=len(concluded.proposals),
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


def _match_policy(row: PropertyRow) -> MatchPolicy:
    """The property's matching policy (``properties.match_policy``, the defaults when NULL); a bad one is
    a ValueError naming the property, which fails that property alone."""
    try:
        return MatchPolicy.parse(row.match_policy)
    except ValueError as error:
        raise ValueError(f"property {row.property_id!r} has an invalid match_policy: {error}") from None


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text}"


def _outcome(
    request: BatchRequest,
    run_id: str,
    property_id: str,
    started: datetime,
    finished: datetime,
    result: PropertyNightResult | str,
) -> PropertyOutcome:
    """The property's ``night_reconciliations`` row: succeeded with its counts, or failed with ``result``,
    its one-line error."""
    if isinstance(result, str):
        return PropertyOutcome(
            property_id, request.night, run_id, request.batch_key, FAILED, started, finished, result
        )
    return PropertyOutcome(
        property_id,
        request.night,
        run_id,
        request.batch_key,
        SUCCEEDED,
        started,
        finished,
        findings=len(result.report.findings),
        adjustments_proposed=result.proposed,
    )


def reconcile_batch(
    engine: Engine,
    client: ProviderClient,
    request: BatchRequest,
    run_id: str,
    progress: Callable[[str], None] = logger.info,
) -> BatchResult:
    """Reconcile the batch, record each property's outcome (``night_reconciliations``), and return them.

    Never raises for one property's failure: the caller decides what a failed property does to the run.

    The PMS input of the whole batch (ledger, captured payment orders) is read once, before the first
    pull, rather than as each property's turn comes (up to a few minutes later): every property of the
    batch is recorded as started at that read, so a late event marked after it, which may be missing from
    what a property reconciled, still makes the stale-night sensor re-run that night. Findings stay true
    as of the read, as they did as of each property's own read."""
    with engine.connect() as connection:
        targets, errors, skipped = _targets(connection, request)
    batch = BatchResult(skipped=skipped, unrunnable=list(errors))
    started = datetime.now(UTC)
    for property_id, error in errors.items():
        batch.outcomes.append(_outcome(request, run_id, property_id, started, started, error))
    pms: PmsInput | BaseException
    try:
        pms = _read_pms_input(engine, targets, request.night)
    except Exception as error:  # the database failed the batch's read: every property fails with it
        pms = error
    run = RunScope(request.night, run_id, request.orphan_grace)
    workers = max(1, request.workers)

    def record(target: Target, outcome: PropertyNightResult | BaseException) -> None:
        property_id = target.row.property_id
        if isinstance(outcome, PropertyNightResult):
            batch.results.append(outcome)
            said: PropertyNightResult | str = outcome
        else:
            said = f"property {property_id} night {request.night}: {_one_line(outcome)}"
            if is_permanent(outcome):
                batch.permanent.append(property_id)
        batch.outcomes.append(_outcome(request, run_id, property_id, started, datetime.now(UTC), said))
        reconciled = len(batch.outcomes) - len(errors)
        progress(f"{reconciled}/{len(targets)} properties of {request.night} reconciled")

    # Pull: once per account group, by a bounded pool (the provider's rate is the deployment's).
    inputs: list[NightInput] = []
    if isinstance(pms, BaseException):
        for target in targets:
            record(target, pms)
    else:
        groups = _pull_groups(targets)
        with ThreadPoolExecutor(max_workers=min(workers, len(groups) or 1)) as pool:
            for group, pulled in zip(groups, pool.map(_pull(engine, client), groups), strict=True):
                for target in group:
                    if isinstance(pulled, BaseException):
                        record(target, pulled)
                    else:
                        inputs.append(NightInput(target, pms, *pulled))
    # Compare every pulled night at once (the matcher over the batch); look up each night's loose ends by a
    # bounded pool (requests), then the bookings at once; conclude (the diff over the batch); write.
    compared = compare(inputs)

    def looked_up(
        night: NightInput, comparison: Comparison | BaseException
    ) -> tuple[Comparison, LookedUp] | BaseException:
        if isinstance(comparison, BaseException):
            return comparison
        try:
            return look_up(client, night, comparison)
        except Exception as error:
            return error

    with ThreadPoolExecutor(max_workers=min(workers, len(inputs) or 1)) as pool:
        found = list(pool.map(looked_up, inputs, compared))
    concluded: list[Concluded | BaseException]
    try:
        states = _booking_states(engine, found)
    except Exception as error:  # the database failed the batch's read: every night fails with it
        concluded = [error] * len(found)
    else:
        concluded = conclude_all(inputs, found, states, run)

    ready = [(n, c) for n, c in zip(inputs, concluded, strict=True) if not isinstance(c, BaseException)]
    written = iter(write(engine, client, ready, run))
    for night, outcome in zip(inputs, concluded, strict=True):
        record(night.target, outcome if isinstance(outcome, BaseException) else next(written))
    with engine.begin() as connection:
        record_outcomes(connection, batch.outcomes)
    return batch
