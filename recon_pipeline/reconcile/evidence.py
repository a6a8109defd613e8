"""The provider's records as a finding's page shows them: one row per money movement, its fee folded in.

The provider-record frame (``providers/records.py``) carries a movement's fee as a ``fee`` row of its own
under the movement's id, because the ledger books fees apart. A person reading the provider's side wants
the movement as the provider's dashboard shows it: its amount, the fee taken on it and what is left (net).
So each ``fee`` row is folded into the movement of the same id (the payment, or the dispute whose fee it
is): ``fee_minor`` is the fees' sum (negative, as the ledger signs them), ``net_minor`` the amount plus it.
A movement without a fee row has neither (the provider took none, or has not said yet); a fee row whose
movement is not in the frame (a fee settled on another night) stays a ``fee`` row of its own.

Pure: frames in, a frame out.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

import pandas as pd

FEE: Final = "fee"
# Which movement of an id takes its fee when several share the id (a dispute and its reversal): the first.
_FEE_HOLDERS: Final = ("payment", "dispute", "refund", "dispute_reversal")


def folded_records(records: pd.DataFrame, record_ids: Collection[str]) -> pd.DataFrame:
    """The movements of ``records`` whose ``provider_record_id`` is one of ``record_ids``, one row per
    (id, kind) but ``fee``, with ``fee_minor`` and ``net_minor`` (nullable Int64); the frame's other columns
    as they were."""
    named = records[records["provider_record_id"].isin(list(record_ids))]
    named = named.drop_duplicates(["provider_record_id", "kind"], keep="last")
    is_fee = named["kind"] == FEE
    fees = named.loc[is_fee].groupby("provider_record_id")["amount_minor"].sum()
    movements = named.loc[~is_fee].copy()
    rank = movements["kind"].map({kind: at for at, kind in enumerate(_FEE_HOLDERS)}).fillna(len(_FEE_HOLDERS))
    holder = movements.assign(_rank=rank).sort_values("_rank", kind="stable")
    holders = ~holder.duplicated("provider_record_id")  # the first movement of each id takes its fees
    fee = pd.Series(pd.NA, index=movements.index, dtype="Int64")
    at = holder.index[holders]
    fee.loc[at] = movements.loc[at, "provider_record_id"].map(fees).astype("Int64")
    movements["fee_minor"] = fee
    movements["net_minor"] = (movements["amount_minor"].astype("Int64") + fee).astype("Int64")
    alone = named.loc[is_fee & ~named["provider_record_id"].isin(movements["provider_record_id"])].copy()
    alone["fee_minor"] = pd.Series(pd.NA, index=alone.index, dtype="Int64")
    alone["net_minor"] = pd.Series(pd.NA, index=alone.index, dtype="Int64")
    if alone.empty:
        return movements.reset_index(drop=True)
    return pd.concat([movements, alone], ignore_index=True)
