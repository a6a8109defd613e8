"""Which money movement an id names: one payment is one finding, whichever of its ids each side holds.

A side may name a payment by the charge (Stripe ``ch_``/``py_``, Razorpay ``pay_``) or by what the charge
fulfils (a Stripe PaymentIntent ``pi_``, a Razorpay order ``order_``); the provider-record frame carries
both (``charge_id`` and ``payment_intent_id``). The charge is the money movement, so every id is mapped to
its charge id before matching: the diff and the orphan report then key a payment the same way whichever
id the ledger or ``payment_orders`` stored, and a finding's ``record_key`` stays the same when the PMS
switches ids. The mapping is a plain dict, built from the frames the night already holds (the pull and the
by-id lookups), and applied with Arrow so that a million ledger rows cost a fraction of the diff itself.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

PaymentAliases = Mapping[str, str]  # an intent/order id -> the charge id of its settled payment

# Ledger kinds booked against the charge itself (a refund names its own re_/rfnd_ id).
CHARGE_KINDS = ("payment", "fee")


def payment_aliases(*provider_frames: pd.DataFrame) -> dict[str, str]:
    """Intent/order id → charge id, from the ``payment`` rows of provider-record frames.

    An intent may hold several charges (failed attempts before the one that succeeded): the settled one
    wins, then the latest created, as Stripe's ``latest_charge`` does.
    """
    parts = [
        frame.loc[(frame["kind"] == "payment") & frame["payment_intent_id"].notna()]
        for frame in provider_frames
    ]
    payments = pd.concat([p for p in parts if len(p)] or [parts[0]], ignore_index=True)
    if payments.empty:
        return {}
    ranked = payments.sort_values(
        ["payment_intent_id", "settled", "created_at", "charge_id"], kind="stable"
    ).drop_duplicates("payment_intent_id", keep="last")
    return dict(zip(ranked["payment_intent_id"], ranked["charge_id"], strict=True))


def canonical_ids(ids: pd.Series, aliases: PaymentAliases, applies: np.ndarray | None = None) -> pd.Series:
    """``ids`` with every alias replaced by its charge id (only where ``applies``, if given); nulls and
    ids that are no alias stay as they are."""
    if not aliases or ids.empty:
        return ids
    text = pa.array(ids, type=pa.large_string(), from_pandas=True)
    keys = pa.array(list(aliases), type=pa.large_string())
    position = pc.index_in(text, value_set=keys).fill_null(-1).to_numpy()
    hit = position >= 0
    if applies is not None:
        hit &= applies
    if not hit.any():
        return ids
    charges = np.array(list(aliases.values()), dtype=object)
    out = ids.to_numpy(dtype=object, copy=True)
    out[hit] = charges[position[hit]]
    return pd.Series(out, index=ids.index, name=ids.name, dtype=ids.dtype)


def canonical_ledger(ledger_records: pd.DataFrame, aliases: PaymentAliases) -> pd.DataFrame:
    """The ledger frame with payment and fee entries keyed by charge id (the frame itself when no entry
    names an alias); the entries' own ids stay in the caller's original frame for the findings' detail."""
    booked = ledger_records["provider_record_id"]
    ids = canonical_ids(booked, aliases, ledger_records["kind"].isin(CHARGE_KINDS).to_numpy())
    if ids is booked:
        return ledger_records
    return ledger_records.assign(provider_record_id=ids)


def name_booked_ids(findings: pd.DataFrame, ledger_records: pd.DataFrame) -> pd.DataFrame:
    """Findings about a ledger entry that named its payment by another id get that id in their detail,
    so the analyst sees what the PMS stored while the finding is keyed by the charge."""
    if findings.empty or ledger_records.empty:
        return findings
    booked = ledger_records.drop_duplicates("entry_id").set_index("entry_id")["provider_record_id"]
    as_booked = findings["ledger_entry_id"].map(booked)
    renamed = as_booked.notna() & findings["provider_record_id"].notna()
    renamed &= as_booked.ne(findings["provider_record_id"])
    if not renamed.any():
        return findings
    detail = findings["detail"].copy()
    detail[renamed] = [
        f"{text} (ledger entry {entry} names it {booked_id})"
        for text, entry, booked_id in zip(
            detail[renamed], findings.loc[renamed, "ledger_entry_id"], as_booked[renamed], strict=True
        )
    ]
    return findings.assign(detail=detail)
