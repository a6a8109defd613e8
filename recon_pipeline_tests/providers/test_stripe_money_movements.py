"""Stripe at balance-transaction level: dispute withdrawals and reversals with their fees, and currency
conversion, mapped to the provider-record frame (pure) and pulled through the simulator on 127.0.0.1."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pandas as pd
import pytest

from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS, with_match_keys
from recon_pipeline.nights import night_window
from recon_pipeline.providers.errors import IncompletePullError, ProviderDataError
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.stripe.captures import earlier_captures
from recon_pipeline.providers.stripe.client import StripeAdapter, charge_rows, refund_row
from recon_pipeline.providers.stripe.disputes import dispute_movement_rows
from recon_pipeline.reconcile.diff import diff_night, unmatched_ledger_record_ids
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.world import build_world
from recon_pipeline.simulation.host.money import DISPUTE_FEE_MINOR, convert, dispute, settle_refund
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.stripe.api import balance_transaction_object, payout_object
from recon_pipeline_tests.support.provider_fixtures import (
    DAY,
    FAST_RETRY,
    T0,
    RunningSimulator,
    StartSimulator,
    make_charge,
    make_refund,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)

PROP_A = PropertyAccount("prop_a")
BALANCE_TRANSACTION_FIELDS = {
    "id", "object", "amount", "available_on", "created", "currency", "description", "exchange_rate", "fee",
    "fee_details", "net", "reporting_category", "source", "status", "type",
}  # fmt: skip
Row = tuple[
    str, str, int, str, Any, Any
]  # id, kind, amount, currency, settlement amount, settlement currency


def night(day: int) -> tuple[datetime, datetime]:
    """The UTC night ``day`` days after T0."""
    return datetime.fromtimestamp(T0 + day * DAY, UTC), datetime.fromtimestamp(T0 + (day + 1) * DAY, UTC)


def rows(frame: pd.DataFrame) -> set[Row]:
    """The frame's money: what the diff matches on, and the conversion columns."""
    return {
        (
            r.provider_record_id,
            r.kind,
            r.amount_minor,
            r.currency,
            None if pd.isna(r.settlement_amount_minor) else int(r.settlement_amount_minor),
            None if pd.isna(r.settlement_currency) else r.settlement_currency,
        )
        for r in frame.itertuples()
    }


def fx_charge(charge_id: str, created: int, amount: int = 10_000, **kwargs: Any) -> dict[str, Any]:
    """A USD charge on a EUR account, settled at 0.92 (fee 320 USD-priced → 294 EUR)."""
    return convert(
        make_charge(charge_id, created, amount=amount, currency="usd", fee=320, **kwargs), "eur", 0.92
    )


class CountingLimiter:
    """A rate limiter that grants at once and counts: every request the adapter makes passes through it."""

    def __init__(self) -> None:
        self.granted = 0

    def acquire(self) -> float:
        self.granted += 1
        return 0.0

    def hold(self, count: int) -> None:
        """Grants cost nothing here: nothing to reserve ahead."""


@pytest.fixture(name="limiter")
def limiter_fixture() -> CountingLimiter:
    return CountingLimiter()


@pytest.fixture(name="adapter_for")
def adapter_for_fixture(limiter: CountingLimiter) -> Any:
    made: list[ProviderHttp] = []

    def adapter_for(sim: RunningSimulator) -> StripeAdapter:
        made.append(ProviderHttp(sim.base_url, retry=FAST_RETRY, limiter=limiter))
        return StripeAdapter(made[-1])

    yield adapter_for
    for http in made:
        http.close()


# --- pure mapping -----------------------------------------------------------------------------------------


def test_a_converted_charge_keeps_its_presentment_amount_and_carries_the_settled_one() -> None:
    charge = fx_charge("ch_fx", T0)
    assert {
        (
            r["kind"],
            r["amount_minor"],
            r["currency"],
            r.get("settlement_amount_minor"),
            r.get("settlement_currency"),
        )
        for r in charge_rows(charge, "prop_a")
    } == {
        ("payment", 10_000, "USD", 9_200, "EUR"),
        ("fee", -294, "EUR", None, None),  # a fee is in the balance transaction's currency already
    }


