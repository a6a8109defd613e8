"""The demo's three properties: three timezones, three currencies (one zero-decimal), both attributions."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class DemoProperty:
    property_id: str
    name: str
    timezone: str
    currency: str
    night_cutoff: str
    provider_account: str | None

    def row(self) -> dict[str, Any]:
        return asdict(self)


DEMO_PROPERTIES = (
    DemoProperty("lisbon-riverside", "Lisbon Riverside Suites", "Europe/Lisbon", "EUR", "00:00", None),
    DemoProperty("kyoto-gion", "Kyoto Gion Ryokan", "Asia/Tokyo", "JPY", "00:00", "acct_1KyotoGion"),
    DemoProperty("denver-lodge", "Denver Mountain Lodge", "America/Denver", "USD", "03:00", None),
)
