"""Read a batch's targets (its valid properties, with their windows and accounts) and its night's input
from the PMS, each table in one statement for every property."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Engine

from recon_pipeline.batches.holds import hold_payments
from recon_pipeline.batches.property_nights import PmsInput, Target
from recon_pipeline.ledger.queries import (
    list_properties,
    read_booking_groups,
    read_captured_order_rows,
    read_ledger_rows,
)
from recon_pipeline.nights import night_window
from recon_pipeline.postings.store import read_posted_adjustments
from recon_pipeline.properties import split_valid_properties
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.storage.matches import known_matches


def read_targets(
    connection: Connection, night: str, property_ids: tuple[str, ...]
) -> tuple[list[Target], dict[str, str], list[str]]:
    """The batch's valid properties (all valid ones of the table when ``property_ids`` is empty) with
    their windows and accounts; a one-line error per named property that is unknown or invalid; and the
    invalid rows skipped when the batch is every property."""
    rows = list_properties(connection)
    valid, invalid = split_valid_properties(rows)
    by_id = {row.property_id: row for row in valid}
    errors: dict[str, str] = {}
    skipped: list[str] = []
    if property_ids:
        wanted = property_ids
        invalid_by_id = {e.property_id: str(e) for e in invalid}
        for property_id in wanted:
            if property_id not in by_id:
                errors[property_id] = invalid_by_id.get(
                    property_id, f"property {property_id!r} is not in the properties table"
                )
    else:
        wanted = tuple(by_id)
        skipped = [str(e) for e in invalid]
    sharing: dict[str | None, tuple[str, ...]] = {}
    for row in rows:
        sharing[row.provider_account] = (*sharing.get(row.provider_account, ()), row.property_id)
    targets = [
        Target(
            row,
            night_window(night, row.timezone, row.night_cutoff),
            PropertyAccount(
                row.property_id, row.provider_account, tuple(sorted(sharing[row.provider_account]))
            ),
        )
        for row in (by_id[property_id] for property_id in wanted if property_id in by_id)
    ]
    return targets, errors, skipped


def read_pms_input(engine: Engine, targets: Sequence[Target], night: str) -> PmsInput | BaseException:
    """The ledger entries (with the adjacent nights') and captured payment orders of every target's
    window, the holds to look at, the night's posted adjustments and the matches decided before: one
    statement per table, not one per property. Should the database fail the read, its error, which every
    property fails with."""
    windows = {target.row.property_id: target.window for target in targets}
    try:
        with engine.connect() as connection:
            return PmsInput(
                read_ledger_rows(connection, windows),
                read_captured_order_rows(connection, windows),
                hold_payments(connection, list(windows), night),
                read_posted_adjustments(connection, list(windows), night),
                known_matches(connection, list(windows), night),
                read_booking_groups(connection, list(windows)),
            )
    except Exception as error:
        return error
