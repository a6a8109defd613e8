"""The night's report: what an analyst reads first, as frames, markdown, plain text and flat metadata.

Plain values only (no Dagster here): the asset wraps ``as_metadata()`` and the markdown into its own
metadata types. The category summary always lists every category in the contract's order, so a
night's report has the same shape whatever it found; a category without findings is one row with
count 0, amount 0 and an empty currency.

Amounts shown to people are in major units with their currency (``format_minor``); counts stay ints. Each
side of a finding is shown in its own currency: a currency mismatch has no difference in any currency,
so it shows none (never "0.00 EUR").

A property whose PMS does not book the provider's fees per movement (``fee_booking`` per_payout or none,
``reconcile/fees.py``) has the fees the provider took in its report (``fees_taken``); one booking them per
movement has none, and its report reads exactly as it always did.

The night's takings (``takings.py``) are in every report of a night with any: per tender (count and sum
per currency) and the cards per brand on both sides, the PMS's against the provider's, with the
difference a night auditor works out by hand. A night without takings reads as it always did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from recon_pipeline.categories import ALL_CATEGORIES, CURRENCY_MISMATCH, empty_findings
from recon_pipeline.money import format_minor
from recon_pipeline.reconcile.diff import DiffResult
from recon_pipeline.reconcile.fees import FeesTaken
from recon_pipeline.reconcile.matching.policy import EXACT_ID
from recon_pipeline.reconcile.matching.words import matches_sentence
from recon_pipeline.reconcile.takings import BrandTotals, NightTakings, Takings
from recon_pipeline.words import brand_label, tender_label

SUMMARY_COLUMNS = ("category", "currency", "count", "amount_minor")
# The night's takings as every report shows them (``tender_cells``, ``brand_cells``).
TENDER_HEADER = ("tender", "currency", "entries", "amount")
BRAND_HEADER = (
    *("brand", "currency", "PMS entries", "PMS amount", "provider records", "provider amount"),
    "provider − PMS",
)
_NONE = "—"


@dataclass(frozen=True)
class CurrencyTotals:
    """What the provider and the ledger hold in one currency for the night, and how much of it matched."""

    currency: str
    provider: int
    ledger: int
    matched: int


@dataclass(frozen=True)
class NightReport:
    """All findings of a property-night (diff and orphans) and the diff's reference figures."""

    findings: pd.DataFrame
    matched_count: int
    timing_difference_count: int
    matched_amount_by_currency: dict[str, int] = field(default_factory=dict)
    provider_total_by_currency: dict[str, int] = field(default_factory=dict)
    ledger_total_by_currency: dict[str, int] = field(default_factory=dict)
    # the fees the provider took, where the ledger does not book them per movement (None: it does)
    fees_taken: FeesTaken | None = None
    # provider records matched per rule (reconcile/matching; "exact_id": by the provider's id)
    matches_by_rule: dict[str, int] = field(default_factory=dict)
    # the night's takings per tender and its cards per brand on both sides (reconcile/takings.py)
    takings: NightTakings = field(default_factory=NightTakings)

    def category_summary(self) -> pd.DataFrame:
        """One row per (category, currency): findings and the sum of |difference| in minor units."""
        return category_summary(self.findings)

    def top_findings(self, limit: int = 10) -> pd.DataFrame:
        """The ``limit`` findings of largest |difference| (see :func:`top_findings`)."""
        return top_findings(self.findings, limit)

    def totals(self) -> list[CurrencyTotals]:
        """Provider, ledger and matched totals per currency, sorted by currency."""
        provider, ledger, matched = (
            self.provider_total_by_currency,
            self.ledger_total_by_currency,
            self.matched_amount_by_currency,
        )
        return [
            CurrencyTotals(
                currency, provider.get(currency, 0), ledger.get(currency, 0), matched.get(currency, 0)
            )
            for currency in sorted(set(provider) | set(ledger) | set(matched))
        ]

    def totals_markdown(self) -> str:
        """Per currency what each side holds and what matched; below it the night's record counts."""
        rows = [
            [
                t.currency,
                format_minor(t.provider, t.currency),
                format_minor(t.ledger, t.currency),
                format_minor(t.provider - t.ledger, t.currency),
                format_minor(t.matched, t.currency),
            ]
            for t in self.totals()
        ]
        header = ["currency", "provider total", "ledger total", "provider − ledger", "matched amount"]
        table = markdown_table(header, rows) if rows else "_No provider records or ledger entries._"
        text = (
            f"{table}\n\n**{self.matched_count}** records matched, "
            f"**{self.timing_difference_count}** timing differences, **{len(self.findings)}** findings."
        )
        if self.fees_taken is not None:
            text += f"\n\n{self.fees_taken.as_text()}."
        if self._matched_beyond_ids():
            text += f"\n\n{matches_sentence(self.matches_by_rule)}."
        return text

    def takings_markdown(self) -> str:
        """The night's takings per tender, then its cards per brand: the PMS's, the provider's and the
        difference (provider − PMS), each amount in major units of its currency."""
        tenders = [tender_cells(t) for t in self.takings.tenders()]
        if not tenders:
            return "_No takings in the ledger._"
        brands = [brand_cells(b) for b in self.takings.brands()]
        return (
            "**Takings by tender**\n\n"
            + markdown_table(TENDER_HEADER, tenders)
            + "\n\n**Cards by brand**\n\n"
            + (markdown_table(BRAND_HEADER, brands) if brands else "_No card takings on either side._")
        )

    def _matched_beyond_ids(self) -> bool:
        """Whether a record was matched otherwise than by its id (a keyed night's report reads as before)."""
        return any(n for rule, n in self.matches_by_rule.items() if rule != EXACT_ID)

    def top_findings_markdown(self, limit: int = 10) -> str:
        """A markdown table of the largest findings, amounts in major units of their currency."""
        rows = [
            [category, f"`{key}`", provider, ledger, difference, detail]
            for category, key, provider, ledger, difference, detail in self._top_rows(limit, _NONE)
        ]
        if not rows:
            return "_No discrepancies._"
        return markdown_table(["category", "record", "provider", "ledger", "difference", "detail"], rows)

    def summary_markdown(self) -> str:
        """A markdown table of :meth:`category_summary`."""
        rows = [
            [category, currency or _NONE, str(count), summed_difference(category, amount, currency)]
            for category, currency, count, amount in self.category_summary().itertuples(index=False)
        ]
        return markdown_table(["category", "currency", "findings", "sum of abs. difference"], rows)

    def as_metadata(self) -> dict[str, int | float | str]:
        """Flat plain values: counts as ints; ``amount/<category>/<CUR>`` (none for a currency mismatch),
        matched and totals per currency as text in major units ("1,234.50 EUR"); the takings per tender
        (``takings/<tender>/<CUR>``) and each card brand's difference, provider less PMS
        (``card_difference/<brand>/<CUR>``), the same way."""
        summary = self.category_summary()
        metadata: dict[str, int | float | str] = {
            "findings": len(self.findings),
            "matched": self.matched_count,
            "timing_differences": self.timing_difference_count,
        }
        for category in ALL_CATEGORIES:
            metadata[f"count/{category}"] = int(summary.loc[summary["category"] == category, "count"].sum())
        for category, currency, count, amount in summary.itertuples(index=False):
            if count and category != CURRENCY_MISMATCH:
                metadata[f"amount/{category}/{currency}"] = format_minor(amount, currency)
        for name, totals in (
            ("matched_amount", self.matched_amount_by_currency),
            ("provider_total", self.provider_total_by_currency),
            ("ledger_total", self.ledger_total_by_currency),
        ):
            metadata.update(
                {
                    f"{name}/{currency}": format_minor(total, currency)
                    for currency, total in sorted(totals.items())
                }
            )
        metadata.update({f"matches/{rule}": n for rule, n in self.matches_by_rule.items()})
        metadata.update(
            {
                f"takings/{t.name}/{t.currency}": format_minor(t.amount_minor, t.currency)
                for t in self.takings.tenders()
            }
        )
        metadata.update(
            {
                f"card_difference/{b.brand}/{b.currency}": format_minor(b.difference_minor, b.currency)
                for b in self.takings.brands()
            }
        )
        if self.fees_taken is not None:
            taken = self.fees_taken
            metadata["fees_taken"] = taken.count
            metadata.update(
                {
                    f"fees_taken/{currency}": format_minor(amount, currency)
                    for currency, amount in sorted(taken.amount_by_currency.items())
                }
            )
        return metadata

    def as_text(self, limit: int = 10) -> str:
        """A plain-text report for a terminal: figures, the category summary, the largest findings."""
        lines = [
            f"findings {len(self.findings)}   matched {self.matched_count}   "
            f"timing differences {self.timing_difference_count}",
        ]
        lines += [
            f"  {t.currency}: provider {format_minor(t.provider, t.currency)}, "
            f"ledger {format_minor(t.ledger, t.currency)}"
            for t in self.totals()
        ]
        if self.fees_taken is not None:
            lines.append(f"  {self.fees_taken.as_text()}")
        if self._matched_beyond_ids():
            lines.append(f"  {matches_sentence(self.matches_by_rule)}")
        lines += self._takings_lines()
        summary = [
            [category, currency or "-", str(count), summed_difference(category, amount, currency, "-")]
            for category, currency, count, amount in self.category_summary().itertuples(index=False)
        ]
        lines += ["", plain_table(["category", "currency", "findings", "sum of abs. difference"], summary)]
        top = [
            [category, key, difference, detail]
            for category, key, _, _, difference, detail in self._top_rows(limit, "-")
        ]
        if top:
            lines += [
                "",
                f"largest {len(top)} findings",
                plain_table(["category", "record", "difference", "detail"], top),
            ]
        return "\n".join(lines)

    def _takings_lines(self) -> list[str]:
        """The takings per tender and the cards per brand as plain tables; none for a night without."""
        tenders = [tender_cells(t) for t in self.takings.tenders()]
        if not tenders:
            return []
        lines = ["", "takings by tender", plain_table(TENDER_HEADER, tenders)]
        brands = [brand_cells(b) for b in self.takings.brands()]
        if brands:
            lines += ["", "cards by brand", plain_table(BRAND_HEADER, brands)]
        return lines

    def _top_rows(self, limit: int, missing: str) -> list[tuple[str, str, str, str, str, str]]:
        """(category, record_key, provider, ledger, difference, detail) of the largest findings, formatted."""
        return [
            (
                finding["category"],
                finding["record_key"],
                *finding_amounts(finding, missing),
                finding["detail"],
            )
            for finding in self.top_findings(limit).to_dict("records")
        ]


