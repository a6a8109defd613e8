"""Precision measured, not hoped: a night's reconciliation scored on a labelled world of hotel ledgers.

    python -m benchmarks.matching --property-nights 2000 --seed 1 [--batch 250] [--json] [--without-matcher]
        [--turns N]

The world is ``recon_pipeline/simulation/hotel_ledger.py``'s: property-nights whose ledgers are kept the
way Apaleo, OPERA and Mews keep them (most postings without the provider's id, split folios, identical and
look-alike charges, late postings, the three fee bookings, takings the provider never sees, group folios,
refunds posted as negative payments, reversals), each with its ground truth. Each night's ledger is read as
the pipeline reads it (``ledger_frame``: brands and tenders in their vocabularies; the rows the contract
forbids apart, not timed), then reconciled by the pure steps of ``batches/compare.py`` and
``conclude.py``: the takings set aside (``by_tender``), the frames the property's fee booking compares
(``fees_for_diff``), ``match_nights`` over a batch's property-nights at once as a run does (``--batch``,
the pipeline's default batch size; the records' groups from ``bookings.group_id``, ``with_groups``),
then ``diff_night`` per property-night on its
outputs plus its findings; or with ``--without-matcher`` ``diff_night`` alone, as before the matcher.
Scored:

- precision: the share of findings that state a planted discrepancy (its ``(category, record_key)``, or
  an ambiguity or suggestion naming one of its records or entries, unless its money is certain) that no
  other finding has stated;
- recall: the share of planted discrepancies some finding states;
- money proposed for matched movements: the adjustments ``plan_adjustments`` draws from the findings
  that touch a record or entry the ground truth says is matched (or set aside as a reversal, or a fee the
  hotel books per payout or not at all, or another night's entry): count and sum of their magnitudes per
  currency;
- money proposed for non-provider tenders: the adjustments naming an entry of cash, a bank transfer, an
  OTA's collection, a voucher or another tender the provider never sees (count and sum per currency);
- findings by category (and the false ones, by category and by the shape of the rows they name, with the
  first examples of each shape), planted ones missed by label, wall time of the reconciliation alone
  (generation and reading not timed); with ``--turns N``, both reconciliations timed in N turns on the same
  world and the median ratio of their times.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recon_pipeline.batches.plan import DEFAULT_BATCH_SIZE  # noqa: E402
from recon_pipeline.ledger.queries import ledger_frame  # noqa: E402
from recon_pipeline.ledger.validation import split_ledger_records  # noqa: E402
from recon_pipeline.money import format_minor  # noqa: E402
from recon_pipeline.nights import night_window  # noqa: E402
from recon_pipeline.properties import FEE_PER_MOVEMENT  # noqa: E402
from recon_pipeline.reconcile.adjustments import plan_adjustments  # noqa: E402
from recon_pipeline.reconcile.diff import NightToDiff, diff_night, diff_nights, with_findings  # noqa: E402
from recon_pipeline.reconcile.fees import fees_for_diff  # noqa: E402
from recon_pipeline.reconcile.matching import NightToMatch, match_nights, with_groups  # noqa: E402
from recon_pipeline.reconcile.takings import by_tender  # noqa: E402
from recon_pipeline.simulation.hotel_ledger import (  # noqa: E402
    NIGHT_CUTOFF,
    HotelNight,
    HotelWorld,
    Planted,
    build_hotel_world,
)

Reconcile = Callable[[Sequence[tuple[HotelNight, pd.DataFrame]]], list["Reconciled"]]  # a batch's nights
# A finding of the matcher naming records or entries rather than stating one movement's discrepancy.
CANDIDATE_CATEGORIES: Final = frozenset({"ambiguous_match", "suggested_match"})
_WORLD_IDS: Final = re.compile(r"\b(?:ch|re|dp|le)_\d{6}x\d{3}\b")  # the ids hotel_ledger.py makes
_NOW: Final = datetime(2026, 12, 1, tzinfo=UTC)
_EXAMPLES_PER_SHAPE: Final = 2


@dataclass(frozen=True)
class Reconciled:
    """What one night's reconciliation found, and its matches per rule (empty without the matcher)."""

    findings: pd.DataFrame
    matches_by_rule: dict[str, int] = field(default_factory=dict)


