"""A property-night's authorization holds, read and judged: the I/O around ``reconcile/holds.py``.

The holds to look at are those the PMS knows are open (``payment_orders`` in ``authorized``, whatever
night they were made in) and those this property-night reported before (so that a hold whose order the
event processor has since marked failed, because it lapsed, keeps its finding on a re-run). Each is read
from the provider by id, in its current state: never a stale payload.
"""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
from sqlalchemy import Engine

from recon_pipeline.ledger.queries import PropertyRow, load_authorized_payment_orders, load_bookings
from recon_pipeline.nights import NightWindow, night_window
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.reconcile.categories import AUTHORIZATION_EXPIRING
from recon_pipeline.reconcile.holds import expiring_authorizations
from recon_pipeline.review.store import reported_payments


def authorization_findings(
    engine: Engine, client: ProviderClient, row: PropertyRow, account: PropertyAccount, window: NightWindow
) -> pd.DataFrame:
    """The property-night's ``authorization_expiring`` findings (a discrepancy frame, maybe empty)."""
    night = window.night.isoformat()
    with engine.connect() as connection:
        booking_of = {
            **reported_payments(connection, row.property_id, night, AUTHORIZATION_EXPIRING),
            **load_authorized_payment_orders(connection, row.property_id),
        }
    holds = client.authorization_holds(account, sorted(booking_of)) if booking_of else []
    with engine.connect() as connection:
        bookings = load_bookings(
            connection, [b for h in holds if (b := h.booking_id or booking_of.get(h.payment_id)) is not None]
        )
    next_night = night_window(window.night + timedelta(days=1), row.timezone, row.night_cutoff)
    return expiring_authorizations(
        row.property_id,
        holds,
        {payment_id: booking for payment_id, booking in booking_of.items() if booking is not None},
        dict(zip(bookings["booking_id"], bookings["status"], strict=True)),
        window,
        next_night,
    )