def test_a_charge_settled_in_its_own_currency_has_no_settlement_figure() -> None:
    payment = charge_rows(make_charge("ch_1", T0), "prop_a")[0]
    assert "settlement_amount_minor" not in payment and "settlement_currency" not in payment


def test_a_converted_refund_carries_its_negative_settled_amount() -> None:
    charge = fx_charge("ch_fx", T0)
    refund = settle_refund(make_refund("re_fx", charge, T0 + 60, 4_000), charge)
    row = refund_row(refund, charge, "prop_a")
    assert (row["amount_minor"], row["currency"]) == (-4_000, "USD")
    assert (row["settlement_amount_minor"], row["settlement_currency"]) == (-3_680, "EUR")


def test_a_refund_whose_balance_transaction_is_not_expanded_is_a_data_error() -> None:
    charge = make_charge("ch_1", T0)
    refund = {**make_refund("re_1", charge, T0 + 60, 1_000), "balance_transaction": "txn_re_1"}
    with pytest.raises(ProviderDataError, match="'re_1'.*not expanded"):
        refund_row(refund, charge, "prop_a")


def _movement_rows(disputed: dict[str, Any], charge: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (
            r["provider_record_id"],
            r["kind"],
            r["amount_minor"],
            r["currency"],
            r.get("settlement_amount_minor"),
        )
        for transaction in disputed["balance_transactions"]
        for r in dispute_movement_rows(transaction, disputed, charge, "prop_a", "bk_1")
    ]


def test_a_lost_dispute_is_a_withdrawal_and_its_fee_under_the_dispute_id() -> None:
    charge = make_charge("ch_1", T0, amount=12_000)
    lost = dispute("du_1", charge, T0 + 3 * DAY)
    assert _movement_rows(lost, charge) == [
        ("du_1", "dispute", -12_000, "EUR", None),
        ("du_1", "fee", -DISPUTE_FEE_MINOR, "EUR", None),
    ]
    row = dispute_movement_rows(lost["balance_transactions"][0], lost, charge, "prop_a", "bk_1")[0]
    assert row["charge_id"] == "ch_1" and row["booking_id"] == "bk_1" and row["settled"]
    assert row["payment_intent_id"] == charge["payment_intent"] and row["status"] == "lost"
    assert row["created_at"] == datetime.fromtimestamp(T0 + 3 * DAY, UTC)  # the BT's, not the charge's


def test_a_won_dispute_reinstates_and_its_returned_fee_is_keyed_by_the_reversal_transaction() -> None:
    charge = make_charge("ch_1", T0, amount=12_000)
    won = dispute("du_1", charge, T0 + DAY, won_at=T0 + 4 * DAY, returned_fee=DISPUTE_FEE_MINOR)
    assert _movement_rows(won, charge) == [
        ("du_1", "dispute", -12_000, "EUR", None),
        ("du_1", "fee", -DISPUTE_FEE_MINOR, "EUR", None),
        ("du_1", "dispute_reversal", 12_000, "EUR", None),
        ("txn_1r", "fee", DISPUTE_FEE_MINOR, "EUR", None),  # never (du_1, fee) twice in one night
    ]


def test_a_converted_dispute_keeps_the_disputed_amount_and_carries_the_settled_one() -> None:
    charge = fx_charge("ch_fx", T0)
    won = dispute("du_fx", charge, T0 + DAY, won_at=T0 + 2 * DAY)
    assert _movement_rows(won, charge) == [
        ("du_fx", "dispute", -10_000, "USD", -9_200),
        ("du_fx", "fee", -DISPUTE_FEE_MINOR, "EUR", None),
        ("du_fx", "dispute_reversal", 10_000, "USD", 9_200),
    ]