def read_ledger(night: HotelNight) -> pd.DataFrame:
    """The night's ledger entries as the pipeline reads them (``ledger/queries.py::ledger_frame``: card
    brands and tenders in their vocabularies, ``in_night`` from the night's window), the valid ones."""
    window = night_window(night.night, "UTC", NIGHT_CUTOFF)
    return split_ledger_records(ledger_frame(night.ledger_records.to_dict("records"), window)).valid


def fees_compared(night: HotelNight, ledger: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The provider records and ledger entries the night compares, as the night's work sees them: the
    takings the provider never sees set aside (``reconcile/takings.py``), then the fees its fee booking
    compares (``reconcile/fees.py``)."""
    tendered = by_tender(ledger)
    provider, compared, _taken = fees_for_diff(night.provider_records, tendered.provider, night.fee_booking)
    return provider, compared


def each(reconcile: Callable[[HotelNight, pd.DataFrame], Reconciled]) -> Reconcile:
    """A reconciliation of one night at a time, as one of a batch."""
    return lambda batch: [reconcile(night, ledger) for night, ledger in batch]


def _diff_alone(night: HotelNight, ledger: pd.DataFrame) -> Reconciled:
    provider, compared = fees_compared(night, ledger)
    result = diff_night(provider, compared, night.provider_elsewhere, property_currency=night.currency)
    return Reconciled(result.findings)


diff_alone = each(_diff_alone)
diff_alone.__doc__ = """The reconciliation before the matcher: the diff on (id, kind), nothing before it but
the takings and fees set aside."""


def matcher_then_diff(batch: Sequence[tuple[HotelNight, pd.DataFrame]]) -> list[Reconciled]:
    """The matcher over the batch's nights at once (the records' bookings with their groups,
    ``bookings.group_id``), then the diff over them at once on what it hands on, plus the matcher's own
    findings per night: as a run's batch does."""
    return matched_and_diffed(prepared(batch))


def prepared(batch: Sequence[tuple[HotelNight, pd.DataFrame]]) -> list[tuple[HotelNight, NightToMatch]]:
    """Each night's frames as the matcher takes them: takings and fees set aside, records with groups."""
    return [
        (night, NightToMatch(with_groups(provider, night.booking_groups), compared))
        for night, (provider, compared) in ((night, fees_compared(night, ledger)) for night, ledger in batch)
    ]


def matched_and_diffed(nights: Sequence[tuple[HotelNight, NightToMatch]]) -> list[Reconciled]:
    """The matcher, then the diff, each over every night at once."""
    outcomes = match_nights([to_match for _, to_match in nights])
    diffs = diff_nights(
        [
            NightToDiff(
                outcome.provider_records,
                outcome.ledger,
                night.provider_elsewhere,
                property_currency=night.currency,
                cuts=outcome.cuts,
            )
            for (night, _), outcome in zip(nights, outcomes, strict=True)
        ]
    )
    return [
        Reconciled(with_findings(result, outcome.findings).findings, dict(outcome.counts_by_rule))
        for outcome, result in zip(outcomes, diffs, strict=True)
    ]


