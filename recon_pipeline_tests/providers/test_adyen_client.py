"""The Adyen client against the simulator's Adyen served over real HTTP on 127.0.0.1: a night pulled from
settlement reports, the settlement calendar, by-id lookups, payment state, auth, the batch cache, and the
served CSV read as Adyen documents it (the official ``Adyen`` library has no report parser: Adyen's docs
describe a plain CSV with a header line, so pandas reads it)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pandas as pd
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.providers.adyen import PROVIDER
from recon_pipeline.providers.adyen.client import AdyenClient
from recon_pipeline.providers.adyen.report import (
    SETTLEMENT_DETAIL_COLUMNS,
    parse_settlement_report,
    payouts_of,
)
from recon_pipeline.providers.attribution import attribute
from recon_pipeline.providers.errors import (
    IncompletePullError,
    PermanentPullError,
    ProviderRequestRejected,
    ProviderUnavailable,
    is_permanent_status,
)
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import ClientSettings
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.records import empty_provider_records
from recon_pipeline.reconcile.diff import diff_night, unmatched_ledger_record_ids
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.adyen.api import (
    SIMULATOR_MERCHANT_ACCOUNT,
    csv_text,
    report_available_item,
)
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.provider_fixtures import (
    DAY,
    FAST_RETRY,
    T0,
    make_charge,
    make_refund,
    simulator_server_fixture,  # noqa: F401  (fixture)
)

MERCHANT = "HotelAmsterdamECOM"
KEY = "ws@Company.Hotels:report-password"
H = 3_600
CH1, CH2, CH3, FAILED, OTHER = (f"88150000000000{n:02d}" for n in (1, 2, 3, 4, 5))
REFUND = "8815000000000091"
HELD = "8815000000000092"  # authorized one night, captured the next
NIGHT = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC))
ACCOUNT = PropertyAccount("P1", MERCHANT, ("P1",))


def world() -> SimulatorStore:
    """Jan 1: two captured payments (one a second before midnight) and a failed one; Jan 2: a payment and
    a refund of the first; another merchant account's payment on Jan 1."""
    ch1 = make_charge(CH1, T0 + 10 * H, amount=10_050, fee=300, account=MERCHANT, booking_id="bk_1")
    charges = [
        ch1,
        make_charge(CH2, T0 + DAY - 1, amount=20_000, fee=0, account=MERCHANT),
        make_charge(CH3, T0 + DAY + H, amount=5_000, fee=150, account=MERCHANT),
        make_charge(FAILED, T0 + 11 * H, status="failed", fee=None, captured=False, account=MERCHANT),
        make_charge(OTHER, T0 + 12 * H, account=None),
    ]
    return SimulatorStore(charges=charges, refunds=[make_refund(REFUND, ch1, T0 + DAY + 2 * H, 1_000)])


