"""The card's keys in the provider-record frame (brand, last four, approval code): one brand vocabulary,
validated like every field, read where each provider documents them, and carried by the refund, fee and
dispute rows of a payment; over loopback, every client's frame carries the simulator's card for each
payment without a request more."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from recon_pipeline.providers.adyen.report import SETTLEMENT_DETAIL_COLUMNS, parse_settlement_report
from recon_pipeline.providers.cards import (
    CARD_BRANDS,
    approval_code,
    brand_of,
    card_brand,
    card_keys,
    card_last4,
    spellings_of,
)
from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.razorpay.client import RECON_PATH, payment_rows
from recon_pipeline.providers.razorpay.client import refund_row as razorpay_refund_row
from recon_pipeline.providers.records import CARD_KEY_COLUMNS, OPTIONAL_PROVIDER_RECORD_COLUMNS
from recon_pipeline.providers.stripe.client import card_keys_of, charge_rows, refund_row
from recon_pipeline.simulation.adyen.api import csv_text
from recon_pipeline.simulation.host.cards import adyen_payment_method, card_of, razorpay_network
from recon_pipeline.simulation.host.money import dispute
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.simulation.razorpay.api import render_payment, render_refund
from recon_pipeline.simulation.stripe import rendering
from recon_pipeline_tests.support.provider_fixtures import (
    DAY,
    FAST_RETRY,
    STRIPE,
    T0,
    Flavour,
    StartSimulator,
    make_charge,
    make_refund,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)

NIGHT = (datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0 + DAY, UTC))
# What each provider's records say of the card: Adyen's settlement report names the scheme alone.
KEYS_SERVED = {"stripe": CARD_KEY_COLUMNS, "razorpay": CARD_KEY_COLUMNS, "adyen": ("card_brand",)}


def _keys(row: Any) -> tuple[Any, Any, Any]:
    return row["card_brand"], row["card_last4"], row["approval_code"]


def _stripe_charge(details: Any, **fields: Any) -> dict[str, Any]:
    return {**make_charge("ch_1", T0, **fields), "payment_method_details": details}


# --- the shared vocabulary ------------------------------------------------------------------------------


@pytest.mark.fast
@pytest.mark.parametrize(
    ("raw", "brand"),
    [
        ("visa", "visa"),
        ("VISA", "visa"),
        ("MasterCard", "mastercard"),
        ("mc", "mastercard"),
        ("American Express", "amex"),
        ("amex", "amex"),
        ("Diners Club", "diners"),
        ("RuPay", "rupay"),
        ("cup", "unionpay"),
        ("Bajaj Finserv", "bajaj"),
        ("Some New Scheme", None),  # a spelling nobody knows: brand unknown, never a different card
        ("VA", "visa"),
        ("AX", "amex"),
        ("ca", "mastercard"),
        ("unknown", None),
        ("Unknown", None),
        ("", None),
        (None, None),
    ],
)
def test_every_providers_brand_is_spelled_one_way(raw: str | None, brand: str | None) -> None:
    assert card_brand(raw, "payment 'p'") == brand


@pytest.mark.fast
def test_a_brands_spellings_are_what_brand_of_reads_as_it_and_nothing_else() -> None:
    """What the review desk's brand filter folds a stored spelling against (``spellings_of``)."""
    for brand in CARD_BRANDS:
        assert spellings_of(brand) and all(brand_of(spelling) == brand for spelling in spellings_of(brand))
    assert spellings_of() == frozenset().union(*(spellings_of(brand) for brand in CARD_BRANDS))
    assert {"va", "vi", "visacredit"} <= spellings_of("visa") and "mc" in spellings_of("mastercard")
    assert not spellings_of("visa") & spellings_of("mastercard")


def test_card_keys_are_validated_like_every_field() -> None:
    assert card_keys("Visa", "4242", "T30444", "x") == {
        "card_brand": "visa",
        "card_last4": "4242",
        "approval_code": "T30444",
    }
    assert card_last4(None, "x") is None and card_last4("", "x") is None
    assert approval_code(None, "x") is None and approval_code("", "x") is None
    for bad in ("424", "42424", "42a2", "４２４２", 4242):
        with pytest.raises(ProviderDataError, match="payment 'p': card last4 is .*not four digits"):
            card_last4(bad, "payment 'p'")
    for bad_code in ("12\x003", "x" * 65, 123456):
        with pytest.raises(ProviderDataError, match="approval code"):
            approval_code(bad_code, "payment 'p'")
    with pytest.raises(ProviderDataError, match="card brand is '7'"):
        card_brand(7, "payment 'p'")