def as_one_night(batch: Sequence[tuple[HotelNight, pd.DataFrame]]) -> list[tuple[HotelNight, pd.DataFrame]]:
    """The batch's rows as one night: every night's compared frames (takings and fees set aside as its
    property books them) under one another, its records found elsewhere and its groups together (the
    world's ids are unique across nights, so nothing pairs that would not pair apart)."""
    first = batch[0][0]
    compared = [fees_compared(night, ledger) for night, ledger in batch]
    groups: dict[str, str] = {}
    for night, _ in batch:
        groups.update(night.booking_groups)
    provider = pd.concat([frame for frame, _ in compared], ignore_index=True)
    ledger = pd.concat([frame for _, frame in compared], ignore_index=True)
    elsewhere = pd.concat([night.provider_elsewhere for night, _ in batch], ignore_index=True)
    one = replace(
        first,
        provider_records=provider,
        provider_elsewhere=elsewhere,
        booking_groups=groups,
        fee_booking=FEE_PER_MOVEMENT,  # the frames are compared already: nothing more is set aside
    )
    return [(one, ledger)]


def time_against_one_night(world: HotelWorld, turns: int, batch: int = DEFAULT_BATCH_SIZE) -> dict[str, Any]:
    """The matcher and the diff over the world's first batch of ``batch`` property-nights at once, against
    the same rows as one night, in turns (the first arm alternating): each arm's seconds per turn and the
    median ratio (the batch over the one night), for the matcher and the diff alone (each night's frames
    prepared before) and with the nights' preparation (takings and fees set aside, groups) timed too."""
    nights = batches(world, batch)[0]
    arms = {"batch": nights, "one_night": as_one_night(nights)}
    ready = {name: prepared(arm) for name, arm in arms.items()}
    seconds: dict[str, list[float]] = {name: [] for name in (*arms, *(f"{name}_prepared" for name in arms))}
    for turn in range(turns):
        for name in sorted(arms, reverse=turn % 2 == 1):
            started = time.perf_counter()
            matched_and_diffed(ready[name])
            seconds[name].append(round(time.perf_counter() - started, 4))
            started = time.perf_counter()
            matcher_then_diff(arms[name])
            seconds[f"{name}_prepared"].append(round(time.perf_counter() - started, 4))

    def ratio(batch_arm: str, one_arm: str) -> float:
        pairs = zip(seconds[batch_arm], seconds[one_arm], strict=True)
        return round(statistics.median(apart / together for apart, together in pairs), 3)

    return {
        "property_nights": len(nights),
        "rows": sum(len(night.provider_records) + len(ledger) for night, ledger in nights),
        "turn_seconds": seconds,
        "ratio": ratio("batch", "one_night"),
        "ratio_prepared": ratio("batch_prepared", "one_night_prepared"),
    }


