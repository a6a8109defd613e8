"""Which property-nights the nightly schedule asks for at a given moment: pure, so DST is testable.

Each property's latest closed night (in its own timezone and cutoff) is requested, with the ``lookback``
nights before it again, so that records arriving late are reconciled. The run key names the closing
night and the requested night, so every tick of the same day repeats the same keys (a no-op) and the
next day's re-request of a prior night is new work.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from recon_pipeline.ledger.queries import PropertyRow
from recon_pipeline.nights import last_closed_night, property_zone


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


def due_nights(
    properties: Iterable[PropertyRow], now: datetime, morning_close: time
) -> list[tuple[str, date]]:
    """Per property, the latest night whose morning-close deadline has passed at ``now``.

    Night N of a property is due by ``morning_close`` local time on the day its window ends (N + 1 with
    a cutoff before the close); before that moment the night before it is the one that must be done.
    """
    due = []
    for prop in properties:
        zone = property_zone(prop.timezone)
        closed = last_closed_night(now, prop.timezone, prop.night_cutoff)
        deadline = datetime.combine(closed + timedelta(days=1), morning_close, tzinfo=zone)
        due.append((prop.property_id, closed if now >= deadline else closed - timedelta(days=1)))
    return due
