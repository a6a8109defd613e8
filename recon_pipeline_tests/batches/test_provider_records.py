"""The provider's side of a night's findings, kept (``storage/provider_records.py``): the records its findings
and matches name are stored as the provider holds them, fees folded in, and a re-run overwrites them; on
SQLite and PostgreSQL, and through a whole pipeline run."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
from sqlalchemy import Engine, func, select

from recon_pipeline.categories import finding_frame
from recon_pipeline.db.schema import discrepancies, provider_records
from recon_pipeline.providers.interface import RecordAddress
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS
from recon_pipeline.reconcile.matching import match_frame
from recon_pipeline.storage.provider_records import named_record_ids, save_provider_records
from recon_pipeline_tests.support.pipeline_fixtures import SeededPipeline

SEEN = datetime(2026, 12, 3, 6, 0, tzinfo=UTC)
CREATED = pd.Timestamp("2026-12-02 22:14", tz="UTC")


def pulled(*rows: dict[str, object]) -> pd.DataFrame:
    """A provider-record frame of ``rows`` (the contract's columns; a row says what differs)."""
    base: dict[str, object] = {
        "property_id": "p1",
        "booking_id": "bk_1",
        "payment_intent_id": None,
        "currency": "EUR",
        "status": "succeeded",
        "settled": True,
        "created_at": CREATED,
        "settlement_amount_minor": None,
        "settlement_currency": None,
        "card_brand": "visa",
        "card_last4": "4242",
        "approval_code": "A1B2C3",
    }
    frame = pd.DataFrame([{**base, **row} for row in rows])
    return frame.astype({name: dtype for name, dtype in PROVIDER_RECORD_COLUMNS.items() if name in frame})


NIGHT_PULL = pulled(
    {"provider_record_id": "ch_1", "kind": "payment", "charge_id": "ch_1", "amount_minor": 10000},
    {"provider_record_id": "ch_1", "kind": "fee", "charge_id": "ch_1", "amount_minor": -320},
    {"provider_record_id": "ch_2", "kind": "payment", "charge_id": "ch_2", "amount_minor": 5000},
    {"provider_record_id": "re_1", "kind": "refund", "charge_id": "ch_0", "amount_minor": -2000},
    {"provider_record_id": "ch_9", "kind": "payment", "charge_id": "ch_9", "amount_minor": 700},
)


def link(record: RecordAddress) -> str:
    return f"https://dashboard.example/{record.charge_id}"


def stored(engine: Engine) -> dict[tuple[str, str], dict[str, object]]:
    with engine.connect() as connection:
        rows = connection.execute(select(provider_records)).mappings()
        return {(row["provider_record_id"], row["kind"]): dict(row) for row in rows}


def save(engine: Engine, frames: tuple[pd.DataFrame, ...], named: set[str], run_id: str) -> int:
    with engine.begin() as connection:
        return save_provider_records(
            connection, "p1", "2026-12-02", frames, named, "stripe", "acct_1", link, run_id, SEEN
        )


def test_only_the_named_records_are_stored_with_their_fee_folded_in_and_a_rerun_overwrites_them(
    engine: Engine,
) -> None:
    looked_up = pulled(
        {"provider_record_id": "ch_0", "kind": "payment", "charge_id": "ch_0", "amount_minor": 1}
    )
    assert save(engine, (NIGHT_PULL, looked_up), {"ch_1", "re_1", "ch_unknown"}, "run-1") == 2
    rows = stored(engine)
    assert set(rows) == {("ch_1", "payment"), ("re_1", "refund")}  # ch_2, ch_9, the fee row: not named
    payment = rows[("ch_1", "payment")]
    assert (payment["amount_minor"], payment["fee_minor"], payment["net_minor"]) == (10000, -320, 9680)
    assert (payment["card_brand"], payment["card_last4"], payment["approval_code"]) == (
        "visa",
        "4242",
        "A1B2C3",
    )
    assert payment["created_at"] == CREATED.to_pydatetime() and payment["status"] == "succeeded"
    assert payment["provider"] == "stripe" and payment["provider_account"] == "acct_1"
    assert payment["dashboard_url"] == "https://dashboard.example/ch_1" and payment["run_id"] == "run-1"
    refund = rows[("re_1", "refund")]
    assert (refund["fee_minor"], refund["net_minor"]) == (None, None)  # no fee row: none said
    assert refund["dashboard_url"] == "https://dashboard.example/ch_0"  # its charge's page

    changed = NIGHT_PULL.assign(
        status=NIGHT_PULL["status"].where(NIGHT_PULL["kind"] != "payment", "refunded")
    )
    assert save(engine, (changed,), {"ch_1"}, "run-2") == 1
    again = stored(engine)
    assert len(again) == 2  # upserted, not added; re_1 keeps its last row
    assert (
        again[("ch_1", "payment")]["status"] == "refunded" and again[("ch_1", "payment")]["run_id"] == "run-2"
    )
    assert again[("re_1", "refund")]["run_id"] == "run-1"
    assert save(engine, (NIGHT_PULL,), set(), "run-3") == 0


@pytest.mark.fast
def test_the_named_ids_are_the_findings_records_the_held_back_keys_and_the_matches() -> None:
    findings = finding_frame(
        {
            "category": ["amount_mismatch", "ambiguous_match", "missing_at_provider"],
            "record_key": ["ch_1:payment", "ambiguous:ch_3+ch_4=le_1", "le_9"],
            "provider_record_id": ["ch_1", None, None],
            "difference_minor": [1, 0, -5],
            "currency": ["EUR"] * 3,
        }
    )
    matches = match_frame({"provider_record_ids": ["ch_5 ch_6"], "ledger_entry_ids": ["le_2"]})
    assert named_record_ids(findings, matches) == {"ch_1", "ch_3", "ch_4", "ch_5", "ch_6"}


def test_a_reconciled_night_stores_the_provider_records_its_findings_name(
    seeded_pipeline: SeededPipeline,
) -> None:
    pipeline = seeded_pipeline
    assert pipeline.materialize().success
    with pipeline.engine.connect() as connection:
        named = set(
            connection.execute(
                select(discrepancies.c.property_id, discrepancies.c.provider_record_id).where(
                    discrepancies.c.provider_record_id.is_not(None),
                    discrepancies.c.category.in_(
                        ["amount_mismatch", "missing_in_ledger", "currency_mismatch"]
                    ),
                )
            ).all()
        )
        rows = connection.execute(select(provider_records)).mappings().all()
        kept = connection.execute(select(func.count()).select_from(provider_records)).scalar_one()
    assert named, "the demo night plants findings that name provider records"
    have = {(row["property_id"], row["provider_record_id"]) for row in rows}
    assert named <= have
    charges = len(pipeline.world.store.charges)
    assert 0 < kept < charges / 2  # the findings' records, not the night's whole pull
    for row in rows:
        assert row["provider"] == "stripe" and row["created_at"] is not None and row["status"]
        assert row["dashboard_url"] is None  # the simulator has no dashboard
        if row["fee_minor"] is not None:
            assert row["net_minor"] == row["amount_minor"] + row["fee_minor"]
    assert any(row["fee_minor"] for row in rows), "a Stripe charge's fee is folded into its payment"