@dataclass
class Score:
    """The figures of one reconciliation over a world."""

    findings: int = 0
    real_findings: int = 0
    planted: int = 0
    found: int = 0
    proposals: int = 0
    proposals_for_matched: int = 0
    matched_money_by_currency: Counter[str] = field(default_factory=Counter)
    proposals_for_non_provider: int = 0
    non_provider_money_by_currency: Counter[str] = field(default_factory=Counter)
    by_category: Counter[str] = field(default_factory=Counter)
    false_by_category: Counter[str] = field(default_factory=Counter)
    false_by_shape: Counter[str] = field(default_factory=Counter)
    missed_by_label: Counter[str] = field(default_factory=Counter)
    matches_by_rule: Counter[str] = field(default_factory=Counter)
    false_examples: list[str] = field(default_factory=list)  # the first few false findings of each shape
    missed_examples: list[str] = field(default_factory=list)  # the first few missed plants of each label
    seconds: float = 0.0

    @property
    def precision(self) -> float:
        return self.real_findings / self.findings if self.findings else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.planted if self.planted else 1.0

    def add_night(self, night: HotelNight, reconciled: Reconciled) -> None:
        """Each finding claims the planted discrepancies it states that no finding has claimed yet, those
        stating one movement first: a finding is real when it claims one, so a second finding of the same
        discrepancy (both of two identical charges reported missing, when one is posted) is not."""
        findings = reconciled.findings
        rows = findings.to_dict("records")
        rows.sort(key=lambda finding: finding["category"] in CANDIDATE_CATEGORIES)
        shapes = night.shapes()
        hit: set[int] = set()
        for finding in rows:
            claimed = _planted_stated(finding, night.planted) - hit
            self.findings += 1
            self.by_category[finding["category"]] += 1
            if claimed:
                self.real_findings += 1
                hit |= claimed
            else:
                shape = _shape_of(finding, shapes)
                self.false_by_category[finding["category"]] += 1
                self.false_by_shape[shape] += 1
                if self.false_by_shape[shape] <= _EXAMPLES_PER_SHAPE:
                    self.false_examples.append(
                        f"[{shape}] {night.property_id} {night.night} ({night.pms}) {finding['category']} "
                        f"{finding['record_key']}: {finding['detail']}"
                    )
        self.planted += len(night.planted)
        self.found += len(hit)
        for index, plant in enumerate(night.planted):
            if index not in hit:
                self.missed_by_label[plant.label] += 1
                if self.missed_by_label[plant.label] <= _EXAMPLES_PER_SHAPE:
                    self.missed_examples.append(
                        f"[{plant.label}] {night.property_id} {night.night} ({night.pms}) "
                        f"{plant.category} {plant.key} (or {sorted(plant.accepted)})"
                    )
        self.matches_by_rule.update(reconciled.matches_by_rule)
        self._add_proposals(night, findings)

    def _add_proposals(self, night: HotelNight, findings: pd.DataFrame) -> None:
        matched_records, matched_entries, takings = (
            night.matched_records,
            night.matched_entries,
            night.takings,
        )
        kind_of = dict(
            zip(zip(findings["category"], findings["record_key"], strict=True), findings["kind"], strict=True)
        )
        for proposal in plan_adjustments(night.property_id, night.night.isoformat(), findings, None, _NOW):
            self.proposals += 1
            kind = kind_of[(proposal["category"], proposal["record_key"])]
            record = f"{proposal['provider_record_id']}:{kind}"
            money = abs(int(proposal["amount_minor"]))
            if record in matched_records or proposal["ledger_entry_id"] in matched_entries:
                self.proposals_for_matched += 1
                self.matched_money_by_currency[proposal["currency"]] += money
            if proposal["ledger_entry_id"] in takings:
                self.proposals_for_non_provider += 1
                self.non_provider_money_by_currency[proposal["currency"]] += money

    def figures(self) -> dict[str, Any]:
        return {
            "findings": self.findings,
            "real_findings": self.real_findings,
            "precision": round(self.precision, 5),
            "planted": self.planted,
            "found": self.found,
            "recall": round(self.recall, 5),
            "proposals": self.proposals,
            "proposals_for_matched": self.proposals_for_matched,
            "matched_money_by_currency": dict(sorted(self.matched_money_by_currency.items())),
            "proposals_for_non_provider": self.proposals_for_non_provider,
            "non_provider_money_by_currency": dict(sorted(self.non_provider_money_by_currency.items())),
            "by_category": dict(sorted(self.by_category.items())),
            "false_by_category": dict(sorted(self.false_by_category.items())),
            "false_by_shape": dict(sorted(self.false_by_shape.items())),
            "missed_by_label": dict(sorted(self.missed_by_label.items())),
            "matches_by_rule": dict(sorted(self.matches_by_rule.items())),
            "false_examples": self.false_examples,
            "missed_examples": self.missed_examples,
            "seconds": round(self.seconds, 3),
        }


def _planted_stated(finding: dict[str, Any], planted: tuple[Planted, ...]) -> set[int]:
    """Which planted discrepancies (indexes) a finding states: its own (category, record_key), or, for an
    ambiguity or a suggestion, any not ``certain`` whose records of the finding's kind (a fee row shares
    its charge's id) or whose entries it names."""
    key = (finding["category"], finding["record_key"])
    stated = {index for index, plant in enumerate(planted) if key in plant.accepted}
    if stated or finding["category"] not in CANDIDATE_CATEGORIES:
        return stated
    named = _named_ids(finding)
    kind = finding.get("kind")
    kinds = {str(kind)} if isinstance(kind, str) else {"payment", "refund", "fee", "dispute"}
    named_records = {f"{record_id}:{k}" for record_id in named for k in kinds}
    return {
        index
        for index, plant in enumerate(planted)
        if not plant.certain and (named_records & set(plant.records) or named & set(plant.entries))
    }