def build_night_report(
    result: DiffResult,
    orphans: pd.DataFrame,
    fees_taken: FeesTaken | None = None,
    matches_by_rule: Mapping[str, int] | None = None,
    takings: NightTakings | None = None,
) -> NightReport:
    """The report over the diff's findings and the orphaned captured payments, with the fees the provider
    took when the ledger does not book them per movement (``fees_for_diff``'s third value), the
    records matched per rule (``MatchOutcome.counts_by_rule``) and the night's takings
    (``takings.night_takings``)."""
    parts = [frame for frame in (result.findings, orphans) if len(frame)]
    findings = pd.concat(parts, ignore_index=True) if parts else empty_findings()
    return NightReport(
        findings=findings,
        matched_count=result.matched_count,
        timing_difference_count=result.timing_difference_count,
        matched_amount_by_currency=dict(result.matched_amount_by_currency),
        provider_total_by_currency=dict(result.provider_total_by_currency),
        ledger_total_by_currency=dict(result.ledger_total_by_currency),
        fees_taken=fees_taken,
        matches_by_rule=dict(matches_by_rule or {}),
        takings=takings or NightTakings(),
    )


def category_summary(findings: pd.DataFrame) -> pd.DataFrame:
    """One row per (category, currency) of ``findings``: their count and the exact sum of |difference|
    (``amount_minor`` holds Python integers).

    Every category appears, in the contract's order; one without findings is one row with count 0,
    amount 0 and an empty currency.
    """
    findings = findings.assign(magnitude=exact_magnitudes(findings["difference_minor"]))
    grouped = findings.groupby(["category", "currency"], sort=True).agg(
        count=("record_key", "size"), amount_minor=("magnitude", "sum")
    )
    rows: list[tuple[str, str, int, int]] = []
    for category in ALL_CATEGORIES:
        if category in grouped.index.get_level_values("category"):
            part = grouped.loc[category]
            rows.extend(
                (category, str(currency), int(count), int(amount))
                for currency, count, amount in zip(
                    part.index, part["count"], part["amount_minor"], strict=True
                )
            )
        else:
            rows.append((category, "", 0, 0))
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)).astype(
        {"category": "object", "currency": "object", "count": "int64", "amount_minor": "object"}
    )


