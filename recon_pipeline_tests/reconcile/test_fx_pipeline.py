"""Currency conversion end to end through ``materialize``: guests' cards charged in USD, the Lisbon account
settling in EUR. The ledger books some charges in USD, some at the EUR figure, one within the property's
tolerance and one beyond it; only that one is a finding (``fx_difference``) with its correction proposed
in EUR; the PMS corrects the entry twice and the finding and its adjustment follow. An unbooked converted
charge is proposed at the EUR figure the account received.

The settlement figure is the balance transaction's (``currency`` eur while the charge's is usd). The
Stripe client reading it off balance transactions is another slice's work; here a client wrapper puts
it on the pulled records, as that client will, so this test depends on nothing but the frame contract.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

import pandas as pd
import pytest
from sqlalchemy import select, update

from recon_pipeline.categories import FX_DIFFERENCE, MISSING_IN_LEDGER
from recon_pipeline.db.schema import adjustments, discrepancies, ledger_entries
from recon_pipeline.defs.resources import ProviderResource
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.reconcile.lifecycle import PROPOSED, SUPERSEDED, WITHDRAWN
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.world import World
from recon_pipeline_tests.support.pipeline_fixtures import SeededPipeline, asset_metadata, seeded

[LISBON] = [prop for prop in DEMO_PROPERTIES if prop.property_id == "lisbon-riverside"]
TOLERANT_LISBON = replace(LISBON, fx_tolerance_bps=10)  # 0.1 %: 9 cents of a 92.00 EUR charge
USD_PER_EUR = 1.087


class ConvertingClient:
    """The simulator's client, with the balance transaction's EUR figure on each charge it converts."""

    def __init__(self, client: ProviderClient, settled: Mapping[str, int]) -> None:
        self._client = client
        self._settled = settled
        self.name = client.name

    def pull_claimed(self, account: PropertyAccount, start: datetime, end: datetime) -> pd.DataFrame:
        return self._converted(self._client.pull_claimed(account, start, end))

    def fetch_records_by_id(self, account: PropertyAccount, record_ids: Sequence[str]) -> pd.DataFrame:
        return self._converted(self._client.fetch_records_by_id(account, record_ids))

    def __getattr__(self, name: str) -> Any:  # payment_state, events_since: as the simulator's
        return getattr(self._client, name)

    def _converted(self, frame: pd.DataFrame) -> pd.DataFrame:
        payments = (frame["kind"] == "payment") & frame["provider_record_id"].isin(list(self._settled))
        frame = frame.copy()
        frame.loc[payments, "settlement_amount_minor"] = frame.loc[payments, "provider_record_id"].map(
            self._settled
        )
        frame.loc[payments, "settlement_currency"] = "EUR"
        return frame


class ConvertingProvider(ProviderResource):
    """The pipeline's provider resource over :class:`ConvertingClient`."""

    settled: dict[str, int]

    def adapter(self) -> ProviderClient:
        return ConvertingClient(super().adapter(), self.settled)


def charge_in_usd(world: World, charge_id: str) -> int:
    """The guest's card is charged in USD; the balance transaction keeps the EUR amount the account got.
    Returns that EUR amount."""
    [charge] = [charge for charge in world.store.charges if charge["id"] == charge_id]
    settled: int = charge["balance_transaction"]["amount"]
    charge["currency"] = "usd"
    charge["amount"] = charge["amount_captured"] = round(settled * USD_PER_EUR)
    return settled


def payment_entry(world: World, charge_id: str) -> dict[str, Any]:
    [found] = [
        e for e in world.ledger_entries if e["provider_record_id"] == charge_id and e["kind"] == "payment"
    ]
    return found


def unrefunded_charges(world: World) -> list[str]:
    refunded = {refund["charge"] for refund in world.store.refunds}
    return [c["id"] for c in world.store.charges if c["status"] == "succeeded" and c["id"] not in refunded]


class Plan:
    """Which charges convert and how the ledger books each: filled by the world edit, read by the test."""

    settled: dict[str, int]  # charge id -> the balance transaction's EUR amount
    beyond: str  # the charge whose entry is off beyond tolerance
    off_entry: str  # that entry

    def edit(self, world: World) -> None:
        in_usd, at_eur, within, beyond = unrefunded_charges(world)[:4]
        self.settled = {
            charge_id: charge_in_usd(world, charge_id) for charge_id in (in_usd, at_eur, within, beyond)
        }
        usd = payment_entry(world, in_usd)
        usd["currency"], usd["amount_minor"] = "USD", round(self.settled[in_usd] * USD_PER_EUR)
        # at_eur: the ledger's entry already posts the EUR figure the balance transaction holds
        payment_entry(world, within)["amount_minor"] = self.settled[within] - self.settled[within] // 1_000
        off = payment_entry(world, beyond)
        off["amount_minor"] = self.settled[beyond] - 75
        self.off_entry = off["entry_id"]
        self.beyond = beyond


