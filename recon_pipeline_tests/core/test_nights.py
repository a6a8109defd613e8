"""Night windows in each property's own timezone and cutoff, DST nights included."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from recon_pipeline.nights import last_closed_night, night_of, night_window


def test_plain_night_in_utc_plus_nine() -> None:
    window = night_window("2026-11-01", "Asia/Tokyo")
    assert window.start == datetime(2026, 10, 31, 15, 0, tzinfo=UTC)
    assert window.end == datetime(2026, 11, 1, 15, 0, tzinfo=UTC)
    assert window.duration == timedelta(hours=24)


def test_cutoff_moves_the_window() -> None:
    window = night_window("2026-11-10", "America/Denver", "03:00")
    assert window.start == datetime(2026, 11, 10, 10, 0, tzinfo=UTC)  # 03:00 MST = 10:00 UTC
    assert window.end == datetime(2026, 11, 11, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("night", "timezone", "hours"),
    [
        ("2026-03-29", "Europe/Lisbon", 23),  # clocks forward at 01:00 UTC
        ("2026-10-25", "Europe/Lisbon", 25),  # clocks back
        ("2026-03-08", "America/Denver", 23),
        ("2026-11-01", "America/Denver", 25),
        ("2026-03-28", "Europe/Lisbon", 24),  # the night before is ordinary
        ("2026-03-29", "Asia/Tokyo", 24),  # no DST in Japan
    ],
)
def test_dst_nights_have_wall_clock_length(night: str, timezone: str, hours: int) -> None:
    assert night_window(night, timezone).duration == timedelta(hours=hours)


def test_cutoff_after_the_change_puts_the_long_night_first() -> None:
    # Denver falls back at 02:00 on Nov 1: with a 03:00 cutoff the 25-hour night is Oct 31's.
    window = night_window("2026-10-31", "America/Denver", "03:00")
    assert window.start == datetime(2026, 10, 31, 9, 0, tzinfo=UTC)  # 03:00 MDT
    assert window.end == datetime(2026, 11, 1, 10, 0, tzinfo=UTC)  # 03:00 MST
    assert window.duration == timedelta(hours=25)
    assert night_window("2026-11-01", "America/Denver", "03:00").duration == timedelta(hours=24)


def test_consecutive_nights_tile_without_gaps() -> None:
    day = date(2026, 10, 20)
    for offset in range(14):
        this = night_window(day + timedelta(days=offset), "Europe/Lisbon", "04:00")
        following = night_window(day + timedelta(days=offset + 1), "Europe/Lisbon", "04:00")
        assert this.end == following.start


def test_last_closed_night_per_timezone() -> None:
    now = datetime(2026, 12, 2, 16, 0, tzinfo=UTC)  # 01:00 on Dec 3 in Tokyo, 09:00 on Dec 2 in Denver
    assert last_closed_night(now, "Asia/Tokyo") == date(2026, 12, 2)
    assert last_closed_night(now, "America/Denver") == date(2026, 12, 1)
    assert last_closed_night(now, "America/Denver", "10:00") == date(2026, 11, 30)


@pytest.mark.parametrize(
    ("timezone", "cutoff"), [("Mars/Olympus", "00:00"), ("Europe/Lisbon", "25:99"), ("UTC", "x")]
)
def test_bad_timezone_or_cutoff_is_a_clear_error(timezone: str, cutoff: str) -> None:
    with pytest.raises(ValueError, match="timezone|night_cutoff|hour|minute"):
        night_window("2026-11-01", timezone, cutoff)


@pytest.mark.parametrize("timezone", ["Europe/Lisbon", "America/Denver", "Asia/Tokyo", "Australia/Lord_Howe"])
@pytest.mark.parametrize("cutoff", ["00:00", "03:00", "14:30"])
def test_night_of_is_the_inverse_of_night_window(timezone: str, cutoff: str) -> None:
    """Across both DST changes of the year, every instant of a night's window is that night's."""
    for night in (date(2026, 3, 8), date(2026, 3, 29), date(2026, 4, 5), date(2026, 10, 25)):
        window = night_window(night, timezone, cutoff)
        assert night_of(window.start, timezone, cutoff) == night
        assert night_of(window.end - timedelta(seconds=1), timezone, cutoff) == night
        assert night_of(window.end, timezone, cutoff) == night + timedelta(days=1)


@pytest.mark.parametrize(
    ("night", "timezone"),
    [
        ("9999-12-31", "UTC"),
        (date(9999, 12, 31), "Asia/Tokyo"),
        ("0001-01-01", "Europe/Paris"),
        (date.min, "UTC"),
    ],
)
def test_a_night_at_the_calendars_edge_is_a_clear_error_naming_it(night: str | date, timezone: str) -> None:
    shown = night if isinstance(night, str) else night.isoformat()
    with pytest.raises(ValueError, match=f"^night '{shown}' is not from 0002-01-01 to 9998-12-31$"):
        night_window(night, timezone)


@pytest.mark.parametrize("timezone", ["Pacific/Kiritimati", "Pacific/Pago_Pago", "Europe/Paris"])
def test_the_first_and_last_nights_have_windows(timezone: str) -> None:
    for night in ("0002-01-01", "9998-12-31"):
        assert night_window(night, timezone, "23:59").duration == timedelta(hours=24)
