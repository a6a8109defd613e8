"""The provider registry: ``RECON_PROVIDER``'s value -> the ``Provider`` implementing it (``interface.py``).

Adding a provider is one folder under ``providers/`` and one line here.
"""

from __future__ import annotations

from recon_pipeline.providers.adyen import PROVIDER as ADYEN
from recon_pipeline.providers.interface import Provider

PROVIDERS: dict[str, Provider] = {
    ADYEN.name: ADYEN,
}