def _named_ids(finding: dict[str, Any]) -> set[str]:
    text = " ".join(
        str(finding.get(c)) for c in ("record_key", "provider_record_id", "ledger_entry_id", "detail")
    )
    return set(_WORLD_IDS.findall(text))


def _shape_of(finding: dict[str, Any], shapes: dict[str, str]) -> str:
    """The shape of the rows a finding names (its entry's first, then its record's, then any id its text
    names): where a false finding comes from."""
    entry = finding.get("ledger_entry_id")
    record = f"{finding.get('provider_record_id')}:{finding.get('kind')}"
    for name in (entry, record, finding.get("record_key"), *sorted(_named_ids(finding))):
        if isinstance(name, str) and name in shapes:
            return shapes[name]
    return "unknown"


def batches(world: HotelWorld, size: int) -> list[list[tuple[HotelNight, pd.DataFrame]]]:
    """The world's nights with their ledgers read as the pipeline reads them, ``size`` to a batch."""
    nights = [(night, read_ledger(night)) for night in world.nights]
    return [nights[start : start + size] for start in range(0, len(nights), size)]


def score(world: HotelWorld, reconcile: Reconcile, batch: int = DEFAULT_BATCH_SIZE) -> Score:
    """Run ``reconcile`` on every batch of the world's nights (the ledgers read before, not timed), and
    score what it finds against the ground truth."""
    result = Score()
    for nights in batches(world, batch):
        started = time.perf_counter()
        reconciled = reconcile(nights)
        result.seconds += time.perf_counter() - started
        for (night, _), found in zip(nights, reconciled, strict=True):
            result.add_night(night, found)
    return result


