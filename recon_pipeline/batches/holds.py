"""A property-night's authorization holds, read and judged: the I/O around ``reconcile/holds.py``.

The holds to look at are those the PMS knows are open (``payment_orders`` in ``authorized``, whatever
night they were made in) and those this property-night reported before (so that a hold whose order the
event processor has since marked failed, because it lapsed, keeps its finding on a re-run): read for a
batch's properties at once (``hold_payments``). Each is read from the provider by id, in its current state
(``open_holds``): never a stale payload. Their bookings' states are read with the night's other bookings
(``hold_booking_ids``), then judged, a batch's nights at once (``holds_night``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from sqlalchemy import Connection

from recon_pipeline.categories import AUTHORIZATION_EXPIRING
from recon_pipeline.ledger.queries import load_authorized_payment_orders
from recon_pipeline.nights import NightWindow, night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.holds import AuthorizationHold
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.reconcile.holds import HoldsNight
from recon_pipeline.storage.findings import reported_payments


def hold_payments(
    connection: Connection, property_ids: Sequence[str], night: str
) -> dict[str, dict[str, str | None]]:
    """Per property, payment id → booking id (as the PMS knows it) of the holds to look at on ``night``:
    those it reported before and those ``payment_orders`` holds as authorized."""
    reported = reported_payments(connection, property_ids, night, AUTHORIZATION_EXPIRING)
    authorized = load_authorized_payment_orders(connection, property_ids)
    return {property_id: {**reported[property_id], **authorized[property_id]} for property_id in property_ids}


def open_holds(
    client: ProviderClient, account: PropertyAccount, booking_of: Mapping[str, str | None]
) -> list[AuthorizationHold]:
    """The current state, read from the provider, of the holds ``booking_of`` names (none: no request)."""
    return client.authorization_holds(account, sorted(booking_of)) if booking_of else []


def hold_booking_ids(holds: Sequence[AuthorizationHold], booking_of: Mapping[str, str | None]) -> list[str]:
    """The bookings whose state judges the holds: the provider's metadata's, else the PMS's."""
    return [b for h in holds if (b := h.booking_id or booking_of.get(h.payment_id)) is not None]


def holds_night(
    row: PropertyRow,
    window: NightWindow,
    holds: Sequence[AuthorizationHold],
    booking_of: Mapping[str, str | None],
    statuses: Mapping[str, str],
) -> HoldsNight:
    """What judges the property-night's holds (``expiring_authorizations_of_nights``: a batch's nights at
    once); ``statuses`` (``load_booking_statuses``) holds at least the states of ``hold_booking_ids``."""
    next_night = night_window(window.night + timedelta(days=1), row.timezone, row.night_cutoff)
    known = {payment_id: booking for payment_id, booking in booking_of.items() if booking is not None}
    return HoldsNight(row.property_id, holds, known, statuses, window, next_night)
