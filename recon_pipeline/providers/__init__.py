"""The provider registry: ``RECON_PROVIDER``'s value -> the ``Provider`` implementing it (``interface.py``).

Adding a provider is one folder under ``providers/`` and one line here. Nothing outside ``providers/``
imports a provider package: it asks the registry by name (the configured one) and talks to the ``Provider``
and its ``ProviderClient``.
"""

from __future__ import annotations

from recon_pipeline.errors import ConfigError
from recon_pipeline.providers.adyen import PROVIDER as ADYEN
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.interface import ClientSettings, Provider, ProviderClient
from recon_pipeline.providers.razorpay import PROVIDER as RAZORPAY
from recon_pipeline.providers.stripe import PROVIDER as STRIPE

PROVIDERS: dict[str, Provider] = {
    STRIPE.name: STRIPE,
    RAZORPAY.name: RAZORPAY,
    ADYEN.name: ADYEN,
}
PROVIDER_NAMES: tuple[str, ...] = tuple(PROVIDERS)


def provider_named(name: str) -> Provider:
    """The registered provider called ``name``, else a ConfigError naming the value and the choices."""
    try:
        return PROVIDERS[name]
    except KeyError:
        choices = ", ".join(PROVIDER_NAMES)
        raise ConfigError(f"no provider is called {name[:40]!r}; one of {choices}") from None


def build_client(
    name: str, http: ProviderHttp, settings: ClientSettings | None = None
) -> ProviderClient:
    """The client of the provider called ``name`` over ``http`` (which holds the base URL, key, rate and
    retry bounds); ``settings`` carries provider-specific options (none: each provider's defaults)."""
    return provider_named(name).client(http, settings or ClientSettings("", None, {}))
