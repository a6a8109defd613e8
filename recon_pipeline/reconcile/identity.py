"""Which money movement an id names: one payment is one finding, whichever of its ids each side holds.

A side may name a payment by the charge (the provider's payment record) or by what the charge fulfils (a
payment intent or an order); the provider-record frame carries
both (``charge_id`` and ``payment_intent_id``). The charge is the money movement, so every id is mapped to
its charge id before matching: the diff and the orphan report then key a payment the same way whichever
id the ledger or ``payment_orders`` stored, and a finding's ``record_key`` stays the same when the PMS
switches ids. The mapping (``PaymentAliases``) is built from the frames the night already holds (the pull
and the by-id lookups) and applied with Arrow hashing, so a million ledger rows cost under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from recon_pipeline.frames import present

# Ledger kinds booked against the charge itself (a refund names its own re_/rfnd_ id).
CHARGE_KINDS = ("payment", "fee")


@dataclass(frozen=True)
class PaymentAliases:
    """Intent/order ids (distinct) and, aligned, the charge id each one stands for."""

    intents: pa.Array  # large_string
    charges: np.ndarray  # object


def payment_aliases(*provider_frames: pd.DataFrame) -> PaymentAliases:
    """Intent/order id → charge id, from the ``payment`` rows of provider-record frames.

    An intent may hold several charges (failed attempts before the one that succeeded): the settled one
    wins, then the latest created, as an intent's latest charge does. Only those few intents are sorted;
    a million distinct ones cost one Arrow hash pass.
    """
    rows = [(frame, _payment_positions(frame)) for frame in provider_frames]
    intent_ids = np.concatenate([frame["payment_intent_id"].to_numpy()[at] for frame, at in rows])
    intents = pa.array(intent_ids, type=pa.large_string(), from_pandas=True)
    charges = np.concatenate([frame["charge_id"].to_numpy(dtype=object)[at] for frame, at in rows])
    counts = pc.value_counts(intents)
    repeated = counts.field("values").filter(pc.greater(counts.field("counts"), 1))
    if len(repeated):
        columns = ["payment_intent_id", "charge_id", "settled", "created_at"]
        payments = pd.concat([frame.iloc[at][columns] for frame, at in rows], ignore_index=True)
        crowded = pc.is_in(intents, value_set=repeated).to_numpy(zero_copy_only=False)
        latest = (
            payments[crowded]
            .sort_values(["payment_intent_id", "settled", "created_at", "charge_id"], kind="stable")
            .drop_duplicates("payment_intent_id", keep="last")
        )
        payments = pd.concat([payments[~crowded], latest], ignore_index=True)
        intents = pa.array(payments["payment_intent_id"], type=pa.large_string(), from_pandas=True)
        charges = payments["charge_id"].to_numpy(dtype=object)
    return PaymentAliases(intents, charges)


def _payment_positions(frame: pd.DataFrame) -> np.ndarray:
    """Positions of the frame's ``payment`` rows that name an intent (a numpy mask: a pandas selection
    per frame costs more than the few rows it selects)."""
    kinds = frame["kind"].to_numpy()
    return np.flatnonzero((kinds == "payment") & frame["payment_intent_id"].notna().to_numpy())


def canonical_ids(ids: pd.Series, aliases: PaymentAliases, applies: np.ndarray | None = None) -> pd.Series:
    """``ids`` with every alias replaced by its charge id (only where ``applies``, if given); nulls and
    ids that are no alias stay as they are (the very Series comes back when none is an alias)."""
    if len(aliases.intents) == 0 or ids.empty:
        return ids
    text = pa.array(ids, type=pa.large_string(), from_pandas=True)
    position = pc.index_in(text, value_set=aliases.intents).fill_null(-1).to_numpy()
    hit = position >= 0
    if applies is not None:
        hit &= applies
    if not hit.any():
        return ids
    out = ids.to_numpy(dtype=object, copy=True)
    out[hit] = aliases.charges[position[hit]]
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
    # A night's findings and entries are a few dozen rows: a dict and one pass over them cost less than
    # the de-duplication, index and map the same lookup takes in pandas.
    booked: dict[object, object] = {}
    for entry, booked_id in zip(
        ledger_records["entry_id"].tolist(), ledger_records["provider_record_id"].tolist(), strict=True
    ):
        booked.setdefault(entry, booked_id)  # the first row of an entry, as drop_duplicates keeps
    detail = findings["detail"].tolist()
    renamed = False
    for row, (entry, record_id) in enumerate(
        zip(findings["ledger_entry_id"].tolist(), findings["provider_record_id"].tolist(), strict=True)
    ):
        booked_id = booked.get(entry) if present(entry) else None
        if present(booked_id) and present(record_id) and booked_id != record_id:
            detail[row] = f"{detail[row]} (ledger entry {entry} names it {booked_id})"
            renamed = True
    if not renamed:
        return findings
    return findings.assign(detail=pd.Series(detail, index=findings.index, dtype=findings["detail"].dtype))
