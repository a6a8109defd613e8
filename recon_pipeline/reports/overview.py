"""Cross-night views: unresolved findings by age, property and category; orphaned payments by age.

Pure frames in, frames and markdown out; ``open_overview`` and ``orphans_overview`` read their frames
from the database, for the ``reports`` assets (markdown in the UI) and ``recon report overview`` (CSV)
alike. The age of a finding is the days from its night to ``as_of``
(the day the overview is built, UTC): what a finance team asks is "how long has this been open".
Amounts are never summed across currencies: every figure is per currency, in its minor unit.
"""

from __future__ import annotations

from datetime import date, datetime

import pandas as pd
from sqlalchemy import Connection

from recon_pipeline.categories import ALL_CATEGORIES
from recon_pipeline.money import format_minor
from recon_pipeline.reconcile.report import format_amount, markdown_table, summed_difference
from recon_pipeline.reports.queries import unresolved_findings, unresolved_orphaned_payments

# (oldest age in days the bucket holds, label); older than the last is OLDEST_BUCKET.
AGE_BUCKETS = ((1, "0-1 days"), (7, "2-7 days"), (30, "8-30 days"))
OLDEST_BUCKET = "31+ days"
BUCKET_ORDER = (*(label for _, label in AGE_BUCKETS), OLDEST_BUCKET)
OVERVIEW_COLUMNS = (
    "age_bucket",
    "property_id",
    "category",
    "currency",
    "count",
    "acknowledged",
    "amount_minor",
    "oldest_night",
)
ORPHAN_COLUMNS = (
    "property_id",
    "night",
    "payment_id",
    "booking_id",
    "booking_status",
    "amount_minor",
    "currency",
    "captured_at",
    "detected_at",
    "age_hours",
    "age_from",
    "review_status",
)
MARKDOWN_ROWS = 50  # the UI shows this many rows; the CSV of `recon report overview` holds them all


def open_overview(connection: Connection, as_of: date) -> tuple[pd.DataFrame, int]:
    """The unresolved findings by age (:func:`unresolved_by_age`) and how many findings that counts."""
    findings = unresolved_findings(connection)
    return unresolved_by_age(findings, as_of), len(findings)


def orphans_overview(connection: Connection, now: datetime) -> pd.DataFrame:
    """The unresolved orphaned captured payments with their age (:func:`orphans_with_age`)."""
    return orphans_with_age(unresolved_orphaned_payments(connection), now)


def age_bucket(age_days: int) -> str:
    """The bucket of a finding ``age_days`` old (a night not yet over counts as 0 days)."""
    return next((label for oldest, label in AGE_BUCKETS if age_days <= oldest), OLDEST_BUCKET)


def unresolved_by_age(findings: pd.DataFrame, as_of: date) -> pd.DataFrame:
    """Findings (property_id, night, category, currency, difference_minor, review_status) grouped by
    (age bucket, property, category, currency): count, how many acknowledged, sum of |difference|."""
    ages = (pd.Timestamp(as_of) - pd.to_datetime(findings["night"].astype("object"))).dt.days
    frame = pd.DataFrame(
        {
            "age_bucket": [age_bucket(int(age)) for age in ages],
            "property_id": findings["property_id"].astype("object"),
            "category": findings["category"].astype("object"),
            "currency": findings["currency"].astype("object"),
            "acknowledged": (findings["review_status"] == "acknowledged").astype("int64"),
            "amount_minor": findings["difference_minor"].astype("int64").abs(),
            "night": findings["night"].astype("object"),
        }
    )
    grouped = (
        frame.groupby(["age_bucket", "property_id", "category", "currency"], sort=False)
        .agg(
            count=("night", "size"),
            acknowledged=("acknowledged", "sum"),
            amount_minor=("amount_minor", "sum"),
            oldest_night=("night", "min"),
        )
        .reset_index()
    )
    order = grouped.assign(
        _bucket=grouped["age_bucket"].map(BUCKET_ORDER.index),
        _category=grouped["category"].map(_category_rank),
    ).sort_values(["_bucket", "property_id", "_category", "currency"], kind="stable")
    return (
        order.loc[:, list(OVERVIEW_COLUMNS)]
        .astype({"count": "int64", "acknowledged": "int64", "amount_minor": "int64"})
        .reset_index(drop=True)
    )