def time_in_turns(world: HotelWorld, turns: int, batch: int = DEFAULT_BATCH_SIZE) -> dict[str, Any]:
    """The diff alone and the matcher with the diff over the whole world (ledgers read once, not timed),
    run in turns, the first arm alternating: each arm's seconds per turn and the median of the turns'
    ratios (matcher + diff over diff alone), which a shared host's load disturbs less than two runs apart."""
    nights = batches(world, batch)
    arms: dict[str, Reconcile] = {"diff_alone": diff_alone, "matcher_then_diff": matcher_then_diff}
    seconds: dict[str, list[float]] = {name: [] for name in arms}
    for turn in range(turns):
        for name in sorted(arms, reverse=turn % 2 == 1):
            started = time.perf_counter()
            for each_batch in nights:
                arms[name](each_batch)
            seconds[name].append(round(time.perf_counter() - started, 3))
    ratios = [
        both / alone for both, alone in zip(seconds["matcher_then_diff"], seconds["diff_alone"], strict=True)
    ]
    return {"turn_seconds": seconds, "ratio": round(statistics.median(ratios), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--property-nights", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--batch", type=int, default=DEFAULT_BATCH_SIZE, help="property-nights a batch matches at once"
    )
    parser.add_argument("--without-matcher", action="store_true", help="score diff_night alone (today's)")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    parser.add_argument(
        "--turns", type=int, default=0, help="also time both reconciliations in N turns (their ratio)"
    )
    parser.add_argument(
        "--against-one-night",
        type=int,
        default=0,
        metavar="N",
        help="also time the matcher and diff over one batch against its rows as one night, N turns",
    )
    args = parser.parse_args(argv)
    if args.property_nights < 1 or args.batch < 1 or args.turns < 0:
        parser.error("--property-nights and --batch must be positive and --turns not negative")
    use_matcher = not args.without_matcher

    started = time.perf_counter()
    world = build_hotel_world(args.property_nights, args.seed)
    generation = time.perf_counter() - started
    scored = score(world, matcher_then_diff if use_matcher else diff_alone, args.batch)
    records, entries = world.rows()
    shaped = world.pms_shape_entries()
    fee_bookings = Counter(night.fee_booking for night in world.nights)
    styles = Counter(f"{night.pms} {night.currency}" for night in world.nights)
    figures = {
        "property_nights": args.property_nights,
        "seed": args.seed,
        "batch": args.batch,
        "matcher": use_matcher,
        "provider_records": records,
        "ledger_entries": entries,
        "pms_shape_entries": shaped,
        "pms_shape_share": round(shaped / entries, 4) if entries else 0.0,
        "pms_currencies": dict(sorted(styles.items())),
        "fee_bookings": dict(sorted(fee_bookings.items())),
        "planted_by_label": world.planted_by_label(),
        "generation_seconds": round(generation, 3),
        **scored.figures(),
    }
    if args.turns:
        figures["in_turns"] = time_in_turns(world, args.turns, args.batch)
    if args.against_one_night:
        figures["against_one_night"] = time_against_one_night(world, args.against_one_night, args.batch)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
        return 0
    under = f"match_nights ({args.batch} a batch) + diff_night" if use_matcher else "diff_night alone"
    print(
        f"world              {args.property_nights:,} property-nights (seed {args.seed}): "
        f"{records:,} provider records, {entries:,} ledger entries; fee bookings {figures['fee_bookings']}"
    )
    print(f"PMS shapes         {shaped:,} of {entries:,} entries ({figures['pms_shape_share']:.1%})")
    print(f"PMS, currency      {figures['pms_currencies']} (property-nights)")
    print(f"reconciliation     {under}, {scored.seconds:.2f} s ({generation:.2f} s to generate, not timed)")
    print(
        f"precision          {scored.precision:.2%} "
        f"({scored.real_findings:,} of {scored.findings:,} findings real)"
    )
    print(f"recall             {scored.recall:.2%} ({scored.found:,} of {scored.planted:,} planted found)")
    money = ", ".join(
        format_minor(amount, currency)
        for currency, amount in sorted(scored.matched_money_by_currency.items())
    )
    print(
        f"matched money      {scored.proposals_for_matched:,} of {scored.proposals:,} proposals "
        f"({money or 'none'})"
    )
    takings = ", ".join(
        format_minor(amount, currency)
        for currency, amount in sorted(scored.non_provider_money_by_currency.items())
    )
    print(
        f"non-provider       {scored.proposals_for_non_provider:,} of {scored.proposals:,} proposals "
        f"({takings or 'none'})"
    )
    print(f"by category        {figures['by_category']}")
    print(f"false by category  {figures['false_by_category']}")
    print(f"false by shape     {figures['false_by_shape']}")
    print(f"missed by label    {figures['missed_by_label']} of {figures['planted_by_label']}")
    if use_matcher:
        print(f"matches by rule    {figures['matches_by_rule']}")
    for example in scored.false_examples if use_matcher else ():
        print(f"false finding      {example}")
    for example in scored.missed_examples:
        print(f"missed             {example}")
    if args.turns:
        turns = figures["in_turns"]
        print(
            f"in turns           diff alone {turns['turn_seconds']['diff_alone']} s, matcher + diff "
            f"{turns['turn_seconds']['matcher_then_diff']} s: median ratio {turns['ratio']}x"
        )
    if args.against_one_night:
        one = figures["against_one_night"]
        print(
            f"batch vs one night {one['property_nights']} property-nights ({one['rows']:,} rows): matcher + "
            f"diff {one['turn_seconds']['batch']} s against {one['turn_seconds']['one_night']} s, median "
            f"ratio {one['ratio']}x; with the nights' preparation {one['ratio_prepared']}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