def exact_magnitudes(differences: pd.Series) -> pd.Series:
    """|difference| of each finding as Python integers (object dtype), so that sums of them never wrap
    as int64 sums do past 9.2 * 10^18."""
    return pd.Series([abs(int(d)) for d in differences.tolist()], index=differences.index, dtype=object)


def top_findings(findings: pd.DataFrame, limit: int) -> pd.DataFrame:
    """The ``limit`` findings of largest |difference| (ties: category, then record_key); a currency
    mismatch ranks by its provider amount, the money in question, not by its difference of 0."""
    mismatch = findings["category"] == CURRENCY_MISMATCH
    at_stake = findings["provider_amount_minor"].where(mismatch, findings["difference_minor"])
    ranked = findings.assign(magnitude=at_stake.fillna(0).astype("int64").abs())
    ranked = ranked.sort_values(
        ["magnitude", "category", "record_key"], ascending=[False, True, True], kind="stable"
    )
    return ranked.head(limit).drop(columns="magnitude").reset_index(drop=True)


def tender_cells(takings: Takings) -> list[str]:
    """A tender's row (``TENDER_HEADER``): the tender in words, its currency, entries and sum."""
    currency = takings.currency
    return [
        tender_label(takings.name),
        currency,
        str(takings.movements),
        format_minor(takings.amount_minor, currency),
    ]


