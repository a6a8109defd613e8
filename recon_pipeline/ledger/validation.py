"""Ledger entries the contract forbids become findings, not failures: pure, so it is tested without a DB.

The PMS writes ``ledger_entries`` with no check of ours. One row with an unknown kind, a currency that is no
ISO 4217 code or an amount beyond ±10^11 minor units used to fail the diff of its night and of both
neighbours (which read it as adjacent-night context), and an absurd amount proposed an absurd correction.
Here each such row becomes one ``invalid_ledger_entry`` finding naming it, reported in the night it was
posted in only; it never reaches the diff, so it proposes nothing, counts in no total, and the rest of the
night reconciles as usual.

"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

from recon_pipeline.categories import FINDING_COLUMNS, INVALID_LEDGER_ENTRY, KINDS, finding_frame
from recon_pipeline.frames import SCOPE
from recon_pipeline.ledger.records import LEDGER_RECORD_COLUMNS
from recon_pipeline.money import MAX_AMOUNT_MINOR, is_contract_amount, is_iso_currency
from recon_pipeline.tenders import TENDERS

LEDGER_KINDS: Final = KINDS  # every kind the contract allows, and the diff reconciles them all

# Offending values are shown cut to a few dozen characters, escaped as Python literals: a megabyte of text
# or a control character in a PMS column must not flood or break a report, a log line or a CSV cell.
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 40


@dataclass(frozen=True)
class LedgerSplit:
    """A night's ledger entries as the diff takes them, and the rows it must not take."""

    valid: pd.DataFrame  # LEDGER_RECORD_COLUMNS dtypes: the entries the diff takes
    invalid: pd.DataFrame  # FINDING_COLUMNS: one invalid_ledger_entry finding per in-night invalid row


def split_ledger_records(raw: pd.DataFrame) -> LedgerSplit:
    """Split the rows :func:`~recon_pipeline.ledger.queries.load_ledger_records` read (amounts unchecked).

    A row is invalid when its kind is missing or not a contract kind, its amount is missing, not an
    integer or beyond ±MAX_AMOUNT_MINOR, its currency is missing or no ISO 4217 code (after the upper
    casing done on read), or its tender is outside the vocabulary (``tenders.py``, read on load). Invalid
    rows of the adjacent nights are dropped without a finding: their own night reports them.
    """
    known_kind = raw["kind"].isin(LEDGER_KINDS).to_numpy()
    good_amount = np.fromiter(map(is_contract_amount, raw["amount_minor"].tolist()), bool, len(raw))
    good_currency = np.fromiter(map(is_iso_currency, raw["currency"].tolist()), bool, len(raw))
    good_tender = raw["tender"].isin(TENDERS).to_numpy() | raw["tender"].isna().to_numpy()
    valid = known_kind & good_amount & good_currency & good_tender
    in_night = raw["in_night"].to_numpy(dtype=bool)
    # Only the columns read loosely change dtype (amount_minor): casting the others copies them for nothing.
    loose = {name: dtype for name, dtype in LEDGER_RECORD_COLUMNS.items() if raw.dtypes[name] != dtype}
    return LedgerSplit(
        valid=raw[valid].astype(loose).reset_index(drop=True),
        invalid=_findings(raw[~valid & in_night]),
    )


def _findings(rows: pd.DataFrame) -> pd.DataFrame:
    """One invalid_ledger_entry finding per row: record_key ``entry:<entry_id>``, every problem named."""
    columns: dict[str, list[Any]] = {name: [] for name in FINDING_COLUMNS}
    for row in rows.to_dict("records"):
        kind, amount, currency, tender = row["kind"], row["amount_minor"], row["currency"], row["tender"]
        entry_id = row["entry_id"]
        columns["category"].append(INVALID_LEDGER_ENTRY)
        columns["record_key"].append(f"entry:{entry_id}")
        columns["kind"].append(kind if kind in LEDGER_KINDS else None)
        columns["provider_record_id"].append(_or_none(row["provider_record_id"]))
        columns["ledger_entry_id"].append(entry_id)
        columns["booking_id"].append(_or_none(row["booking_id"]))
        columns["provider_amount_minor"].append(None)
        # The amount as posted when it fits the column at all (int64); the finding asserts no difference.
        columns["ledger_amount_minor"].append(amount if _is_int64(amount) else None)
        columns["difference_minor"].append(0)
        columns["currency"].append(currency if is_iso_currency(currency) else "")
        columns["ledger_currency"].append(None)  # null: the currency may be what is wrong (the detail says)
        columns["detail"].append(
            f"ledger entry {_SHOWN.repr(entry_id)} is invalid: "
            + "; ".join(_problems(kind, amount, currency, tender))
        )
    found = finding_frame(columns)
    if SCOPE in rows.columns:  # a batch's rows at once: each finding keeps its night
        found[SCOPE] = rows[SCOPE].to_numpy()
    return found


def _problems(kind: Any, amount: Any, currency: Any, tender: Any) -> list[str]:
    """What is wrong with a row, each with the offending value, truncated and escaped."""
    problems = []
    if _missing(kind):
        problems.append("kind is missing")
    elif kind not in LEDGER_KINDS:
        problems.append(f"unknown kind {_SHOWN.repr(kind)}")
    if _missing(amount):
        problems.append("amount_minor is missing")
    elif not is_contract_amount(amount):
        problems.append(
            f"amount_minor {_SHOWN.repr(amount)} is not an integer within ±{MAX_AMOUNT_MINOR:,} minor units"
        )
    if _missing(currency):
        problems.append("currency is missing")
    elif not is_iso_currency(currency):
        problems.append(f"currency {_SHOWN.repr(currency)} is not an ISO 4217 code")
    if not _missing(tender) and tender not in TENDERS:
        problems.append(f"unknown tender {_SHOWN.repr(tender)} (expected one of {', '.join(TENDERS)})")
    return problems


def _missing(value: Any) -> bool:
    return _or_none(value) is None or value == ""


def _or_none(value: Any) -> Any:
    return None if value is None or pd.isna(value) else value


def _is_int64(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
