"""The provider's records as a finding's page shows them: one row per money movement, its fee folded in.

The provider-record frame (``providers/records.py``) carries a movement's fee as a ``fee`` row of its own
under the movement's id, because the ledger books fees apart. A person reading the provider's side wants
the movement as the provider's dashboard shows it: its amount, the fee taken on it and what is left (net).
So each ``fee`` row is folded into the movement of the same id (the payment, or the dispute whose fee it
is): ``fee_minor`` is the fees' sum (negative, as the ledger signs them), ``net_minor`` the amount plus it.
A movement without a fee row has neither (the provider took none, or has not said yet); a fee row whose
movement is not among the rows (a fee settled on another night) stays a ``fee`` row of its own.

Pure, and plain Python: a night's findings name a few dozen records, for which pandas' fixed cost per
operation would be most of the work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

FEE: Final = "fee"
# Which movement of an id takes its fee when several share the id (a dispute and its reversal): the first.
_FEE_HOLDERS: Final = ("payment", "dispute", "refund", "dispute_reversal")


def folded_records(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``records`` (provider-record rows) one per (id, kind) but ``fee`` (the last row of a key wins), each
    with ``fee_minor`` and ``net_minor`` (None when no fee row); a fee row whose id has no movement stays."""
    by_key: dict[tuple[str, str], Mapping[str, Any]] = {}
    for row in records:
        by_key[(str(row["provider_record_id"]), str(row["kind"]))] = row
    fees: dict[str, int] = {}
    movements: dict[str, list[dict[str, Any]]] = {}
    for (record_id, kind), row in by_key.items():
        if kind == FEE:
            fees[record_id] = fees.get(record_id, 0) + int(row["amount_minor"])
        else:
            movements.setdefault(record_id, []).append({**row, "fee_minor": None, "net_minor": None})
    folded: list[dict[str, Any]] = []
    for record_id, rows in movements.items():
        if record_id in fees:
            holder = min(rows, key=_holder_rank)
            holder["fee_minor"] = fees[record_id]
            holder["net_minor"] = int(holder["amount_minor"]) + fees[record_id]
        folded.extend(rows)
    folded.extend(
        {**row, "fee_minor": None, "net_minor": None}
        for (record_id, kind), row in by_key.items()
        if kind == FEE and record_id not in movements
    )
    return folded


def _holder_rank(row: Mapping[str, Any]) -> int:
    kind = str(row["kind"])
    return _FEE_HOLDERS.index(kind) if kind in _FEE_HOLDERS else len(_FEE_HOLDERS)
