"""Which property-nights the nightly schedule asks for at a given moment: pure, so DST is testable.

Each property's latest closed night (in its own timezone and cutoff) is requested, with the ``lookback``
nights before it again, so that records arriving late are reconciled. The run key names the closing
night and the requested night, so every tick of the same day repeats the same keys (a no-op) and the
next day's re-request of a prior night is new work.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from recon_pipeline.ledger.queries import PropertyRow
from recon_pipeline.nights import last_closed_night


@dataclass(frozen=True)
class NightRequest:
    property_id: str
    night: date
    run_key: str
    lookback: int  # 0 for the night just closed, 1.. for re-requests


def nightly_requests(
    properties: Iterable[PropertyRow], now: datetime, lookback: int, first_night: date
) -> list[NightRequest]:
    """Requests for every property's latest closed night and the ``lookback`` nights before it."""
    requests = []
    for prop in properties:
        closed = last_closed_night(now, prop.timezone, prop.night_cutoff)
        for back in range(lookback + 1):
            night = closed - timedelta(days=back)
            if night >= first_night:
                key = f"nightly:{prop.property_id}:{closed.isoformat()}:{night.isoformat()}"
                requests.append(NightRequest(prop.property_id, night, key, back))
    return requests
