"""The demo's three properties: three timezones, three currencies (one zero-decimal), both attributions."""

from __future__ import annotations

from recon_pipeline.ledger.queries import PropertyRow

DEMO_PROPERTIES = (
    PropertyRow("lisbon-riverside", "Lisbon Riverside Suites", "Europe/Lisbon", "EUR", "00:00", None),
    PropertyRow("kyoto-gion", "Kyoto Gion Ryokan", "Asia/Tokyo", "JPY", "00:00", "acct_1KyotoGion"),
    PropertyRow("denver-lodge", "Denver Mountain Lodge", "America/Denver", "USD", "03:00", None),
)
