"""A night whose folio holds cash, bank transfers and OTA-collected money beside the cards, for the tests of
the night's takings through the batch path and on the review desk's night page.

Rome (``pms_night.PROPERTY``: EUR, its own Stripe connected account, fees booked per payout). The PMS
writes tenders and card types its own way (``Cash``, ``BankTransfer``, ``ota collect``; ``VA``, ``VI``,
``MC``), as OPERA and Apaleo do. What each row is for is said beside it; the figures a night auditor
compares by hand are stated once (``TENDERS``, ``BRANDS``), with the findings each brand's difference is
made of (``BRAND_FINDINGS``), so a test reads them, never works them out again.
"""

from __future__ import annotations

from typing import Final

from recon_pipeline_tests.support.pms_night import NIGHT, PmsNight

NIGHT_TEXT: Final = NIGHT.isoformat()

# The ledger's takings per tender: (tender, currency) -> (entries, sum in minor units).
TENDERS: Final = {
    ("card", "EUR"): (5, 24_200),  # le_v1, le_v1r, le_v3, le_mc, le_p1
    ("cash", "EUR"): (2, 15_550),
    ("bank_transfer", "EUR"): (1, 48_000),
    ("ota_collect", "EUR"): (1, 21_500),
    ("not_recorded", "EUR"): (2, 7_500),  # le_v2, le_u
}
# The cards per brand: (brand, currency) -> (PMS entries, PMS sum, provider records, provider sum).
BRANDS: Final = {
    ("amex", "EUR"): (0, 0, 1, 4_250),
    ("mastercard", "EUR"): (1, 7_700, 1, 7_700),
    ("visa", "EUR"): (5, 21_500, 4, 19_000),
    ("unknown", "EUR"): (1, 2_500, 0, 0),
}
# The findings of the night, by brand: what each brand's difference is made of (category, record_key).
BRAND_FINDINGS: Final = {
    "amex": {("missing_in_ledger", "ch_ax:payment")},
    "visa": {("missing_at_provider", "entry:le_p1"), ("amount_mismatch", "ch_v3:payment")},
    "unknown": {("missing_at_provider", "entry:le_u")},
}


def build_takings_night() -> PmsNight:
    """The night: 6 charges and a refund at Stripe; 14 folio postings, 4 of them neither card nor the
    provider's, one the next night's and one the provider's fees of a payout."""
    night = PmsNight()
    c, p = night.charge, night.post
    # Visa: keyed by the charge's id, the PMS's two-letter code and its own spellings; one refund.
    c("ch_v1", 1.0, 10_000, "BK-V1", ("visa", "4000", "V1V1V1"))
    p("le_v1", 1.1, 10_000, tender="card", brand="VA", record="ch_v1", booking="BK-V1")
    night.refund("re_v1", "ch_v1", 60, 2_000)
    p("le_v1r", 2.2, -2_000, tender="Card", brand="VA", record="re_v1", booking="BK-V1", kind="refund")
    c("ch_v2", 3.0, 5_000, "BK-V2", ("visa", "4001", "V2V2V2"))
    p("le_v2", 3.1, 5_000, tender=None, brand="Visa", record="ch_v2", booking="BK-V2")  # no tender
    # Visa, planted: an amount booked 5.00 short, and a posting Stripe never saw (OPERA's VI)
    c("ch_v3", 4.0, 6_000, "BK-V3", ("visa", "4002", "V3V3V3"))
    p("le_v3", 4.1, 5_500, tender="card", brand="VISA", record="ch_v3", booking="BK-V3")
    p("le_p1", 5.0, 3_000, tender="card", brand="VI", booking="BK-P1")
    # Mastercard: both sides agree
    c("ch_mc", 6.0, 7_700, "BK-MC", ("mastercard", "5000", "MC0001"))
    p("le_mc", 6.1, 7_700, tender="CARD", brand="MC", record="ch_mc", booking="BK-MC")
    # Amex, planted: nobody posted it
    c("ch_ax", 7.0, 4_250, "BK-AX", ("amex", "3700", "AX0001"))
    # a posting of no tender and no card that Stripe never saw: brand unknown
    p("le_u", 8.0, 2_500, booking="BK-U")
    # the takings the provider never sees: no finding, no proposal, counted per tender
    p("le_cash1", 9.0, 12_000, tender="Cash", booking="BK-C1")
    p("le_cash2", 9.5, 3_550, tender="CASH", booking="BK-C2")
    p("le_bank", 10.0, 48_000, tender="BankTransfer", booking="BK-B1")
    p("le_ota", 11.0, 21_500, tender="ota collect", booking="BK-O1")
    # not the night's takings: the next night's cash, the provider's fees of a payout (booked per payout)
    p("le_cash_next", 25.0, 9_900, tender="cash", booking="BK-C3")
    p("le_fees", 12.0, -1_234, record="po_rome_1129", kind="fee")
    return night
