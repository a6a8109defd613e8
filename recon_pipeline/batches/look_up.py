"""Look up by id what a batch's comparison left loose: the records the ledger names that a night lacks and
the open holds (a bounded pool of requests), then the bookings of every captured payment and hold in one
statement."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import Engine

from recon_pipeline.batches.compare import rematched
from recon_pipeline.batches.holds import open_holds
from recon_pipeline.batches.property_nights import Comparison, LookedUp, LookUps, NightInput
from recon_pipeline.ledger.queries import load_booking_statuses
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.records import empty_provider_records
from recon_pipeline.reconcile.captured import captured_payments, with_ledger_bookings


def look_up_all(
    engine: Engine,
    client: ProviderClient,
    nights: Sequence[NightInput],
    compared: Sequence[Comparison | BaseException],
    workers: int,
) -> tuple[LookUps, dict[str, str]]:
    """Each compared night's loose ends (``look_up``, by a pool of at most ``workers``), then the states of
    the bookings their conclusions read; should the database fail that read, every night fails with it."""

    def looked_up(
        night: NightInput, comparison: Comparison | BaseException
    ) -> tuple[Comparison, LookedUp] | BaseException:
        if isinstance(comparison, BaseException):
            return comparison
        try:
            return look_up(client, night, comparison)
        except Exception as error:
            return error

    with ThreadPoolExecutor(max_workers=min(workers, len(nights) or 1)) as pool:
        found = list(pool.map(looked_up, nights, compared))
    try:
        return found, _booking_states(engine, found)
    except Exception as error:  # the database failed the batch's read: every night fails with it
        return [error] * len(found), {}


def look_up(client: ProviderClient, night: NightInput, compared: Comparison) -> tuple[Comparison, LookedUp]:
    """By id: the records the ledger names that the pull lacks (a timing difference; the comparison
    re-matched when their aliases re-key an entry) and the open holds; and the night's captured payments
    (whose bookings, with the holds', the batch reads at once: ``_booking_states``)."""
    target = night.target
    matching, unmatched = compared.matching, compared.unmatched
    elsewhere = (
        client.fetch_records_by_id(target.account, unmatched) if unmatched else empty_provider_records()
    )
    if len(elsewhere):
        compared = rematched(night, compared, elsewhere)
    captured = captured_payments(compared.own, compared.orders, compared.aliases)
    # A payment the provider names no booking of (a terminal's) is the booking its folio posting names.
    captured = with_ledger_bookings(captured, matching.ledger)
    # Holds (open across nights) are read by id, beside the night's pull: they propose no adjustment.
    booking_of = night.pms.holds[target.row.property_id]
    holds = open_holds(client, target.account, booking_of)
    return compared, LookedUp(elsewhere, len(unmatched), holds, booking_of, captured)


def _booking_states(engine: Engine, found: LookUps) -> dict[str, str]:
    """The bookings every looked-up night's conclusions read, in one statement for the batch (a booking id
    is one booking whichever property asks)."""
    wanted = [
        booking_id
        for part in found
        if not isinstance(part, BaseException)
        for booking_id in part[1].booking_ids()
    ]
    with engine.connect() as connection:
        return load_booking_statuses(connection, wanted)