def test_a_dispute_movement_of_another_dispute_or_charge_is_a_data_error() -> None:
    charge = make_charge("ch_1", T0)
    lost = dispute("du_1", charge, T0 + DAY)
    withdrawal = lost["balance_transactions"][0]
    with pytest.raises(ProviderDataError, match="source is 'du_2'"):
        dispute_movement_rows({**withdrawal, "source": "du_2"}, lost, charge, "prop_a", None)
    with pytest.raises(ProviderDataError, match="charge 'ch_1' given 'ch_2'"):
        dispute_movement_rows(withdrawal, lost, make_charge("ch_2", T0), "prop_a", None)


# --- through the simulator ----------------------------------------------------------------------------------


def test_a_night_with_a_lost_dispute_of_an_earlier_charge(
    simulator: StartSimulator, adapter_for: Any, limiter: CountingLimiter
) -> None:
    charge = make_charge("ch_old", T0 - 5 * DAY, amount=12_000)
    sim = simulator(SimulatorStore(charges=[charge], disputes=[dispute("du_lost", charge, T0 + 3_600)]))
    frame = adapter_for(sim).pull_night(PROP_A, *night(0))
    assert rows(frame) == {
        ("du_lost", "dispute", -12_000, "EUR", None, None),
        ("du_lost", "fee", -DISPUTE_FEE_MINOR, "EUR", None, None),
    }
    assert set(frame.charge_id) == {"ch_old"} and set(frame.booking_id) == {"bk_ch_old"}
    paths = sim.stats()["requests_by_path"]
    # the disputed charge (for its claim) is not among the night's: one list of the disputes brings it
    # expanded (``data.source.charge`` is no documented expansion), no request by id
    assert paths == {"/v1/charges": 1, "/v1/refunds": 1, "/v1/balance_transactions": 1, "/v1/disputes": 1}
    assert limiter.granted == sum(paths.values())  # every request went through the one rate bound


def test_a_dispute_won_later_withdraws_on_its_opening_night_and_reinstates_on_the_night_it_is_won(
    simulator: StartSimulator, adapter_for: Any
) -> None:
    charge = make_charge("ch_1", T0 - DAY, amount=8_000)
    won = dispute("du_won", charge, T0 + 600, won_at=T0 + 3 * DAY + 600, returned_fee=DISPUTE_FEE_MINOR)
    sim = simulator(SimulatorStore(charges=[charge], disputes=[won]))
    adapter = adapter_for(sim)
    assert rows(adapter.pull_night(PROP_A, *night(0))) == {
        ("du_won", "dispute", -8_000, "EUR", None, None),
        ("du_won", "fee", -DISPUTE_FEE_MINOR, "EUR", None, None),
    }
    assert adapter.pull_night(PROP_A, *night(1)).empty
    assert rows(adapter.pull_night(PROP_A, *night(3))) == {
        ("du_won", "dispute_reversal", 8_000, "EUR", None, None),
        ("txn_wonr", "fee", DISPUTE_FEE_MINOR, "EUR", None, None),
    }


def test_a_night_with_a_converted_charge_and_refund(simulator: StartSimulator, adapter_for: Any) -> None:
    charge = fx_charge("ch_fx", T0 + 100)
    refund = settle_refund(make_refund("re_fx", charge, T0 + 900, 2_500), charge)
    sim = simulator(SimulatorStore(charges=[charge], refunds=[refund]))
    assert rows(adapter_for(sim).pull_night(PROP_A, *night(0))) == {
        ("ch_fx", "payment", 10_000, "USD", 9_200, "EUR"),
        ("ch_fx", "fee", -294, "EUR", None, None),
        ("re_fx", "refund", -2_500, "USD", -2_300, "EUR"),
    }


