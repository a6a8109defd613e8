"""How a guest paid (``ledger_entries.tender``): the vocabulary, and which tenders the provider sees.

A folio holds cash, bank transfers, vouchers and money an OTA collected beside the cards. Only a card goes
through the provider, so only an entry whose tender is ``card`` or not recorded (NULL: it may be the
provider's) is compared with the provider's records; every other tender is counted on the night's takings
and never becomes a provider finding or proposal (docs/design.md, "Ledgers as PMSs keep them"). The column
is read case-insensitively, blanks, hyphens and underscores aside (``BankTransfer``, ``bank transfer`` and
``BANK_TRANSFER`` are ``bank_transfer``); a value outside the vocabulary is input the contract forbids (an
``invalid_ledger_entry`` naming the row).
"""

from __future__ import annotations

from typing import Final

CARD: Final = "card"
CASH: Final = "cash"
BANK_TRANSFER: Final = "bank_transfer"
OTA_COLLECT: Final = "ota_collect"
VOUCHER: Final = "voucher"
OTHER: Final = "other"
TENDERS: Final = (CARD, CASH, BANK_TRANSFER, OTA_COLLECT, VOUCHER, OTHER)
NOT_RECORDED: Final = "not_recorded"  # how a NULL tender is named in the night's takings

_BY_FOLDED: Final = {tender.replace("_", ""): tender for tender in TENDERS}


def tender_of(raw: object) -> str | None:
    """The tender ``raw`` names in the vocabulary; None for NULL or blank (not recorded).

    ValueError naming the value when it is text outside the vocabulary, or not text at all."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ValueError(f"tender {str(raw)[:40]!r} is not text")
    folded = "".join(ch for ch in raw.lower() if ch not in " -_\t")
    if not folded:
        return None
    tender = _BY_FOLDED.get(folded)
    if tender is None:
        raise ValueError(f"unknown tender {raw[:40]!r}; expected one of {', '.join(TENDERS)}")
    return tender


def is_provider_tender(tender: str | None) -> bool:
    """Whether an entry of this (read) tender may be the provider's: a card, or not recorded."""
    return tender is None or tender == CARD
