"""A property's night as a UTC window: pure date arithmetic, no I/O.

Night ``YYYY-MM-DD`` of a property is ``[date + cutoff, date + 1 day + cutoff)`` in the property's own
timezone. Both ends are converted to UTC separately, so a night that contains a DST change is 23 or 25
hours long, as the wall clock says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from recon_pipeline.keys import night_in_range, parse_night


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


_CUTOFF = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")


def parse_cutoff(cutoff: str, name: str = "night_cutoff") -> time:
    """'HH:MM' from 00:00 to 23:59 → time; anything else (' 9:00', '24:00', '9:5') is a ValueError
    naming ``name``, so a typo never shifts a night by silently meaning another hour."""
    match = _CUTOFF.match(cutoff) if isinstance(cutoff, str) else None
    if match is None:
        raise ValueError(f"{name} must be 'HH:MM' from 00:00 to 23:59, not {cutoff!r}")
    return time(int(match[1]), int(match[2]))


@cache
def _iana_keys() -> frozenset[str]:
    """The IANA zone names the system knows (read once: the set walks the tz database), less the host's
    own 'localtime' link, which names no place and would move with the server."""
    return frozenset(available_timezones()) - {"localtime"}


def property_zone(timezone: str) -> ZoneInfo:
    """The IANA zone of a property, or a ValueError naming the bad value.

    Checked against the IANA names first: ``ZoneInfo`` alone accepts 'localtime' (the host's zone, not
    the property's) and raises IsADirectoryError, not ValueError, for a region such as 'America'."""
    if timezone not in _iana_keys():
        raise ValueError(f"unknown IANA timezone {timezone!r}")
    return ZoneInfo(timezone)


def night_window(night: date | str, timezone: str, cutoff: str = "00:00") -> NightWindow:
    """UTC window of ``night`` for a property in ``timezone`` whose nights turn at ``cutoff``; a ValueError
    naming a night at the calendar's edge, whose window is no datetime (``keys.night_in_range``)."""
    day = parse_night(night) if isinstance(night, str) else night_in_range(night)
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


def night_of(moment: datetime, timezone: str, cutoff: str = "00:00") -> date:
    """The property's night whose window holds ``moment`` (the inverse of ``night_window``)."""
    local = moment.astimezone(property_zone(timezone))
    day = local.date()
    return day if local.time() >= parse_cutoff(cutoff) else day - timedelta(days=1)
