"""Dirty ledger input becomes named findings, never a failed night; sums never wrap.

The split of ledger rows is tested as a pure function; the whole path (load with currency upper-casing,
split, diff, ``discrepancies`` and ``adjustments``) through Dagster's ``materialize`` on SQLite and
PostgreSQL, with the simulator over loopback HTTP.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pandas as pd
from sqlalchemy import func, insert, select, update

from recon_pipeline.categories import INVALID_LEDGER_ENTRY
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments, discrepancies, ledger_entries, payment_orders, properties
from recon_pipeline.ledger.queries import (
    captured_orders_frame,
    list_properties,
    load_ledger_records,
    load_property,
    read_captured_order_rows,
)
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS, with_match_keys
from recon_pipeline.ledger.validation import split_ledger_records
from recon_pipeline.money import MAX_AMOUNT_MINOR
from recon_pipeline.nights import night_window
from recon_pipeline.providers.records import empty_provider_records
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.reconcile.report import category_summary
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline, asset_metadata

START = pd.Timestamp("2026-11-30T00:00:00Z")


def raw(*rows: dict[str, Any]) -> pd.DataFrame:
    """Ledger rows as load_ledger_records returns them: amounts unchecked (object)."""
    frame = pd.DataFrame(
        {name: pd.Series([r.get(name) for r in rows], dtype=object) for name in LEDGER_RECORD_COLUMNS}
    )
    return frame.astype({**LEDGER_RECORD_COLUMNS, "amount_minor": "object"})


def row(
    entry_id: str, kind: Any = "payment", amount: Any = 10_000, currency: Any = "EUR", **extra: Any
) -> dict[str, Any]:
    return {
        "entry_id": entry_id,
        "property_id": "p",
        "booking_id": "bk_1",
        "provider_record_id": f"ch_{entry_id}",
        "kind": kind,
        "amount_minor": amount,
        "currency": currency,
        "posted_at": START + pd.Timedelta(hours=1),
        "in_night": True,
    } | extra


def test_each_invalid_row_is_one_named_finding_and_the_rest_is_kept() -> None:
    split = split_ledger_records(
        raw(
            row("ok"),
            row("bound", amount=MAX_AMOUNT_MINOR),
            row("neg_bound", "refund", amount=-MAX_AMOUNT_MINOR),
            row("huge", amount=2**62),
            row("over", "refund", amount=-MAX_AMOUNT_MINOR - 1),
            row("frac", amount=12.5),
            row("no_amount", amount=None),
            row("cur", currency="XXX1"),
            row("no_cur", currency=None),
            row("empty_cur", currency=""),
            row("lower", currency="usd"),  # upper-casing happens on read, not here: unknown as it stands
            row("kind", kind="chargeback"),
            row("no_kind", kind=None),
            row("all", kind="", amount=None, currency="€" * 1000),
            row("dispute", "dispute", amount=-5_000),
            row("reversal", "dispute_reversal", amount=5_000),
        )
    )
    assert split.valid["entry_id"].tolist() == ["ok", "bound", "neg_bound", "dispute", "reversal"]
    assert split.valid.dtypes.astype(str).to_dict() == LEDGER_RECORD_COLUMNS
    invalid = split.invalid.set_index("ledger_entry_id")
    assert invalid.index.tolist() == [
        "huge", "over", "frac", "no_amount", "cur", "no_cur", "empty_cur", "lower", "kind", "no_kind", "all"
    ]  # fmt: skip
    assert set(invalid["category"]) == {INVALID_LEDGER_ENTRY}
    assert invalid["record_key"].tolist() == [f"entry:{eid}" for eid in invalid.index]
    assert set(invalid["difference_minor"]) == {0}
    assert invalid["provider_amount_minor"].isna().all()
    assert invalid.loc["huge", "ledger_amount_minor"] == 2**62
    assert pd.isna(invalid.loc["frac", "ledger_amount_minor"])
    assert invalid.loc["huge", "currency"] == "EUR" and invalid.loc["cur", "currency"] == ""
    assert invalid.loc["huge", "kind"] == "payment" and invalid.loc["kind", "kind"] is None
    detail = invalid["detail"].to_dict()
    assert detail["huge"] == (
        "ledger entry 'huge' is invalid: amount_minor 4611686018427387904 is not an integer within "
        "±100,000,000,000 minor units"
    )
    assert "amount_minor 12.5 is not an integer" in detail["frac"]
    assert detail["no_amount"].endswith("amount_minor is missing")
    assert detail["cur"].endswith("currency 'XXX1' is not an ISO 4217 code")
    assert detail["no_cur"].endswith("currency is missing") and detail["empty_cur"].endswith(
        "currency is missing"
    )
    assert detail["lower"].endswith("currency 'usd' is not an ISO 4217 code")
    assert detail["kind"].endswith("unknown kind 'chargeback'")
    assert detail["no_kind"].endswith("kind is missing")
    assert detail["all"].startswith(
        "ledger entry 'all' is invalid: kind is missing; amount_minor is missing; "
    )
    assert len(detail["all"]) < 200  # the 1000-character currency is cut


def test_invalid_rows_of_adjacent_nights_are_dropped_without_a_finding() -> None:
    split = split_ledger_records(
        raw(row("next", kind="chargeback", in_night=False), row("prev", amount=2**62, in_night=False))
    )
    assert split.valid.empty and split.invalid.empty


def test_a_night_with_an_invalid_row_still_reconciles_the_rest() -> None:
    split = split_ledger_records(raw(row("ok"), row("bad", kind="chargeback", provider_record_id="ch_ok")))
    result = diff_night(empty_provider_records(), split.valid)
    assert result.findings["ledger_entry_id"].tolist() == ["ok"]  # missing at the provider, and only it
    assert result.ledger_total_by_currency == {"EUR": 10_000}


def test_totals_are_exact_at_the_bound_and_where_int64_sums_wrap() -> None:
    """Many rows at ±10^11 (the contract's bound) in EUR; in GBP amounts whose int64 sum wraps (the diff
    takes any int64, so its sums must not rely on the bound)."""
    n = 100_000
    amounts = [MAX_AMOUNT_MINOR] * (n - 3_000) + [-MAX_AMOUNT_MINOR] * 3_000 + [2**62] * 3
    frame = (
        pd.DataFrame(
            {
                **{name: [value] * len(amounts) for name, value in row("x").items()},
                "entry_id": [f"le_{i}" for i in range(len(amounts))],
                "provider_record_id": [f"ch_{i}" for i in range(len(amounts))],
                "amount_minor": amounts,
                "currency": ["EUR"] * n + ["GBP"] * 3,
            }
        )
        .pipe(with_match_keys)
        .astype(LEDGER_RECORD_COLUMNS)
    )
    result = diff_night(empty_provider_records(), frame)
    assert result.ledger_total_by_currency == {"EUR": (n - 6_000) * MAX_AMOUNT_MINOR, "GBP": 3 * 2**62}
    summary = category_summary(result.findings).set_index("currency")
    assert summary.loc["EUR", "amount_minor"] == n * MAX_AMOUNT_MINOR  # missing at the provider, |each|
    assert summary.loc["GBP", "amount_minor"] == 3 * 2**62


def test_category_summary_sums_do_not_wrap() -> None:
    findings = pd.DataFrame(
        {"category": ["amount_mismatch"] * 2, "currency": ["EUR"] * 2, "record_key": ["a", "b"],
         "difference_minor": pd.Series([2**62, -(2**62)], dtype="int64")}
    )  # fmt: skip
    summary = category_summary(findings).set_index("category")
    assert summary.loc["amount_mismatch", "amount_minor"] == 2**63


def test_currencies_are_upper_cased_on_read(database_url: str) -> None:
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    window = night_window(NIGHT, "UTC", "00:00")
    posted = window.start + timedelta(hours=1)
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            [{"property_id": "p", "name": "P", "timezone": "UTC", "currency": "eur"}],
        )
        connection.execute(
            insert(payment_orders),
            [
                {"provider_payment_id": "ch_1", "property_id": "p", "amount_minor": 500, "currency": "eur",
                 "status": "captured", "captured_at": posted, "updated_at": posted}
            ],
        )  # fmt: skip
        connection.execute(
            insert(ledger_entries),
            [
                {"entry_id": e, "property_id": "p", "kind": "payment", "amount_minor": 500, "currency": c,
                 "posted_at": posted}
                for e, c in (("le_1", "eur"), ("le_2", "Eur"), ("le_3", "ßp"))
            ],
        )  # fmt: skip
    with engine.connect() as connection:
        assert load_property(connection, "p").currency == "EUR"
        assert [row.currency for row in list_properties(connection)] == ["EUR"]
        captured = captured_orders_frame(read_captured_order_rows(connection, {"p": window})["p"])
        assert captured["currency"].tolist() == ["EUR"]
        ledger = split_ledger_records(load_ledger_records(connection, "p", window))
    engine.dispose()
    assert ledger.valid["currency"].tolist() == ["EUR", "EUR"]
    assert ledger.invalid["detail"].tolist() == [
        "ledger entry 'le_3' is invalid: currency 'ßp' is not an ISO 4217 code"
    ]


# --- through the pipeline ------------------------------------------------------------------------------


def test_dirty_rows_through_the_pipeline(seeded_pipeline: SeededPipeline) -> None:
    pipeline = seeded_pipeline
    prop = pipeline.properties[0]
    window = night_window(NIGHT, prop.timezone, prop.night_cutoff)
    in_night, next_night = window.start + timedelta(hours=2), window.end + timedelta(hours=2)

    def entry(
        entry_id: str, kind: str, amount: int, currency: str, record: str | None = None
    ) -> dict[str, object]:
        return {
            "entry_id": entry_id,
            "property_id": prop.property_id,
            "booking_id": None,
            "provider_record_id": record,
            "kind": kind,
            "amount_minor": amount,
            "currency": currency,
        }

    dirty = [
        entry("le_huge", "adjustment", 2**62, prop.currency),
        entry("le_cur", "payment", 1_000, "XXX1", record="ch_nowhere"),
        entry("le_kind", "chargeback", -700, prop.currency),
        entry("le_empty", "", 100, ""),
    ]
    neighbour = entry("le_next", "chargeback", 5, "EUR")
    with pipeline.engine.begin() as connection:
        # Every entry of the property in lower case: upper-cased on read, never a currency_mismatch.
        connection.execute(
            update(ledger_entries)
            .where(ledger_entries.c.property_id == prop.property_id)
            .values(currency=func.lower(ledger_entries.c.currency))
        )
        connection.execute(insert(ledger_entries), [{**r, "posted_at": in_night} for r in dirty])
        connection.execute(insert(ledger_entries), [{**neighbour, "posted_at": next_night}])

    result = pipeline.materialize(prop.property_id)

    assert result.success
    planted = pipeline.planted(prop.property_id)
    assert pipeline.found(prop.property_id) == {**planted, INVALID_LEDGER_ENTRY: 4}
    report = asset_metadata(result, "discrepancy_report")
    assert report["invalid_entries"] == 4
    with pipeline.engine.connect() as connection:
        rows = connection.execute(
            select(
                discrepancies.c.record_key,
                discrepancies.c.ledger_entry_id,
                discrepancies.c.kind,
                discrepancies.c.ledger_amount_minor,
                discrepancies.c.difference_minor,
                discrepancies.c.currency,
                discrepancies.c.detail,
            )
            .where(discrepancies.c.category == INVALID_LEDGER_ENTRY)
            .order_by(discrepancies.c.record_key)
        ).all()
        proposals = connection.execute(
            select(adjustments.c.ledger_entry_id, adjustments.c.amount_minor, adjustments.c.currency)
        ).all()
    assert [tuple(r[:6]) for r in rows] == [
        ("entry:le_cur", "le_cur", "payment", 1_000, 0, ""),
        ("entry:le_empty", "le_empty", None, 100, 0, ""),
        ("entry:le_huge", "le_huge", "adjustment", 2**62, 0, prop.currency),
        ("entry:le_kind", "le_kind", None, -700, 0, prop.currency),
    ]
    assert "currency 'XXX1' is not an ISO 4217 code" in rows[0].detail
    assert "kind is missing" in rows[1].detail and "currency is missing" in rows[1].detail
    assert "amount_minor 4611686018427387904" in rows[2].detail
    assert "unknown kind 'chargeback'" in rows[3].detail
    # Nothing proposed for a dirty row; every proposal is in a real currency and within the bound.
    assert not {"le_huge", "le_cur", "le_kind", "le_empty", "le_next"} & {
        p[0] for p in proposals
    }
    assert {p.currency for p in proposals} <= {prop.currency} and proposals
    assert max(abs(p.amount_minor) for p in proposals) <= MAX_AMOUNT_MINOR