class ConversionPlan(Protocol):
    """A test's edit of the world whose charges in ``settled`` the provider reports as converted."""

    settled: dict[str, int]  # charge id -> the balance transaction's EUR amount

    def edit(self, world: World) -> None: ...


@contextmanager
def converting(database_url: str, prop: PropertyRow, plan: ConversionPlan) -> Iterator[SeededPipeline]:
    """``prop``'s clean night as ``plan`` edits it, its provider reporting ``plan.settled``'s charges as
    settled in EUR (read once the edit has run: the world sets the amounts)."""
    with seeded(database_url, properties=(prop,), plant=False, edit=plan.edit) as pipeline:
        base: ProviderResource = pipeline.resources["provider"]
        pipeline.resources["provider"] = ConvertingProvider(**base.model_dump(), settled=plan.settled)
        yield pipeline


def fx_state(pipeline: SeededPipeline) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(category, record key, difference, currency, cleared?) of every finding, and (kind, amount, currency,
    status) of every adjustment, of Lisbon's night."""
    with pipeline.engine.connect() as connection:
        found = connection.execute(
            select(
                discrepancies.c.category,
                discrepancies.c.record_key,
                discrepancies.c.difference_minor,
                discrepancies.c.currency,
                discrepancies.c.cleared_at.is_not(None),
            ).order_by(discrepancies.c.record_key)
        ).all()
        proposed = connection.execute(
            select(
                adjustments.c.kind, adjustments.c.amount_minor, adjustments.c.currency, adjustments.c.status
            ).order_by(adjustments.c.revision)
        ).all()
    return [tuple(row) for row in found], [tuple(row) for row in proposed]


def rebook(pipeline: SeededPipeline, entry_id: str, amount: int) -> None:
    """The PMS corrects the entry in place."""
    with pipeline.engine.begin() as connection:
        connection.execute(
            update(ledger_entries).where(ledger_entries.c.entry_id == entry_id).values(amount_minor=amount)
        )


@pytest.mark.slow  # Dagster runs
def test_a_usd_charge_settled_in_eur_matches_either_figure_and_an_fx_difference_follows_the_ledger(
    database_url: str,
) -> None:
    plan = Plan()
    with converting(database_url, TOLERANT_LISBON, plan) as pipeline:
        settled = plan.settled[plan.beyond]
        key = f"{plan.beyond}:payment"

        first = pipeline.materialize()
        assert first.success
        assert fx_state(pipeline) == (
            [(FX_DIFFERENCE, key, 75, "EUR", False)],
            [("correct_fx_payment", 75, "EUR", PROPOSED)],
        )
        report = asset_metadata(first, "discrepancy_report")
        assert report["findings"] == 1 and report[f"count/{FX_DIFFERENCE}"] == 1
        assert report[f"amount/{FX_DIFFERENCE}/EUR"] == "0.75 EUR"

        rebook(pipeline, plan.off_entry, settled - 60)  # a second try, still beyond 0.1 % (at most 45 cents)
        assert pipeline.materialize().success
        assert fx_state(pipeline) == (
            [(FX_DIFFERENCE, key, 60, "EUR", False)],
            [("correct_fx_payment", 75, "EUR", SUPERSEDED), ("correct_fx_payment", 60, "EUR", PROPOSED)],
        )

        rebook(pipeline, plan.off_entry, settled)  # fixed: the balance transaction's figure
        assert pipeline.materialize().success
        assert fx_state(pipeline) == (
            [(FX_DIFFERENCE, key, 60, "EUR", True)],
            [("correct_fx_payment", 75, "EUR", SUPERSEDED), ("correct_fx_payment", 60, "EUR", WITHDRAWN)],
        )


class UnbookedPlan:
    """One charge converts and the PMS never books it."""

    settled: dict[str, int]
    unbooked: str

    def edit(self, world: World) -> None:
        self.unbooked = unrefunded_charges(world)[0]
        self.settled = {self.unbooked: charge_in_usd(world, self.unbooked)}
        world.ledger_entries.remove(payment_entry(world, self.unbooked))


@pytest.mark.slow  # a Dagster run
def test_an_unbooked_usd_charge_settled_in_eur_is_proposed_at_the_eur_figure_the_account_received(
    database_url: str,
) -> None:
    plan = UnbookedPlan()
    with converting(database_url, LISBON, plan) as pipeline:
        assert pipeline.materialize().success
        settled = plan.settled[plan.unbooked]
        found, proposed = fx_state(pipeline)
        assert [row for row in found if row[1] == f"{plan.unbooked}:payment"] == [
            (MISSING_IN_LEDGER, f"{plan.unbooked}:payment", settled, "EUR", False)
        ]
        assert ("post_missing_payment", settled, "EUR", PROPOSED) in proposed