@pytest.mark.fast
def test_the_columns_are_optional_in_the_contract() -> None:
    assert set(CARD_KEY_COLUMNS) <= OPTIONAL_PROVIDER_RECORD_COLUMNS


# --- Stripe: payment_method_details ---------------------------------------------------------------------


@pytest.mark.fast
def test_stripe_reads_an_online_cards_keys_and_every_row_of_the_charge_carries_them() -> None:
    card = {"brand": "mastercard", "last4": "4444", "authorization_code": "A1B2C3", "exp_month": 1}
    charge = _stripe_charge({"type": "card", "card": card}, fee=320)
    rows = charge_rows(charge, "prop_a")
    assert [(r["kind"], *_keys(r)) for r in rows] == [
        ("payment", "mastercard", "4444", "A1B2C3"),
        ("fee", "mastercard", "4444", "A1B2C3"),
    ]
    refund = refund_row(make_refund("re_1", charge, T0 + 60, 2_500), charge, "prop_a")
    assert _keys(refund) == ("mastercard", "4444", "A1B2C3")


@pytest.mark.fast
def test_stripe_reads_a_terminals_receipt_and_leaves_other_methods_null() -> None:
    present = {"brand": "visa", "last4": "0005", "receipt": {"authorization_code": "123456"}}
    assert _keys(card_keys_of(_stripe_charge({"type": "card_present", "card_present": present}))) == (
        "visa",
        "0005",
        "123456",
    )
    no_code = {"brand": "amex", "last4": "0005", "authorization_code": None}  # before Stripe sends it
    assert _keys(card_keys_of(_stripe_charge({"type": "card", "card": no_code}))) == ("amex", "0005", None)
    sepa = {"type": "sepa_debit", "sepa_debit": {"last4": "3000"}}
    assert _keys(card_keys_of(_stripe_charge(sepa))) == (None, None, None)
    assert _keys(card_keys_of(_stripe_charge(None))) == (None, None, None)
    with pytest.raises(ProviderDataError, match="payment_method_details of charge 'ch_1': card last4"):
        charge_rows(_stripe_charge({"type": "card", "card": {"brand": "visa", "last4": "42"}}), "p")


@pytest.mark.fast
def test_the_stripe_simulator_serves_one_card_per_charge_and_keeps_what_the_world_seeded() -> None:
    paid, declined = make_charge("ch_a", T0), make_charge("ch_b", T0, status="failed", fee=None)
    rendered = rendering.charge(paid, "2022-11-15", lambda _: [])["payment_method_details"]["card"]
    card = card_of(paid)
    assert (rendered["brand"], rendered["last4"], rendered["authorization_code"]) == (
        card.brand,
        card.last4,
        card.approval_code,
    )
    assert card.approval_code is not None and len(card.approval_code) == 6 and len(card.last4) == 4
    assert card_of(paid) == card  # derived from the id: the same on every run
    assert (
        rendering.charge(declined, "2022-11-15", lambda _: [])["payment_method_details"]["card"][
            "authorization_code"
        ]
        is None
    )
    hold = {**paid, "payment_method_details": {"type": "card", "card": {"capture_before": T0 + 7 * DAY}}}
    served = rendering.charge(hold, "2022-11-15", lambda _: [])["payment_method_details"]["card"]
    assert served["capture_before"] == T0 + 7 * DAY and served["last4"] == card.last4
    seeded = {**paid, "payment_method_details": {"type": "card", "card": {"brand": "amex", "last4": "0005"}}}
    assert (card_of(seeded).brand, card_of(seeded).last4) == ("amex", "0005")
    brands = {card_of(make_charge(f"ch_{i}", T0)).brand for i in range(200)}
    assert brands == {"visa", "mastercard", "amex"}


# --- Razorpay: the expanded card and acquirer_data.auth_code ----------------------------------------------


@pytest.mark.fast
def test_razorpay_reads_the_expanded_card_and_the_auth_code() -> None:
    charge = make_charge("pay_1", T0, currency="inr", fee=236)
    card = card_of(charge)
    payment = render_payment(charge, expand_card=True)
    assert payment["card"]["network"] == razorpay_network(card.brand)
    rows = payment_rows(payment, "prop_a")
    assert {_keys(r) for r in rows} == {(card.brand, card.last4, card.approval_code)}
    refund = razorpay_refund_row(render_refund(make_refund("rfnd_1", charge, T0 + 5, 100)), payment, "p")
    assert _keys(refund) == (card.brand, card.last4, card.approval_code)
    unexpanded = payment_rows(render_payment(charge), "prop_a")[0]  # an order's payments come so
    assert _keys(unexpanded) == (None, None, card.approval_code)
    upi = {**render_payment(charge), "method": "upi", "card_id": None, "acquirer_data": {"rrn": "0338"}}
    assert _keys(payment_rows(upi, "p")[0]) == (None, None, None)
    as_documented = {**payment, "card": {**payment["card"], "network": "American Express", "last4": "8431"}}
    assert _keys(payment_rows(as_documented, "p")[0])[:2] == ("amex", "8431")
    with pytest.raises(ProviderDataError, match="payment 'pay_1': field 'card'"):
        payment_rows({**payment, "card": "card_1"}, "p")


