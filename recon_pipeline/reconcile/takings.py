"""The night's takings by tender: what the provider may hold, and what it never sees.

A folio's cash, bank transfers, vouchers and OTA-collected money never pass through the provider, so they
are set aside before anything is compared with it (``tenders.is_provider_tender``): no finding, no
proposal, no candidate of any match. They are still the hotel's takings, and the night counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from recon_pipeline.tenders import CARD


@dataclass(frozen=True)
class Tendered:
    """A night's valid ledger entries split by whether the provider may hold them."""

    provider: pd.DataFrame  # tender card or not recorded: compared with the provider
    others: pd.DataFrame  # every other tender: counted, never compared


def by_tender(ledger: pd.DataFrame) -> Tendered:
    """Split validated entries (``tender`` in the vocabulary or null) by the provider's tenders."""
    if "tender" not in ledger.columns:
        return Tendered(ledger, ledger.iloc[0:0])
    tender = ledger["tender"].to_numpy(dtype=object)
    theirs = pd.isna(tender) | (tender == CARD)
    if theirs.all():
        return Tendered(ledger, ledger.iloc[0:0])
    return Tendered(
        ledger[theirs].reset_index(drop=True), ledger[~np.asarray(theirs, dtype=bool)].reset_index(drop=True)
    )
