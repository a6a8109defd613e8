"""A record's link to its provider's dashboard (``providers/<name>/dashboard.py``, through
``ProviderClient.dashboard_url``): the URL shape each provider documents, built by a client of the
provider's own API; a client of any other address (a simulator) links nowhere."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from recon_pipeline.providers import PROVIDERS, build_client
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import ClientSettings, ProviderClient, RecordAddress

pytestmark = pytest.mark.fast

PAYMENT = RecordAddress("ch_3Q", "payment", "ch_3Q", None)
CONNECTED_REFUND = RecordAddress("re_9", "refund", "ch_3Q", "acct_1AB")
KEYS = {"stripe": "sk_live_x", "razorpay": "rzp_live_x:secret", "adyen": "ws@Company.X:secret"}


@pytest.fixture
def http() -> Iterator[ProviderHttp]:
    with ProviderHttp("http://127.0.0.1:9") as client:  # never asked: a link is built, not fetched
        yield client


def client(
    http: ProviderHttp, name: str, base_url: str | None = None, key: str | None = None
) -> ProviderClient:
    root = base_url or PROVIDERS[name].public_api_root
    return build_client(name, http, ClientSettings(root, key or KEYS[name], {}))


def test_stripe_links_the_charges_payment_page_under_its_account_and_mode(http: ProviderHttp) -> None:
    live = client(http, "stripe")
    assert live.dashboard_url(PAYMENT) == "https://dashboard.stripe.com/payments/ch_3Q"
    assert live.dashboard_url(CONNECTED_REFUND) == "https://dashboard.stripe.com/acct_1AB/payments/ch_3Q"
    test = client(http, "stripe", key="sk_test_x")
    assert test.dashboard_url(PAYMENT) == "https://dashboard.stripe.com/test/payments/ch_3Q"
    assert test.dashboard_url(CONNECTED_REFUND) == "https://dashboard.stripe.com/acct_1AB/test/payments/ch_3Q"


def test_razorpay_links_the_payments_page(http: ProviderHttp) -> None:
    razorpay = client(http, "razorpay")
    refund = RecordAddress("rfnd_1", "refund", "pay_29Q", None)
    assert razorpay.dashboard_url(refund) == "https://dashboard.razorpay.com/app/payments/pay_29Q"


def test_adyen_links_the_payment_details_in_the_customer_area_of_its_environment(http: ProviderHttp) -> None:
    live = client(http, "adyen")
    psp = RecordAddress("8815", "payment", "8815", "HotelEU")
    assert live.dashboard_url(psp) == (
        "https://ca-live.adyen.com/ca/ca/accounts/showTx.shtml"
        "?pspReference=8815&txType=Payment&accountKey=MerchantAccount.HotelEU"
    )
    test = client(http, "adyen", base_url="https://ca-test.adyen.com/")
    no_account = RecordAddress("8816", "refund", "8815", None)
    assert test.dashboard_url(no_account) == (
        "https://ca-test.adyen.com/ca/ca/accounts/showTx.shtml?pspReference=8815&txType=Payment"
    )


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_a_simulators_client_has_no_dashboard(http: ProviderHttp, name: str) -> None:
    assert client(http, name, base_url="http://127.0.0.1:8111").dashboard_url(PAYMENT) is None


def test_an_id_is_quoted_into_the_path() -> None:
    with ProviderHttp("http://127.0.0.1:9") as http:
        odd = RecordAddress("ch/../x", "payment", "ch/../x", None)
        assert (
            client(http, "stripe").dashboard_url(odd) == "https://dashboard.stripe.com/payments/ch%2F..%2Fx"
        )
