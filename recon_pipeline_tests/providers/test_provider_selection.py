"""RECON_PROVIDER / RECON_PROVIDER_FLAVOUR pick the API the pipeline speaks, and bad settings are one-line
configuration errors that never show the key."""

from __future__ import annotations

import pytest

from recon_pipeline.defs.resources import ProviderResource
from recon_pipeline.errors import ConfigError
from recon_pipeline.providers.razorpay.client import RazorpayAdapter
from recon_pipeline.providers.settings import provider_settings
from recon_pipeline.providers.stripe.client import StripeAdapter


@pytest.fixture(autouse=True)
def clean_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "RECON_PROVIDER",
        "RECON_PROVIDER_FLAVOUR",
        "RECON_PROVIDER_BASE_URL",
        "RECON_PROVIDER_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


def test_flavour_follows_the_provider_and_the_simulator_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert provider_settings("stripe", api_key="sk_live_x").flavour == "stripe"
    razorpay = provider_settings("razorpay", api_key="rzp_live_id:secret")
    assert (razorpay.flavour, razorpay.base_url) == ("razorpay", "https://api.razorpay.com")
    assert "secret" not in repr(razorpay)
    assert provider_settings("simulator", base_url="http://127.0.0.1:1").flavour == "stripe"
    monkeypatch.setenv("RECON_PROVIDER_FLAVOUR", "razorpay")
    assert provider_settings("simulator", base_url="http://127.0.0.1:1").flavour == "razorpay"
    monkeypatch.setenv("RECON_PROVIDER", "stripe")  # a real provider speaks its own API
    assert provider_settings(api_key="sk_live_x").flavour == "stripe"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"kind": "razorpay", "api_key": "rzp_live_only_an_id"}, "key_id:key_secret"),
        (
            {"kind": "simulator", "base_url": "http://127.0.0.1:1", "flavour": "paypal"},
            "RECON_PROVIDER_FLAVOUR",
        ),
        ({"kind": "razorpay"}, "needs RECON_PROVIDER_API_KEY"),
    ],
)
def test_bad_provider_settings_are_config_errors(arguments: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        provider_settings(**arguments)
    assert "rzp_live_only_an_id" not in str(caught.value)


def test_the_resource_yields_the_flavours_adapter() -> None:
    for flavour, adapter_type in (("stripe", StripeAdapter), ("razorpay", RazorpayAdapter)):
        resource = ProviderResource(provider="simulator", flavour=flavour, base_url="http://127.0.0.1:1")
        assert type(resource.adapter()) is adapter_type