class Counted:
    """The app, counting the requests it serves (what the client actually downloaded)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app, self.paths = app, list[str]()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
        await self.app(scope, receive, send)


@pytest.fixture(name="served")
def served_fixture(
    simulator_server: tuple[ServerThread, Any],
) -> Iterator[tuple[str, SimulatorStore, Counted]]:
    server, current = simulator_server
    store = world()
    store.clock = lambda: datetime(2026, 1, 6, 7, tzinfo=UTC).timestamp()  # batch 4 (Jan 6) is out
    current.app = counted = Counted(build_app(store, api_key=KEY, flavour="adyen"))
    yield server.base_url, store, counted
    current.app = None


@pytest.fixture(name="http")
def http_fixture(served: tuple[str, SimulatorStore, Counted]) -> Iterator[ProviderHttp]:
    with ProviderHttp(served[0], retry=FAST_RETRY, max_rps=float("inf"), provider="adyen") as http:
        yield http


@pytest.fixture(name="client")
def client_fixture(served: tuple[str, SimulatorStore, Counted], http: ProviderHttp) -> AdyenClient:
    client = PROVIDER.client(http, ClientSettings(served[0], KEY, {}))
    assert isinstance(client, AdyenClient)
    return client


@pytest.fixture(name="web")
def web_fixture() -> Iterator[httpx.Client]:
    """A plain HTTP client (one per test: each costs a TLS context)."""
    with loopback_client(timeout=5) as web:
        yield web


def rows(frame: pd.DataFrame) -> set[tuple[str, str, int, str]]:
    return {(r.provider_record_id, r.kind, r.amount_minor, r.currency) for r in frame.itertuples()}


def test_a_night_is_pulled_from_every_batch_that_can_hold_it(
    client: AdyenClient, served: tuple[str, SimulatorStore, Counted]
) -> None:
    claimed = client.pull_claimed(ACCOUNT, *NIGHT)
    assert rows(claimed) == {
        (CH1, "payment", 10_050, "EUR"),
        (CH1, "fee", -300, "EUR"),
        (CH2, "payment", 20_000, "EUR"),
    }
    own = attribute(claimed, ACCOUNT, {}).own  # alone on its merchant account: everything is P1's
    assert set(own["property_id"]) == {"P1"}
    assert own.loc[own["provider_record_id"].eq(CH1), "booking_id"].tolist() == ["bk_1", "bk_1"]
    downloads = len(served[2].paths)
    next_night = client.pull_claimed(ACCOUNT, NIGHT[1], datetime(2026, 1, 3, tzinfo=UTC))
    assert rows(next_night) == {
        (CH3, "payment", 5_000, "EUR"),
        (CH3, "fee", -150, "EUR"),
        (REFUND, "refund", -1_000, "EUR"),
    }
    served[2].paths.clear()
    client.pull_claimed(ACCOUNT, *NIGHT)  # published batches are cached: only "is there a newer one?"
    assert served[2].paths == [
        f"/reports/download/MerchantAccount/{MERCHANT}/settlement_detail_report_batch_5.csv"
    ]
    assert downloads == 6  # probing 1, 3, 7, 5, 4, then batch 2 (1, 3 and 4 are cached)


def test_a_payment_captured_a_night_after_its_authorization_is_the_captures_nights(
    client: AdyenClient, served: tuple[str, SimulatorStore, Counted]
) -> None:
    """Adyen's report has a line per capture (its modification), dated by the capture: a stay authorized
    on Jan 1 and captured on Jan 2 is Jan 2's money and not Jan 1's."""
    stay = make_charge(HELD, T0 + 9 * H, amount=30_000, fee=600, account=MERCHANT)
    stay["balance_transaction"]["created"] = T0 + DAY + 3 * H
    served[1].charges.append(stay)
    served[1].reindex()
    assert HELD not in set(client.pull_claimed(ACCOUNT, *NIGHT).provider_record_id)
    captured = client.pull_claimed(ACCOUNT, NIGHT[1], datetime(2026, 1, 3, tzinfo=UTC))
    assert {(HELD, "payment", 30_000, "EUR"), (HELD, "fee", -600, "EUR")} <= rows(captured)
    assert set(captured.loc[captured.provider_record_id.eq(HELD), "created_at"]) == {
        datetime.fromtimestamp(T0 + DAY + 3 * H, UTC)
    }


def test_a_night_whose_covering_batch_is_not_published_fails(
    client: AdyenClient, served: tuple[str, SimulatorStore, Counted], http: ProviderHttp
) -> None:
    served[1].clock = lambda: datetime(2026, 1, 4, 12, tzinfo=UTC).timestamp()  # newest: batch 2, Jan 4
    with pytest.raises(IncompletePullError, match="not published yet"):
        client.pull_claimed(ACCOUNT, *NIGHT)
    served[1].clock = lambda: datetime(2026, 1, 2, tzinfo=UTC).timestamp()  # nothing published at all
    fresh = AdyenClient(http, KEY)  # a process that never saw a batch
    with pytest.raises(IncompletePullError, match="not published yet"):
        fresh.pull_claimed(ACCOUNT, *NIGHT)


def test_lookup_by_id_and_payment_state(client: AdyenClient) -> None:
    found = client.fetch_records_by_id(ACCOUNT, [REFUND, CH3, "8815999999999999"])
    assert rows(found) == {
        (REFUND, "refund", -1_000, "EUR"),
        (CH3, "payment", 5_000, "EUR"),
        (CH3, "fee", -150, "EUR"),
    }
    assert set(found["property_id"]) == {"P1"}
    assert found.dtypes.to_dict() == empty_provider_records().dtypes.to_dict()  # the contract's, kept
    state = client.payment_state(MERCHANT, CH1)
    assert state is not None
    assert (state.status, state.amount_minor, state.amount_refunded_minor, state.currency) == (
        "partially_refunded",
        10_050,
        1_000,
        "EUR",
    )
    assert state.booking_id == "bk_1" and state.property_id is None
    assert state.captured_at == datetime.fromtimestamp(T0 + 10 * H, UTC)
    assert client.payment_state(MERCHANT, FAILED) is None  # never settled: Adyen reports nothing of it
    assert client.payment_state(MERCHANT, "8815999999999999") is None
    assert client.events_since(MERCHANT, 0) is None


def test_platform_charges_are_the_default_merchant_accounts(
    served: tuple[str, SimulatorStore, Counted],
) -> None:
    with ProviderHttp(served[0], retry=FAST_RETRY, max_rps=float("inf")) as http:
        client = PROVIDER.client(
            http, ClientSettings(served[0], KEY, {"merchant_account": SIMULATOR_MERCHANT_ACCOUNT})
        )
        lone = PropertyAccount("P2")
        assert rows(client.pull_claimed(lone, *NIGHT)) == {
            (OTHER, "payment", 10_000, "EUR"),
            (OTHER, "fee", -300, "EUR"),
        }
        with pytest.raises(ValueError, match="merchant account"):
            PROVIDER.client(http, ClientSettings(served[0], KEY, {})).pull_claimed(lone, *NIGHT)


def test_report_download_needs_the_report_users_basic_auth(
    served: tuple[str, SimulatorStore, Counted], web: httpx.Client
) -> None:
    base_url, _, _ = served
    item = report_available_item(base_url, MERCHANT, 1, event_date="2026-01-03T07:00:00+01:00")
    url = item["reason"]
    assert web.get(url).status_code == 401
    assert web.get(url, auth=("ws@Company.Hotels", "wrong")).status_code == 401
    user, password = KEY.split(":")
    answer = web.get(url, auth=(user, password))
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/csv")
    with ProviderHttp(base_url, retry=FAST_RETRY, max_rps=float("inf")) as http:
        wrong = AdyenClient(http, "ws@Company.Hotels:wrong")
        with pytest.raises(IncompletePullError) as raised:
            wrong.pull_claimed(ACCOUNT, *NIGHT)
        assert isinstance(raised.value.__cause__, ProviderRequestRejected)
        assert "HTTP 401" in str(raised.value) and "wrong" not in str(raised.value)


def test_the_served_csv_is_adyens_settlement_details_report(
    served: tuple[str, SimulatorStore, Counted], web: httpx.Client
) -> None:
    base_url, _, _ = served
    user, password = KEY.split(":")
    path = f"/reports/download/MerchantAccount/{MERCHANT}/settlement_detail_report_batch_1.csv"
    text = web.get(base_url + path, auth=(user, password)).text
    report = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert tuple(report.columns) == SETTLEMENT_DETAIL_COLUMNS
    assert report["Type"].tolist() == ["Settled", "Settled", "MerchantPayout"]
    first = report.iloc[0]
    assert (first["Psp Reference"], first["Merchant Reference"], first["Gross Currency"]) == (
        CH1,
        "bk_1",
        "EUR",
    )
    assert (first["Gross Credit (GC)"], first["Net Credit (NC)"]) == ("100.50", "97.50")
    fees = sum(float(first[c]) for c in ("Markup (NC)", "Scheme Fees (NC)", "Interchange (NC)"))
    assert fees == pytest.approx(3.00)
    assert (first["Creation Date"], first["TimeZone"]) == ("2026-01-01 11:00:00", "CET")  # 10:00 UTC
    assert set(report["Batch Number"]) == {"1"} and set(report["Merchant Account"]) == {MERCHANT}
    missing = web.get(base_url + path.replace("batch_1", "batch_9"), auth=(user, password))
    assert missing.status_code == 404


def test_report_downloads_are_retried_through_injected_faults(
    client: AdyenClient, served: tuple[str, SimulatorStore, Counted], http: ProviderHttp
) -> None:
    faults = served[2].app.state.faults  # type: ignore[attr-defined]
    faults.configure({"statuses": [503, 429, 500], "retry_after": "0"})
    claimed = client.pull_claimed(ACCOUNT, *NIGHT)
    assert rows(claimed) == {
        (CH1, "payment", 10_050, "EUR"),
        (CH1, "fee", -300, "EUR"),
        (CH2, "payment", 20_000, "EUR"),
    }
    stats = faults.stats()
    assert stats["api_requests"] == 6 + 3  # the six downloads of a cold pull, three of them answered twice
    assert stats["responses_by_status"] == {"200": 4, "404": 2, "429": 1, "500": 1, "503": 1}
    faults.configure({"statuses": [503] * FAST_RETRY.max_attempts})
    with pytest.raises(IncompletePullError, match="HTTP 503"):
        AdyenClient(http, KEY).pull_claimed(ACCOUNT, *NIGHT)  # cold: nothing cached


@pytest.mark.parametrize("status", [408, 409, 425, 401, 403, 422])
def test_a_refused_download_is_sent_once_a_transient_one_retried(
    client: AdyenClient, served: tuple[str, SimulatorStore, Counted], status: int
) -> None:
    """Adyen's 401/403/422 refuse for good: one request, a permanent pull error naming the download; its
    408/409/425 are retried like a 5xx."""
    faults = served[2].app.state.faults  # type: ignore[attr-defined]
    faults.configure({"statuses": [status] * 10 if is_permanent_status(status) else [status]})
    if not is_permanent_status(status):
        assert len(client.pull_claimed(ACCOUNT, *NIGHT)) == 3
        assert faults.stats()["responses_by_status"][str(status)] == 1
        return
    with pytest.raises(PermanentPullError, match=rf"adyen GET /reports/download/\S+ rejected: HTTP {status}"):
        client.pull_claimed(ACCOUNT, *NIGHT)
    assert faults.stats()["responses_by_status"] == {str(status): 1}


def test_a_report_body_that_is_not_text_is_retried_then_unavailable(
    simulator_server: tuple[ServerThread, Any],
) -> None:
    """``ProviderHttp.get_text`` treats an undecodable body as transient, like invalid JSON."""
    server, current = simulator_server
    bodies = [b"\xff\xfe\xfa not utf-8", b"Company Account\n"]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = bodies.pop(0) if bodies else b"\xff"
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/csv")]}
        )
        await send({"type": "http.response.body", "body": body})

    current.app = app
    try:
        with ProviderHttp(server.base_url, retry=FAST_RETRY, max_rps=float("inf")) as http:
            assert http.get_text("/a.csv") == "Company Account\n"  # the first answer was retried
            with pytest.raises(ProviderUnavailable, match="invalid body"):
                http.get_text("/b.csv")
    finally:
        current.app = None


DISPUTE = "8815000000000071"
CHARGEBACK_AT, REVERSED_AT = T0 + 20 * H, T0 + DAY + 5 * H  # Jan 1 20:00 and Jan 2 05:00 UTC


def disputed(store: SimulatorStore) -> SimulatorStore:
    """``store`` with a dispute of CH1 as Stripe shapes it: withdrawn on Jan 1 (with a 15.00 fee) and
    reinstated on Jan 2 (the defence won)."""
    transactions = [
        {"id": "txn_cb", "object": "balance_transaction", "amount": -10_050, "fee": 1_500, "net": -11_550,
         "currency": "eur", "created": CHARGEBACK_AT, "reporting_category": "dispute", "type": "adjustment"},
        {"id": "txn_rv", "object": "balance_transaction", "amount": 10_050, "fee": 0, "net": 10_050,
         "currency": "eur", "created": REVERSED_AT, "reporting_category": "dispute_reversal",
         "type": "adjustment"},
    ]  # fmt: skip
    store.disputes.append(
        {"id": DISPUTE, "object": "dispute", "amount": 10_050, "currency": "eur", "charge": CH1,
         "status": "won", "created": CHARGEBACK_AT, "balance_transactions": transactions, "account": MERCHANT}
    )  # fmt: skip
    store.reindex()
    return store


def ledger(*entries: tuple[str, str, int, int]) -> pd.DataFrame:
    """Ledger entries (record id, kind, amount, posted at) of P1 in EUR, all posted in NIGHT."""
    rows = [
        {"entry_id": f"le_{n}", "property_id": "P1", "booking_id": None, "provider_record_id": record_id,
         "kind": kind, "amount_minor": amount, "currency": "EUR",
         "posted_at": pd.Timestamp(posted, unit="s", tz="UTC"), "in_night": True}
        for n, (record_id, kind, amount, posted) in enumerate(entries)
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=list(LEDGER_RECORD_COLUMNS)).astype(LEDGER_RECORD_COLUMNS)


def test_a_chargeback_and_its_reversal_are_pulled_as_dispute_rows_on_their_nights(
    client: AdyenClient, served: tuple[str, SimulatorStore, Counted]
) -> None:
    disputed(served[1])
    assert rows(client.pull_claimed(ACCOUNT, *NIGHT)) == {
        (CH1, "payment", 10_050, "EUR"),
        (CH1, "fee", -300, "EUR"),
        (CH2, "payment", 20_000, "EUR"),
        (DISPUTE, "dispute", -10_050, "EUR"),
        (DISPUTE, "fee", -1_500, "EUR"),
    }
    next_night = client.pull_claimed(ACCOUNT, NIGHT[1], datetime(2026, 1, 3, tzinfo=UTC))
    assert rows(next_night) == {
        (CH3, "payment", 5_000, "EUR"),
        (CH3, "fee", -150, "EUR"),
        (REFUND, "refund", -1_000, "EUR"),
        (DISPUTE, "dispute_reversal", 10_050, "EUR"),
    }
    reversal = next_night[next_night["kind"].eq("dispute_reversal")].iloc[0]
    assert (reversal["charge_id"], reversal["booking_id"], reversal["status"]) == (
        CH1,
        "bk_1",
        "chargeback_reversed",
    )
    assert reversal["created_at"] == datetime.fromtimestamp(REVERSED_AT, UTC)


def test_a_ledger_booking_the_chargeback_and_its_reversal_has_no_finding(
    client: AdyenClient, served: tuple[str, SimulatorStore, Counted]
) -> None:
    """The reversal is Jan 2's at Adyen; the ledger books it on Jan 1: the by-id lookup of the dispute's
    reference finds it, so it is a timing difference, not missing at the provider."""
    disputed(served[1])
    claimed = client.pull_claimed(ACCOUNT, *NIGHT)
    own = attribute(claimed, ACCOUNT, {}).own
    entries = ledger(
        (CH1, "payment", 10_050, T0 + 10 * H),
        (CH1, "fee", -300, T0 + 10 * H),
        (CH2, "payment", 20_000, T0 + 23 * H),
        (DISPUTE, "dispute", -10_050, CHARGEBACK_AT),
        (DISPUTE, "fee", -1_500, CHARGEBACK_AT),
        (DISPUTE, "dispute_reversal", 10_050, T0 + 23 * H),
    )
    unmatched = unmatched_ledger_record_ids(own, entries)
    assert unmatched == [DISPUTE]
    elsewhere = client.fetch_records_by_id(ACCOUNT, unmatched)
    assert rows(elsewhere) == {
        (DISPUTE, "dispute", -10_050, "EUR"),
        (DISPUTE, "fee", -1_500, "EUR"),
        (DISPUTE, "dispute_reversal", 10_050, "EUR"),
    }
    result = diff_night(own, entries, elsewhere)
    assert result.findings.empty
    assert (result.matched_count, result.timing_difference_count) == (5, 1)
    without_reversal = diff_night(own, entries[entries["kind"].ne("dispute_reversal")], elsewhere)
    assert without_reversal.findings.empty  # booked on Jan 2, the reversal is Jan 2's business


def test_a_chargeback_follows_its_payment_on_a_shared_merchant_account(
    client: AdyenClient, served: tuple[str, SimulatorStore, Counted]
) -> None:
    disputed(served[1])
    shared = PropertyAccount("P1", MERCHANT, ("P1", "P2"))
    claimed = client.pull_claimed(shared, *NIGHT)
    owners = {CH1: "P1", CH2: "P2"}  # payment_orders
    assert rows(attribute(claimed, shared, owners).own) == {
        (CH1, "payment", 10_050, "EUR"),
        (CH1, "fee", -300, "EUR"),
        (DISPUTE, "dispute", -10_050, "EUR"),
        (DISPUTE, "fee", -1_500, "EUR"),
    }
    other = PropertyAccount("P2", MERCHANT, ("P1", "P2"))
    assert rows(attribute(claimed, other, owners).own) == {(CH2, "payment", 20_000, "EUR")}


def test_the_served_report_writes_chargebacks_and_the_payout_adds_up(
    served: tuple[str, SimulatorStore, Counted], web: httpx.Client
) -> None:
    base_url, store, _ = served
    disputed(store)
    user, password = KEY.split(":")
    path = f"/reports/download/MerchantAccount/{MERCHANT}/settlement_detail_report_batch_1.csv"
    text = web.get(base_url + path, auth=(user, password)).text
    report = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert tuple(report.columns) == SETTLEMENT_DETAIL_COLUMNS
    assert report["Type"].tolist() == ["Settled", "Chargeback", "Settled", "MerchantPayout"]
    chargeback = report.iloc[1]
    assert (chargeback["Psp Reference"], chargeback["Modification Reference"]) == (CH1, DISPUTE)
    money = ("Gross Currency", "Gross Debit (GC)", "Gross Credit (GC)", "Net Debit (NC)", "Commission (NC)")
    assert tuple(chargeback[c] for c in money) == ("EUR", "100.50", "", "115.50", "15.00")
    assert (chargeback["Creation Date"], chargeback["TimeZone"]) == ("2026-01-01 21:00:00", "CET")
    batch = parse_settlement_report(text, "batch_1.csv", MERCHANT, 1)
    payout = payouts_of([batch])
    assert [(p.amount_minor, p.currency) for p in payout] == [(10_050 - 300 + 20_000 - 10_050 - 1_500, "EUR")]
    assert batch.batch_lines == ()


def test_batch_lines_that_are_no_movement_are_counted_in_the_log_once(
    simulator_server: tuple[ServerThread, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Batch 1 holds a payment, the batch's transaction fees and a deposit correction: the night gets the
    payment alone, and the log counts the other lines once, when the batch is first read."""
    server, current = simulator_server
    common = {"Merchant Account": MERCHANT, "TimeZone": "CET", "Batch Number": "1", "Net Currency": "EUR"}
    report = csv_text(
        [
            {**common, "Psp Reference": CH1, "Creation Date": "2026-01-01 11:00:00", "Type": "Settled",
             "Modification Reference": CH1, "Gross Currency": "EUR", "Gross Credit (GC)": "100.00"},
            {**common, "Creation Date": "2026-01-05 06:00:00", "Type": "Fee",
             "Modification Reference": "Transaction Fees", "Net Debit (NC)": "0.40"},
            {**common, "Creation Date": "2026-01-05 06:00:00", "Type": "DepositCorrection",
             "Modification Reference": "Deposit Correction", "Net Debit (NC)": "5.00"},
            {**common, "Creation Date": "2026-01-05 07:00:00", "Type": "MerchantPayout",
             "Modification Reference": "TX1", "Net Debit (NC)": "94.60"},
        ]
    ).encode()  # fmt: skip

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        found = scope["path"].endswith("/settlement_detail_report_batch_1.csv")
        await send({"type": "http.response.start", "status": 200 if found else 404, "headers": []})
        await send({"type": "http.response.body", "body": report if found else b"HTTP Status 404"})

    current.app = app
    try:
        with ProviderHttp(server.base_url, retry=FAST_RETRY, max_rps=float("inf")) as http:
            client = AdyenClient(http, KEY)
            with caplog.at_level(logging.INFO, logger="recon_pipeline.providers.adyen.client"):
                assert rows(client.pull_claimed(ACCOUNT, *NIGHT)) == {(CH1, "payment", 10_000, "EUR")}
                client.pull_claimed(ACCOUNT, *NIGHT)
    finally:
        current.app = None
    counted = [r.getMessage() for r in caplog.records if "no property-night movement" in r.getMessage()]
    assert counted == [
        f"merchant account {MERCHANT!r}, settlement batch 1: lines that are no property-night movement, "
        "kept with the batch's payout: 1 DepositCorrection, 1 Fee"
    ]
