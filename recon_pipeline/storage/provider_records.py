"""The provider's side of a night's findings, kept: ``provider_records`` rows for the records its findings
and matches name, upserted in the property-night's transaction (``batches/write.py``).

A finding's page then shows the provider's record as the provider held it at the run (status, time,
amount, fee, net, settlement, card, a link to the provider's dashboard) without asking the provider, and
a person sees what the run saw. Only the records the night's findings or matches name are stored, not the
night's whole pull: most movements match by id and nobody opens them. A re-run overwrites each row with
what its pull saw (``seen_at``, ``run_id``); a record no finding names any more keeps its last row, which
is harmless (the finding that named it, cleared, still shows it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import Connection

from recon_pipeline.db.schema import provider_records
from recon_pipeline.db.upsert import upsert
from recon_pipeline.frames import present
from recon_pipeline.providers.interface import RecordAddress
from recon_pipeline.reconcile.evidence import folded_records
from recon_pipeline.storage.matches import held_back_records, ids_of

KEY = ("property_id", "provider_record_id", "kind")
_FRAME_FACTS = (  # a row's facts as the frame (and the fee folded in) has them
    "charge_id",
    "payment_intent_id",
    "booking_id",
    "status",
    "settled",
    "created_at",
    "amount_minor",
    "currency",
    "fee_minor",
    "net_minor",
    "settlement_amount_minor",
    "settlement_currency",
    "card_brand",
    "card_last4",
    "approval_code",
)
_READ = (  # what is read of the frame: the key and the facts but the folded fee
    "provider_record_id",
    "kind",
    *(name for name in _FRAME_FACTS if name not in ("fee_minor", "net_minor")),
)
FACTS = (
    "night",
    "provider",
    "provider_account",
    *_FRAME_FACTS,
    "dashboard_url",
    "run_id",
    "seen_at",
)


def named_record_ids(findings: pd.DataFrame, matches: pd.DataFrame) -> set[str]:
    """The provider record ids the night's findings name (their ``provider_record_id``, and every record a
    held-back finding's key holds) and its matches hold."""
    named = {str(one) for one in findings["provider_record_id"] if present(one)}
    for key in findings["record_key"]:
        named |= held_back_records(str(key))
    for cell in matches["provider_record_ids"] if len(matches) else ():
        named.update(ids_of(cell if present(cell) else None))
    return named


@dataclass(frozen=True)
class NightRecords:
    """One property-night's provider-record frames (the pull and the lookups), the ids its findings and
    matches name, and the account its records were pulled under."""

    frames: Sequence[pd.DataFrame]
    named: set[str]
    provider_account: str | None


def save_provider_records(
    connection: Connection,
    property_id: str,
    night: str,
    frames: Sequence[pd.DataFrame],
    named: set[str],
    provider: str,
    provider_account: str | None,
    dashboard_url: Callable[[RecordAddress], str | None],
    run_id: str | None,
    now: datetime,
) -> int:
    """``save_batch_provider_records`` of one property-night: how many rows were written."""
    records = {property_id: NightRecords(frames, named, provider_account)}
    return save_batch_provider_records(connection, night, records, provider, dashboard_url, run_id, now)[
        property_id
    ]


def save_batch_provider_records(
    connection: Connection,
    night: str,
    records: Mapping[str, NightRecords],
    provider: str,
    dashboard_url: Callable[[RecordAddress], str | None],
    run_id: str | None,
    now: datetime,
) -> dict[str, int]:
    """Upsert the named movements of each property's frames as its ``provider_records`` rows, each with its
    dashboard link, in one statement for the batch; how many rows were written per property. Each frame is
    narrowed to the named ids before anything else (the night's pull is large, ``named`` small), and what
    is left is worked in plain Python."""
    rows: list[dict[str, Any]] = []
    written: dict[str, int] = {}
    for property_id, night_records in records.items():
        named = night_records.named
        found = [row for frame in night_records.frames if named for row in _named_rows(frame, named)]
        account = night_records.provider_account
        property_rows = [
            _row(record, property_id, night, provider, account, dashboard_url, run_id, now)
            for record in folded_records(found)
        ]
        written[property_id] = len(property_rows)
        rows += property_rows
    upsert(connection, provider_records, rows, KEY, FACTS)
    return written


def _named_rows(frame: pd.DataFrame, ids: set[str]) -> list[dict[str, Any]]:
    """The frame's rows of ``ids`` as dicts of the columns stored, taken column by column (a DataFrame's
    ``to_dict`` of a few rows costs ten times as much, and ``isin`` more than a set over a night's ids)."""
    at = [row for row, one in enumerate(frame["provider_record_id"].tolist()) if one in ids]
    if not at:
        return []
    taken = {name: frame[name].array.take(at) for name in _READ if name in frame.columns}
    return [{name: values[i] for name, values in taken.items()} for i in range(len(at))]


def _row(
    record: dict[str, Any],
    property_id: str,
    night: str,
    provider: str,
    provider_account: str | None,
    dashboard_url: Callable[[RecordAddress], str | None],
    run_id: str | None,
    now: datetime,
) -> dict[str, Any]:
    facts = {name: _plain(record.get(name)) for name in _FRAME_FACTS}
    address = RecordAddress(
        str(record["provider_record_id"]), str(record["kind"]), facts["charge_id"], provider_account
    )
    return {
        "property_id": property_id,
        "provider_record_id": address.provider_record_id,
        "kind": address.kind,
        **facts,
        "settled": bool(facts["settled"]),
        "night": night,
        "provider": provider,
        "provider_account": provider_account,
        "dashboard_url": dashboard_url(address),
        "run_id": run_id,
        "seen_at": now,
    }


def _plain(value: Any) -> Any:
    """A frame cell as the database takes it: None for a null, Python ints and datetimes."""
    if not present(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value