def test_a_dispute_on_a_shared_platform_account_goes_to_the_property_its_charge_names(
    simulator: StartSimulator, adapter_for: Any
) -> None:
    mine = make_charge("ch_mine", T0 - DAY, amount=5_000)
    theirs = make_charge("ch_theirs", T0 - DAY, amount=7_000, property_id="prop_b")
    unnamed = make_charge("ch_unnamed", T0 - DAY, amount=3_000, property_id=None)
    disputes = [dispute(f"du_{c['id'][3:]}", c, T0 + 60 * i) for i, c in enumerate((mine, theirs, unnamed))]
    sim = simulator(SimulatorStore(charges=[mine, theirs, unnamed], disputes=disputes))
    adapter = adapter_for(sim)
    shared = {"account_properties": ("prop_a", "prop_b")}
    claimed = adapter.pull_claimed(PropertyAccount("prop_a", **shared), *night(0))
    assert {(r.provider_record_id, r.kind, r.property_id) for r in claimed.itertuples()} == {
        ("du_mine", "dispute", "prop_a"),
        ("du_mine", "fee", "prop_a"),
        ("du_unnamed", "dispute", None),  # nobody's by metadata: attribution decides (payment_orders)
        ("du_unnamed", "fee", None),
    }
    theirs_frame = adapter.pull_night(PropertyAccount("prop_b", **shared), *night(0))
    assert set(theirs_frame.provider_record_id) == {"du_theirs"}


def test_disputes_on_a_connected_account_are_read_with_its_header(
    simulator: StartSimulator, adapter_for: Any
) -> None:
    charge = make_charge("ch_k", T0 - DAY, property_id=None, account="acct_kyoto")
    platform_charge = make_charge("ch_p", T0 - DAY)
    disputes = [dispute("du_k", charge, T0 + 60), dispute("du_p", platform_charge, T0 + 120)]
    sim = simulator(SimulatorStore(charges=[charge, platform_charge], disputes=disputes))
    frame = adapter_for(sim).pull_night(PropertyAccount("kyoto", provider_account="acct_kyoto"), *night(0))
    assert set(frame.provider_record_id) == {"du_k"} and set(frame.property_id) == {"kyoto"}


def test_dispute_and_reversal_transaction_ids_resolve_by_id(
    simulator: StartSimulator, adapter_for: Any
) -> None:
    charge = make_charge("ch_1", T0 - DAY, amount=6_000)
    won = dispute("du_1", charge, T0 + 60, won_at=T0 + 2 * DAY, returned_fee=DISPUTE_FEE_MINOR)
    sim = simulator(SimulatorStore(charges=[charge], disputes=[won]))
    adapter = adapter_for(sim)
    every_movement = {
        ("du_1", "dispute", -6_000, "EUR", None, None),
        ("du_1", "fee", -DISPUTE_FEE_MINOR, "EUR", None, None),
        ("du_1", "dispute_reversal", 6_000, "EUR", None, None),
        ("txn_1r", "fee", DISPUTE_FEE_MINOR, "EUR", None, None),
    }
    assert rows(adapter.fetch_records_by_id(PROP_A, ["du_1"])) == every_movement
    assert rows(adapter.fetch_records_by_id(PROP_A, ["txn_1r"])) == {
        ("du_1", "dispute_reversal", 6_000, "EUR", None, None),
        ("txn_1r", "fee", DISPUTE_FEE_MINOR, "EUR", None, None),
    }
    assert rows(adapter.fetch_records_by_id(PROP_A, ["du_1", "txn_1r"])) == every_movement  # each row once
    assert adapter.fetch_records_by_id(PROP_A, ["du_unknown", "txn_unknown"]).empty
    other = adapter.fetch_records_by_id(PropertyAccount("prop_b"), ["du_1"])
    assert other.empty  # the charge names prop_a: another property's ledger never gets it


def test_a_dispute_whose_charge_stripe_does_not_know_fails_the_pull(
    simulator: StartSimulator, adapter_for: Any
) -> None:
    charge = make_charge("ch_gone", T0 - DAY)
    sim = simulator(SimulatorStore(disputes=[dispute("du_1", charge, T0 + 60)]))
    with pytest.raises(IncompletePullError) as failure:
        adapter_for(sim).pull_night(PROP_A, *night(0))
    assert "'ch_gone' is unknown" in str(failure.value.__cause__)
    assert sim.stats()["requests_by_path"]["/v1/charges/ch_gone"] >= 1  # not expanded: asked by id


