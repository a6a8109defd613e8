"""Which property-nights the nightly schedule and the SLO check want at a given moment: pure, so DST
is testable. Both take validated rows (``split_valid_properties``): a bad row is their callers' to skip.

Each property's latest closed night (in its own timezone and cutoff) is requested, with the ``lookback``
nights before it again, so that records arriving late are reconciled. Requests are cut into batches
(``batches/plan.py``: one night window per batch, a shared account never split); a batch's run key names
the closing night and the batch (its night, window and members), so every tick of the same day repeats
the same keys (a no-op) and the next day's re-request of a prior night is new work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from recon_pipeline.batches.plan import NightBatch, plan_batches
from recon_pipeline.nights import last_closed_night, night_window, property_zone
from recon_pipeline.properties import PropertyRow


@dataclass(frozen=True)
class NightRequest:
    property_id: str
    night: date
    closed: date  # the property's latest closed night when requested
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
                requests.append(NightRequest(prop.property_id, night, closed, back))
    return requests


@dataclass(frozen=True)
class NightlyBatch:
    """A batch the nightly schedule requests, with its run key."""

    batch: NightBatch
    run_key: str
    lookback: int


def nightly_batches(
    properties: Iterable[PropertyRow], now: datetime, lookback: int, first_night: date, batch_size: int
) -> list[NightlyBatch]:
    """The nightly requests at ``now`` cut into batches: properties that closed the same night at the
    same instant, requested for the same night, share runs."""
    rows = {prop.property_id: prop for prop in properties}
    groups: dict[tuple[date, date, int], list[PropertyRow]] = {}
    for request in nightly_requests(rows.values(), now, lookback, first_night):
        groups.setdefault((request.closed, request.night, request.lookback), []).append(
            rows[request.property_id]
        )
    return [
        NightlyBatch(batch, f"nightly:{closed.isoformat()}:{batch.key}", back)
        for (closed, night, back), members in sorted(groups.items())
        for batch in plan_batches(members, night, batch_size, one_window_each=True)
    ]


@dataclass(frozen=True)
class PreviousNight:
    """The night the SLO check judges for one property: the one the schedule closed last."""

    property_id: str
    night: date
    deadline: datetime  # the first morning close, local time, at or after the night's window ends


def previous_nights(
    properties: Iterable[PropertyRow], now: datetime, morning_close: time
) -> list[PreviousNight]:
    """Per property, its latest closed night at ``now`` (what the schedule requested last) and the
    morning close by which it must be reconciled.

    The deadline is the first ``morning_close`` at or after the window's end, so a cutoff later than the
    close (a 10:00 cutoff, a 09:00 close) leaves a whole day, not a deadline before the night is over.
    """
    previous = []
    for prop in properties:
        zone = property_zone(prop.timezone)
        night = last_closed_night(now, prop.timezone, prop.night_cutoff)
        ends = night_window(night, prop.timezone, prop.night_cutoff).end.astimezone(zone)
        deadline = datetime.combine(ends.date(), morning_close, tzinfo=zone)
        if deadline < ends:
            deadline = datetime.combine(ends.date() + timedelta(days=1), morning_close, tzinfo=zone)
        previous.append(PreviousNight(prop.property_id, night, deadline))
    return previous


def late_night(previous: PreviousNight, now: datetime, reconciled: Callable[[date], bool]) -> date | None:
    """The night that makes the property late at ``now``, or None when it is on time.

    On time: its latest closed night is reconciled; or that night's deadline has not passed yet and the
    night before it (whose deadline has) is reconciled. A check that judged only the night before would
    be red right after a run that reconciled the latest night, until the morning close.
    """
    if reconciled(previous.night):
        return None
    if now >= previous.deadline:
        return previous.night
    before = previous.night - timedelta(days=1)
    return None if reconciled(before) else before