# --- Adyen: the report's Payment Method ------------------------------------------------------------------


@pytest.mark.fast
def test_adyens_payment_method_is_the_brand_and_the_report_says_nothing_more() -> None:
    base = dict.fromkeys(SETTLEMENT_DETAIL_COLUMNS, "")
    common = {"Merchant Account": "M", "Creation Date": "2026-01-01 10:00:00", "TimeZone": "UTC"}
    money = {"Gross Currency": "EUR", "Gross Credit (GC)": "10.00", "Net Currency": "EUR"}

    def settled(psp: str, method: str) -> dict[str, str]:
        return {**base, **common, **money, "Type": "Settled", "Psp Reference": psp, "Payment Method": method}

    payout = {**base, **common, "Type": "MerchantPayout", "Net Currency": "EUR", "Net Debit (NC)": "30.00"}
    text = csv_text(
        [settled("8815000000000001", "mc"), settled("8815000000000002", "amex"), settled("8815000000000003",
         "paypal"), payout]
    )  # fmt: skip
    frame = parse_settlement_report(text, "batch_1.csv", "M", 1).records
    assert frame.set_index("provider_record_id").card_brand.to_dict() == {
        "8815000000000001": "mastercard",
        "8815000000000002": "amex",
        "8815000000000003": None,
    }
    assert frame.card_last4.isna().all() and frame.approval_code.isna().all()
    assert adyen_payment_method("mastercard") == "mc"


# --- over loopback: every client's frame ---------------------------------------------------------------


def test_every_clients_frame_carries_the_simulated_card_of_each_payment_at_no_extra_request(
    simulator: StartSimulator, provider: Flavour
) -> None:
    paid = make_charge(provider.charge_id("000000000001"), T0 + 100, booking_id="bk_1")
    other = make_charge(provider.charge_id("000000000002"), T0 + 200, fee=0)
    refund = make_refund(provider.refund_id("000000000091"), paid, T0 + 300, 2_500)
    store = provider.served(SimulatorStore(charges=[paid, other], refunds=[refund]))
    sim = simulator(store, provider.api_key, provider.name)
    account = PropertyAccount("prop_a", provider.property_account)
    with ProviderHttp(
        sim.base_url, retry=FAST_RETRY, api_key=provider.api_key, provider=provider.name
    ) as http:
        frame = provider.adapter(http, provider.api_key).pull_claimed(account, *NIGHT)
    served = KEYS_SERVED[provider.name]
    assert len(frame) == 4  # the two payments, the first's fee, its refund
    for row in frame.to_dict("records"):
        card = card_of(paid if row["charge_id"] == paid["id"] else other)
        expected = {"card_brand": card.brand, "card_last4": card.last4, "approval_code": card.approval_code}
        got = {column: row[column] for column in CARD_KEY_COLUMNS}
        assert got == {c: (expected[c] if c in served else None) for c in CARD_KEY_COLUMNS}, row
    if provider.lists_payments:  # one page of each list, as without the keys
        paths = sim.stats()["requests_by_path"]
        paths.pop(RECON_PATH, None)
        assert paths == {
            provider.payments_path: 1,
            "/v1/refunds": 1,
            **dict.fromkeys(provider.movement_lists, 1),
        }


def test_a_stripe_disputes_rows_carry_its_charges_keys(simulator: StartSimulator) -> None:
    """A dispute (its withdrawal and fee) follows its charge, which the night's balance transactions name:
    the rows carry that charge's card, read from the charge the pull resolves."""
    earlier = make_charge("ch_earlier", T0 - DAY)
    store = SimulatorStore(charges=[earlier], disputes=[dispute("du_1", earlier, T0 + 100)])
    sim = simulator(store)
    with ProviderHttp(sim.base_url, retry=FAST_RETRY) as http:
        frame = STRIPE.adapter(http).pull_claimed(PropertyAccount("prop_a"), *NIGHT)
    card = card_of(earlier)
    assert sorted(frame.kind) == ["dispute", "fee"]
    assert {_keys(row) for row in frame.to_dict("records")} == {(card.brand, card.last4, card.approval_code)}