def brand_cells(totals: BrandTotals) -> list[str]:
    """A card brand's row (``BRAND_HEADER``): in words, both sides' counts and sums, the difference."""
    currency = totals.currency
    return [
        brand_label(totals.brand),
        currency,
        str(totals.ledger_movements),
        format_minor(totals.ledger_minor, currency),
        str(totals.provider_movements),
        format_minor(totals.provider_minor, currency),
        format_minor(totals.difference_minor, currency),
    ]


def format_amount(amount: Any, currency: Any, missing: str = _NONE) -> str:
    """:func:`format_minor` of a nullable amount; ``missing`` for a side that holds no record."""
    if amount is None or pd.isna(amount):
        return missing
    return format_minor(int(amount), str(currency))


def finding_amounts(finding: Mapping[str, Any], missing: str = _NONE) -> tuple[str, str, str]:
    """The provider, ledger and difference cells of a finding (a row of a finding frame or table),
    each side in its own currency.

    The ledger side is in ``ledger_currency`` when the finding has one; when it differs from the
    provider's there is no difference in either currency to show, so the cell names both instead."""
    theirs, ours = str(finding["currency"]), finding.get("ledger_currency")
    ours = theirs if ours is None or pd.isna(ours) else str(ours)
    difference = finding["difference_minor"]
    return (
        format_amount(finding["provider_amount_minor"], theirs, missing),
        format_amount(finding["ledger_amount_minor"], ours, missing),
        format_amount(difference, theirs, missing) if ours == theirs else f"{theirs} ≠ {ours}",
    )


def summed_difference(category: str, amount: int, currency: str, missing: str = _NONE) -> str:
    """A summary row's sum of |difference|; none for a category without findings or across currencies."""
    return missing if not currency or category == CURRENCY_MISMATCH else format_minor(amount, currency)


def markdown_table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured markdown table (Dagster's UI renders it); ``|`` in cells is escaped."""

    def line(cells: Sequence[object]) -> str:
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(row) for row in rows)])


def plain_table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> str:
    """A fixed-width text table for terminals (the demo's report, ``recon findings list``)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[object]) -> str:
        return "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(header), line(["-" * width for width in widths]), *(line(row) for row in rows)])


def combined_report(reports: Sequence[NightReport]) -> NightReport:
    """One report over several property-nights (a batch): findings stacked, figures summed by currency."""

    def summed(totals: Iterable[dict[str, int]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for by_currency in totals:
            for currency, amount in by_currency.items():
                out[currency] = out.get(currency, 0) + amount
        return out

    parts = [r.findings for r in reports if len(r.findings)]
    taken = [r.fees_taken for r in reports if r.fees_taken is not None]
    return NightReport(
        findings=pd.concat(parts, ignore_index=True) if parts else empty_findings(),
        matched_count=sum(r.matched_count for r in reports),
        timing_difference_count=sum(r.timing_difference_count for r in reports),
        matched_amount_by_currency=summed(r.matched_amount_by_currency for r in reports),
        provider_total_by_currency=summed(r.provider_total_by_currency for r in reports),
        ledger_total_by_currency=summed(r.ledger_total_by_currency for r in reports),
        fees_taken=FeesTaken.combined(taken) if taken else None,
        matches_by_rule=summed(r.matches_by_rule for r in reports),
        takings=NightTakings.combined(r.takings for r in reports),
    )