def by_age_markdown(overview: pd.DataFrame) -> str:
    """One row per age bucket: findings and their amounts per currency (the headline of the view)."""
    if overview.empty:
        return "_No unresolved discrepancies._"
    rows = []
    for bucket in BUCKET_ORDER:
        part = overview[overview["age_bucket"] == bucket]
        amounts = part.groupby("currency")["amount_minor"].sum().sort_index()
        rows.append(
            [
                bucket,
                str(int(part["count"].sum())),
                str(int(part["acknowledged"].sum())),
                ", ".join(format_minor(int(total), str(code)) for code, total in amounts.items()) or "—",
            ]
        )
    return markdown_table(["age", "findings", "acknowledged", "sum of abs. difference"], rows)


def overview_markdown(overview: pd.DataFrame) -> str:
    """The overview's rows as a markdown table (the first MARKDOWN_ROWS; the CSV holds every row)."""
    if overview.empty:
        return "_No unresolved discrepancies._"
    rows = [
        [bucket, prop, category, str(count), str(acknowledged), summed_difference(category, amount, currency)]
        + [oldest]
        for bucket, prop, category, currency, count, acknowledged, amount, oldest in overview.head(
            MARKDOWN_ROWS
        ).itertuples(index=False)
    ]
    header = ["age", "property", "category", "findings", "acknowledged", "sum of abs. difference", "oldest"]
    return markdown_table(header, rows) + _more(len(overview))


def orphans_with_age(orphans: pd.DataFrame, now: datetime) -> pd.DataFrame:
    """Orphaned payments with their age in hours, oldest first.

    The age runs from the capture when ``payment_orders`` recorded it, else from the first detection
    (the provider saw money the PMS never did); ``age_from`` says which.
    """
    captured = orphans["captured_at"].notna()
    since = orphans["captured_at"].where(captured, orphans["detected_at"])
    frame = orphans.assign(
        age_hours=((pd.Timestamp(now) - since).dt.total_seconds() / 3600).round(1),
        age_from=pd.Series(["captured_at" if known else "detected_at" for known in captured], dtype="string"),
    )
    return (
        frame.sort_values(["age_hours", "property_id", "payment_id"], ascending=[False, True, True])
        .loc[:, list(ORPHAN_COLUMNS)]
        .reset_index(drop=True)
    )


def orphans_markdown(orphans: pd.DataFrame) -> str:
    """The oldest MARKDOWN_ROWS orphaned payments as a markdown table."""
    if orphans.empty:
        return "_No orphaned captured payments._"
    rows = [
        [
            row.property_id,
            row.night,
            f"`{row.payment_id}`",
            f"{_or_dash(row.booking_id)} ({_or_dash(row.booking_status)})",
            format_amount(row.amount_minor, row.currency),
            _age(float(row.age_hours)),
            str(row.age_from).replace("_", " "),
        ]
        for row in orphans.head(MARKDOWN_ROWS).itertuples(index=False)
    ]
    header = ["property", "night", "payment", "booking (status now)", "amount", "age", "age since"]
    return markdown_table(header, rows) + _more(len(orphans))


def _category_rank(category: str) -> int:
    return ALL_CATEGORIES.index(category) if category in ALL_CATEGORIES else len(ALL_CATEGORIES)


def _age(hours: float) -> str:
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"


def _or_dash(value: object) -> str:
    return "—" if value is None or bool(pd.isna(value)) else str(value)


def _more(total: int) -> str:
    if total <= MARKDOWN_ROWS:
        return ""
    return f"\n\n_{MARKDOWN_ROWS} of {total} rows shown; `recon report overview` writes them all as CSV._"