def test_the_simulator_serves_dispute_transactions_with_the_source_expanded_only_on_request(
    simulator: StartSimulator,
) -> None:
    charge = make_charge("ch_1", T0 - DAY)
    sim = simulator(SimulatorStore(charges=[charge], disputes=[dispute("du_1", charge, T0 + 60)]))
    listed = sim.client.get(
        "/v1/balance_transactions",
        params={"type": "adjustment", "created[gte]": T0, "expand[]": "data.source"},
    ).json()
    assert [(t["id"], t["reporting_category"], t["source"]["object"]) for t in listed["data"]] == [
        ("txn_1w", "dispute", "dispute")
    ]
    assert "account" not in listed["data"][0]["source"]
    plain = sim.client.get("/v1/balance_transactions", params={"source": "ch_1"}).json()["data"]
    assert [(t["type"], t["source"], t["amount"]) for t in plain] == [("charge", "ch_1", 10_000)]
    assert (
        set(plain[0]) == set(listed["data"][0]) == BALANCE_TRANSACTION_FIELDS
    )  # Stripe's shape, whoever holds it
    assert plain[0]["fee_details"] == [
        {
            "amount": 300,
            "application": None,
            "currency": "eur",
            "description": "Stripe processing fees",
            "type": "stripe_fee",
        }
    ]
    assert sim.client.get("/v1/disputes/du_1").json()["balance_transactions"][0]["fee"] == DISPUTE_FEE_MINOR
    refused = sim.client.get("/v1/balance_transactions", params={"reporting_category": "dispute"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "parameter_unknown"


def test_the_served_transactions_are_the_stored_ones_of_payouts_and_those_movements_hold() -> None:
    """A payout's transaction stored under a charge's transaction id is served in its place (once, filed
    under its payout); what a dispute and an unpaid charge hold is served beside it; worlds merged night
    by night keep both."""
    paid, unpaid = make_charge("ch_paid", T0), make_charge("ch_unpaid", T0 + 10)
    carried = balance_transaction_object(
        "txn_paid", "po_1", "ch_paid", "charge", 10_000, 300, "eur", T0, account=None
    )
    night_one = SimulatorStore(
        charges=[paid],
        payouts=[payout_object("po_1", 9_700, "eur", T0 + 2 * DAY, T0 + DAY, None)],
        balance_transactions=[carried],
    )
    night_two = SimulatorStore(charges=[unpaid], disputes=[dispute("du_1", unpaid, T0 + DAY)])
    night_one.absorb(night_two)
    night_one.reindex()
    served = night_one.served_balance_transactions()
    assert sorted(t["id"] for t in served) == ["txn_1w", "txn_paid", "txn_unpaid"]
    assert night_one.get("balance_transactions", "txn_paid") is carried
    assert night_one.view("balance_transactions", None, "payout", "po_1").objects == [carried]
    assert [p["id"] for p in night_one.payouts] == ["po_1"]


# --- the demo world ----------------------------------------------------------------------------------------


def test_the_stripe_demo_world_holds_disputes_and_a_conversion_each_booked_as_pulled(
    simulator: StartSimulator, adapter_for: Any
) -> None:
    """A lost dispute, a dispute won tonight (returned fee under the reversal's id) and a foreign card settled
    in EUR: each pulled row has a ledger entry with the same id, kind, amount and currency."""
    lisbon = next(p for p in DEMO_PROPERTIES if p.currency == "EUR" and p.provider_account is None)
    tonight = date(2026, 3, 2)
    world = build_world(
        {lisbon.property_id: tonight}, bookings_per_night=3, properties=(lisbon,), plant=False
    )
    window = night_window(tonight, lisbon.timezone, lisbon.night_cutoff)
    pulled = adapter_for(simulator(world.store)).pull_night(
        PropertyAccount(lisbon.property_id), window.start, window.end
    )
    movements = pulled[
        pulled.provider_record_id.str.startswith(("du_", "txn_")) | pulled.settlement_currency.notna()
    ]
    kinds = sorted(zip(movements.provider_record_id.str[:3], movements.kind, strict=True))
    assert kinds == [
        ("ch_", "payment"),  # the foreign card: presented in USD, settled in EUR
        ("du_", "dispute"),
        ("du_", "dispute_reversal"),
        ("du_", "fee"),
        ("re_", "refund"),
        ("txn", "fee"),
    ]
    assert set(movements.loc[movements.settlement_currency.notna(), "currency"]) == {"USD"}
    booked = {
        (e["provider_record_id"], e["kind"], e["amount_minor"], e["currency"]) for e in world.ledger_entries
    }
    assert {(r.provider_record_id, r.kind, r.amount_minor, r.currency) for r in pulled.itertuples()} <= booked


def _ledger(entries: list[tuple[str, str, int, str, datetime]]) -> pd.DataFrame:
    """In-night ledger entries (id, kind, amount, currency, posted) of prop_a."""
    frame = pd.DataFrame(
        [
            {
                "entry_id": f"le_{i}",
                "property_id": "prop_a",
                "booking_id": None,
                "provider_record_id": record_id,
                "kind": kind,
                "amount_minor": amount,
                "currency": currency,
                "posted_at": posted,
                "in_night": True,
            }
            for i, (record_id, kind, amount, currency, posted) in enumerate(entries)
        ]
    )
    return with_match_keys(frame).astype(LEDGER_RECORD_COLUMNS)


def test_a_dispute_booked_a_night_late_is_a_timing_difference_found_by_id(
    simulator: StartSimulator, adapter_for: Any
) -> None:
    """The ledger books Monday's withdrawal and Thursday's reversal (with the returned fee) on Tuesday and
    Wednesday: Tuesday's pull holds none of them, the by-id lookup finds them in other nights."""
    charge = make_charge("ch_1", T0 - DAY, amount=8_000)
    won = dispute("du_1", charge, T0 + 600, won_at=T0 + 3 * DAY, returned_fee=DISPUTE_FEE_MINOR)
    adapter = adapter_for(simulator(SimulatorStore(charges=[charge], disputes=[won])))
    start, _ = night(1)
    pulled = adapter.pull_night(PROP_A, *night(1))
    ledger = _ledger(
        [
            ("du_1", "dispute", -8_000, "EUR", start),
            ("du_1", "fee", -DISPUTE_FEE_MINOR, "EUR", start),
            ("du_1", "dispute_reversal", 8_000, "EUR", start),
            ("txn_1r", "fee", DISPUTE_FEE_MINOR, "EUR", start),
        ]
    )
    unmatched = unmatched_ledger_record_ids(pulled, ledger)
    assert pulled.empty and unmatched == ["du_1", "txn_1r"]
    result = diff_night(pulled, ledger, adapter.fetch_records_by_id(PROP_A, unmatched))
    assert result.findings.empty and result.timing_difference_count == 4
    off = _ledger([("du_1", "dispute", -7_000, "EUR", start)])  # booked, but not what Stripe withdrew
    found = diff_night(pulled, off, adapter.fetch_records_by_id(PROP_A, ["du_1"])).findings
    assert list(found.category) == ["amount_mismatch"]


def test_a_converted_refund_looked_up_by_id_carries_its_settlement_figure(
    simulator: StartSimulator, adapter_for: Any
) -> None:
    charge = fx_charge("ch_fx", T0 - DAY)
    refund = settle_refund(make_refund("re_fx", charge, T0 + 900, 2_500), charge)
    adapter = adapter_for(simulator(SimulatorStore(charges=[charge], refunds=[refund])))
    assert rows(adapter.fetch_records_by_id(PROP_A, ["re_fx", "ch_fx"])) == {
        ("ch_fx", "payment", 10_000, "USD", 9_200, "EUR"),
        ("ch_fx", "fee", -294, "EUR", None, None),
        ("re_fx", "refund", -2_500, "USD", -2_300, "EUR"),
    }


def _stay(transaction_type: str = "charge") -> dict[str, Any]:
    """A stay authorized at check-in on night 0 and captured at checkout on night 1: the charge dates from
    the authorization, its balance transaction (of ``transaction_type``: ``charge`` for a card, ``payment``
    for a ``py_`` charge) from the capture."""
    held = make_charge("ch_stay", T0 + 600, amount=30_000)
    held["balance_transaction"].update(created=T0 + DAY + 600, type=transaction_type)
    return held


@pytest.mark.parametrize("transaction_type", ["charge", "payment"])
def test_an_authorization_captured_on_a_later_night_is_that_nights_money(
    simulator: StartSimulator, adapter_for: Any, transaction_type: str
) -> None:
    """The capture's balance transaction dates the money: night 0's pull leaves the stay out, night 1's
    has it (from its balance transactions, the charge's own created on night 0), dated by the capture, in
    the same three lists as a night without it; re-running both nights gives the same frames."""
    paid_tonight = make_charge("ch_now", T0 + 900, amount=5_000)
    sim = simulator(SimulatorStore(charges=[_stay(transaction_type), paid_tonight]))
    adapter = adapter_for(sim)
    first = [adapter.pull_night(PROP_A, *night(n)) for n in (0, 1)]
    assert rows(first[0]) == {
        ("ch_now", "payment", 5_000, "EUR", None, None),
        ("ch_now", "fee", -300, "EUR", None, None),
    }
    assert rows(first[1]) == {
        ("ch_stay", "payment", 30_000, "EUR", None, None),
        ("ch_stay", "fee", -300, "EUR", None, None),
    }
    assert set(first[1].settled) == {True} and set(first[1].booking_id) == {"bk_ch_stay"}
    assert set(first[1].created_at) == {datetime.fromtimestamp(T0 + DAY + 600, UTC)}  # the capture
    assert sim.stats()["requests_by_path"] == {
        "/v1/charges": 2,
        "/v1/refunds": 2,
        "/v1/balance_transactions": 2,
    }  # no lookup by id
    again = [adapter.pull_night(PROP_A, *night(n)) for n in (0, 1)]
    for before, after in zip(first, again, strict=True):
        pd.testing.assert_frame_equal(before, after)


def test_a_capture_is_matched_on_its_night_and_missing_there_when_unbooked(
    simulator: StartSimulator, adapter_for: Any
) -> None:
    """Booked on the capture's night it matches with no lookup by id; unbooked it is missing_in_ledger on
    that night (payment and fee), and nothing of it is found on the authorization's night."""
    adapter = adapter_for(simulator(SimulatorStore(charges=[_stay()])))
    checkout, _ = night(1)
    booked = _ledger(
        [("ch_stay", "payment", 30_000, "EUR", checkout), ("ch_stay", "fee", -300, "EUR", checkout)]
    )
    pulled = adapter.pull_night(PROP_A, *night(1))
    assert unmatched_ledger_record_ids(pulled, booked) == []
    matched = diff_night(pulled, booked, None)
    assert matched.findings.empty and matched.timing_difference_count == 0
    unbooked = diff_night(pulled, booked.iloc[:0], None).findings
    assert sorted(zip(unbooked.provider_record_id, unbooked.category, strict=True)) == [
        ("ch_stay", "missing_in_ledger"),
        ("ch_stay", "missing_in_ledger"),
    ]
    assert diff_night(adapter.pull_night(PROP_A, *night(0)), booked.iloc[:0], None).findings.empty


def test_a_capture_whose_source_is_not_an_expanded_charge_fails_the_pull() -> None:
    transaction = {"id": "txn_1", "type": "charge", "source": "ch_1", "created": T0}
    with pytest.raises(ProviderDataError, match="txn_1.*not an expanded charge"):
        earlier_captures([transaction], T0)
