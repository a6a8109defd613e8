"""The demo's properties: for Stripe three timezones, three currencies (one zero-decimal), both attributions;
for Razorpay one Indian property in INR."""

from __future__ import annotations

from recon_pipeline.ledger.queries import PropertyRow

DEMO_PROPERTIES = (
    PropertyRow("lisbon-riverside", "Lisbon Riverside Suites", "Europe/Lisbon", "EUR", "00:00", None),
    PropertyRow("kyoto-gion", "Kyoto Gion Ryokan", "Asia/Tokyo", "JPY", "00:00", "acct_1KyotoGion"),
    PropertyRow("denver-lodge", "Denver Mountain Lodge", "America/Denver", "USD", "03:00", None),
)

# A Razorpay deployment's property (RECON_PROVIDER=razorpay): INR in paise, attributed by notes.property_id.
DEMO_RAZORPAY_PROPERTIES = (
    PropertyRow("mumbai-marine", "Mumbai Marine Drive Hotel", "Asia/Kolkata", "INR", "00:00", None),
)
DEMO_PROPERTIES_BY_FLAVOUR = {"stripe": DEMO_PROPERTIES, "razorpay": DEMO_RAZORPAY_PROPERTIES}

# The demo analyst's unexplained-amount thresholds (``recon discrepancies threshold``), in minor units and
# of a similar size in money, about US$6,000-11,000 a night: the default of 1,000,000 minor units suits
# cents and yen, but is only ₹10,000 in paise, well below one demo night's planted findings (≈ ₹2,00,000).
# ``recon demo`` inserts them once; a threshold an analyst set since is kept.
DEMO_THRESHOLDS_MINOR = {
    "lisbon-riverside": 1_000_000,  # €10,000
    "kyoto-gion": 1_000_000,  # ¥1,000,000
    "denver-lodge": 1_000_000,  # $10,000
    "mumbai-marine": 50_000_000,  # ₹5,00,000
}
