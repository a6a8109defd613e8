"""A property's night as a UTC window: pure date arithmetic, no I/O.

Night ``YYYY-MM-DD`` of a property is ``[date + cutoff, date + 1 day + cutoff)`` in the property's own
timezone. Both ends are converted to UTC separately, so a night that contains a DST change is 23 or 25
hours long, as the wall clock says.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from recon_pipeline.keys import parse_night


@dataclass(frozen=True)
class NightWindow:
    """The half-open UTC interval ``[start, end)`` of one property-night."""

    night: date
    start: datetime
    end: datetime

    @property
    def duration(self) -> timedelta:
        return self.end - self.start

    def widened(self, margin: timedelta) -> NightWindow:
        """The same night with ``margin`` added on both sides (to find entries of adjacent nights)."""
        return NightWindow(self.night, self.start - margin, self.end + margin)


def parse_cutoff(cutoff: str) -> time:
    """'HH:MM' → time; a clear error for anything else."""
    try:
        hours, minutes = cutoff.split(":")
        return time(int(hours), int(minutes))
    except ValueError:
        raise ValueError(f"night_cutoff must be 'HH:MM', not {cutoff!r}") from None


def property_zone(timezone: str) -> ZoneInfo:
    """The IANA zone of a property, or a ValueError naming the bad value."""
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown IANA timezone {timezone!r}") from None


def night_window(night: date | str, timezone: str, cutoff: str = "00:00") -> NightWindow:
    """UTC window of ``night`` for a property in ``timezone`` whose nights turn at ``cutoff``."""
    day = parse_night(night) if isinstance(night, str) else night
    zone = property_zone(timezone)
    turn = parse_cutoff(cutoff)
    start_local = datetime.combine(day, turn, tzinfo=zone)
    end_local = datetime.combine(day + timedelta(days=1), turn, tzinfo=zone)
    return NightWindow(day, start_local.astimezone(UTC), end_local.astimezone(UTC))


def last_closed_night(now: datetime, timezone: str, cutoff: str = "00:00") -> date:
    """The most recent night of the property whose window has ended at ``now``."""
    zone = property_zone(timezone)
    turn = parse_cutoff(cutoff)
    local_now = now.astimezone(zone)
    candidate = local_now.date() - timedelta(days=1)
    if local_now.time() < turn:
        candidate -= timedelta(days=1)
    return candidate
