"""A night's two sides as a PMS keeps them, for the matcher: records and entries with cards, approval codes
and references (the optional columns of the frame contracts), built on night_frames' rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.reconcile.matching import MatchOutcome
from recon_pipeline_tests.support.night_frames import entry, record

CARD_COLUMNS = ("card_brand", "card_last4", "approval_code")


def charge(
    record_id: str,
    kind: str = "payment",
    amount: int = 10_000,
    booking: str | None = "bk_1",
    *,
    card: str | None = None,
    approval: str | None = None,
    minute: int = 60,
    currency: str = "EUR",
    status: str = "succeeded",
    charge_id: str | None = None,
    intent: str | None = None,
    settled_as: tuple[int, str] | None = None,
) -> dict[str, Any]:
    """A provider record with its card (``"visa 4242"``: brand and last four) and approval code."""
    brand, last4 = card.split() if card else (None, None)
    row = record(record_id, kind, amount, currency, status, booking, charge_id, minute)
    return row | {
        "payment_intent_id": intent,
        "settlement_amount_minor": settled_as[0] if settled_as else None,
        "settlement_currency": settled_as[1] if settled_as else None,
        "card_brand": brand,
        "card_last4": last4,
        "approval_code": approval,
    }


def posting(
    entry_id: str,
    kind: str = "payment",
    amount: int = 10_000,
    booking: str | None = "bk_1",
    *,
    record_id: str | None = None,
    card: str | None = None,
    approval: str | None = None,
    reference: str | None = None,
    minute: int = 65,
    in_night: bool = True,
    currency: str = "EUR",
    group: str | None = None,
    tender: str | None = None,
) -> dict[str, Any]:
    """A ledger entry as a PMS posts it: by default without the provider's id; its card as the PMS wrote
    it (``"VISA **** 4242"``: the brand, then the rest); ``group`` is its booking's group."""
    brand, last4 = card.split(maxsplit=1) if card else (None, None)
    row = entry(entry_id, record_id, kind, amount, currency, in_night, minute, booking)
    return row | {
        "card_brand": brand,
        "card_last4": last4,
        "approval_code": approval,
        "reference": reference,
        "group_id": group,
        "tender": tender,
    }


def _frame(
    rows: tuple[dict[str, Any], ...], contract: dict[str, str], extra: tuple[str, ...]
) -> pd.DataFrame:
    columns = list(contract) + [name for name in extra if name not in contract]
    frame = pd.DataFrame(list(rows), columns=columns).astype(contract)
    return frame.astype({name: "object" for name in extra if name not in contract})


def pull(*rows: dict[str, Any]) -> pd.DataFrame:
    """Provider records (with the optional card columns, even when no row has them)."""
    return _frame(rows, PROVIDER_RECORD_COLUMNS, CARD_COLUMNS)


def folio(*rows: dict[str, Any]) -> pd.DataFrame:
    """Ledger entries (with the card and reference columns, even when no row has them)."""
    return _frame(rows, LEDGER_RECORD_COLUMNS, (*CARD_COLUMNS, "reference"))


def matched(outcome: MatchOutcome) -> list[tuple[str, str, str]]:
    """(match_key, rule, status) of every match and suggestion, sorted."""
    frame = outcome.matches
    return sorted(zip(frame["match_key"], frame["rule"], frame["status"], strict=True))


def night(outcome: MatchOutcome) -> list[tuple[str, str]]:
    """(category, record_key) of the night's findings: the matcher's, and the diff's of what it hands on."""
    diff = diff_night(outcome.provider_records, outcome.ledger).findings
    both = pd.concat([outcome.findings, diff], ignore_index=True)
    return sorted(zip(both["category"], both["record_key"], strict=True))


def pms_night(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[str, str]]]:
    """One night of a hotel whose PMS never learns the provider's id, and the findings planted in it.

    46 card payments (a deposit and a balance of one booking, identical twins of another, a split folio,
    a terminal posting without booking, one posting naming the charge in its reference, one posted after
    midnight) and a refund; planted: three payments nobody posted, a posting the provider never saw, an
    amount off by 5.00, and look-alikes (two charges of one amount on one card for two bookings, with a
    posting of a third booking) that must not be paired. Returns (pull, folio, planted findings).
    """
    rng = np.random.default_rng(seed)
    brands = ("visa", "mastercard", "amex")
    charges, postings = [], []
    amounts = 5_000 + 1_300 * rng.permutation(46)
    for i in range(46):
        booking = {11: "R-1010", 21: "R-1020", 44: "R-3001", 45: "R-3002"}.get(i, f"R-{1000 + i}")
        amount = int(amounts[i])
        brand, last4 = brands[int(rng.integers(3))], f"{int(rng.integers(10_000)):04d}"
        if i in (20, 21):
            amount, brand, last4 = 18_000, "visa", "1881"
        if i in (44, 45):
            amount, brand, last4 = 25_000, "visa", "4242"
        approval = f"{int(rng.integers(1_000_000)):06d}"
        minute = 1_435 if i == 39 else 30 + i * 30
        charges.append(
            charge(
                f"ch_{i:03d}",
                amount=amount,
                booking=booking,
                card=f"{brand} {last4}",
                approval=approval,
                minute=minute,
            )
        )
        if i in (40, 41, 42, 45):
            continue  # nobody posted it (45: the look-alike of 44)
        posted = minute + int(rng.integers(2, 20))
        keys = {
            "booking": booking,
            "card": f"{brand.upper()} XXXX{last4}",
            "approval": approval if i % 5 else None,
            "minute": posted,
        }
        if i == 30:  # a split folio: deposit and balance against one charge
            postings.append(posting(f"le_{i:03d}a", amount=amount - 4_000, **keys))
            postings.append(posting(f"le_{i:03d}b", amount=4_000, **keys | {"minute": posted + 1}))
            continue
        if i == 31:  # the terminal posts without a booking (nor approval code)
            keys |= {"booking": None, "approval": None}
        if i == 32:  # the reference names the charge; nothing else is known
            keys |= {"booking": None, "card": None, "approval": None}
            postings.append(posting(f"le_{i:03d}", amount=amount, reference=f"Stripe ch_{i:03d}", **keys))
            continue
        if i == 39:  # posted after midnight: tomorrow's ledger
            keys |= {"minute": 3, "approval": approval}
            postings.append(posting(f"le_{i:03d}", amount=amount, in_night=False, **keys))
            continue
        if i == 43:  # planted: posted 5.00 short
            keys |= {"approval": approval}
            amount -= 500
        postings.append(posting(f"le_{i:03d}", amount=amount, **keys))
    charges.append(charge("re_001", "refund", -2_500, booking="R-1005", charge_id="ch_005", minute=1_300))
    postings.append(posting("le_r01", "refund", -2_500, booking="R-1005", minute=1_310))
    postings.append(posting("le_x01", amount=12_300, booking="R-2000", card="VISA XXXX0001", minute=700))
    postings.append(posting("le_y01", amount=25_000, booking="R-3003", card="VISA XXXX4242", minute=1_340))
    planted = [
        ("amount_mismatch", "ch_043:payment"),
        ("missing_at_provider", "entry:le_x01"),
        ("missing_at_provider", "entry:le_y01"),
        ("missing_in_ledger", "ch_040:payment"),
        ("missing_in_ledger", "ch_041:payment"),
        ("missing_in_ledger", "ch_042:payment"),
        ("missing_in_ledger", "ch_045:payment"),
    ]
    return pull(*charges), folio(*postings), planted
