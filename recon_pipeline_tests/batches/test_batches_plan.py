"""Planning a night's properties into batch runs (``batches/plan.py``) and the nightly schedule's batches
(``nightly.nightly_batches``) over a whole day of ticks across eight timezones: pure, no I/O."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest

from recon_pipeline.batches.nightly import NightlyBatch, nightly_batches
from recon_pipeline.batches.plan import NightBatch, packed, plan_batches
from recon_pipeline.nights import last_closed_night, night_window
from recon_pipeline.properties import PropertyRow

NIGHT = date(2026, 11, 30)
FIRST = date(2026, 1, 1)


def prop(
    property_id: str, timezone: str = "Europe/Lisbon", cutoff: str = "00:00", account: str | None = ""
) -> PropertyRow:
    """A property alone on its own connected account unless ``account`` says otherwise (None: the
    platform account, shared by every property on it)."""
    return PropertyRow(
        property_id, property_id, timezone, "EUR", cutoff, f"acct_{property_id}" if account == "" else account
    )


def apart(rows: list[PropertyRow], night: date, size: int) -> list[NightBatch]:
    """The schedule's plan: one night window per batch."""
    return plan_batches(rows, night, size, one_window_each=True)


def members(batches: list[NightBatch]) -> list[tuple[str, ...]]:
    return [batch.property_ids for batch in batches]


def assert_one_window_per_batch(batches: list[NightBatch], rows: dict[str, PropertyRow]) -> None:
    for batch in batches:
        windows = {
            night_window(batch.night, rows[p].timezone, rows[p].night_cutoff) for p in batch.property_ids
        }
        assert len(windows) == 1, batch
        assert next(iter(windows)).start == batch.window_start


# Lisbon and London share a window in winter (same offset, same cutoff); the rest are a window each.
FIVE_WINDOWS = [
    prop("lisbon-a"),
    prop("london-a", "Europe/London"),
    prop("lisbon-late", cutoff="03:00"),
    prop("tokyo-a", "Asia/Tokyo"),
    prop("denver-a", "America/Denver", "03:00"),
]


def test_a_batch_holds_one_night_window() -> None:
    """Lisbon and London share a window in winter (same offset, same cutoff); a later cutoff in Lisbon, or
    another zone, is another window, hence another batch, whatever the batch size."""
    rows = FIVE_WINDOWS
    batches = apart(rows, NIGHT, 100)
    assert members(batches) == [("tokyo-a",), ("lisbon-a", "london-a"), ("lisbon-late",), ("denver-a",)]
    assert [b.window_start for b in batches] == [
        datetime(2026, 11, 29, 15, 0, tzinfo=UTC),
        datetime(2026, 11, 30, 0, 0, tzinfo=UTC),
        datetime(2026, 11, 30, 3, 0, tzinfo=UTC),
        datetime(2026, 11, 30, 10, 0, tzinfo=UTC),
    ]
    assert_one_window_per_batch(batches, {r.property_id: r for r in rows})
    assert all(b.night == NIGHT for b in batches)
    # In summer London is still on Lisbon's offset: the same batch.
    assert members(apart(rows[:2], date(2026, 7, 1), 100)) == [("lisbon-a", "london-a")]


def test_a_shared_account_is_never_split_even_past_the_batch_size() -> None:
    """Five platform-account properties and three on one connected account, batches of two: each shared
    group is one batch of its own (one pull serves it), the singles are packed around them."""
    platform = [prop(f"plat-{i}", account=None) for i in range(5)]
    shared = [prop(f"chain-{i}", account="acct_chain") for i in range(3)]
    singles = [prop("alone-1"), prop("alone-2"), prop("zz-alone")]
    batches = apart([*singles, *shared, *platform], NIGHT, 2)
    assert members(batches) == [
        ("alone-1", "alone-2"),
        ("chain-0", "chain-1", "chain-2"),
        ("plat-0", "plat-1", "plat-2", "plat-3", "plat-4"),
        ("zz-alone",),
    ]
    # A shared account across two windows is one group per window (a pull is per window).
    tokyo_platform = prop("plat-tokyo", "Asia/Tokyo", account=None)
    split = apart([*platform, tokyo_platform], NIGHT, 2)
    assert members(split) == [("plat-tokyo",), ("plat-0", "plat-1", "plat-2", "plat-3", "plat-4")]


def test_groups_are_packed_up_to_the_batch_size_in_property_id_order() -> None:
    rows = [prop(f"p{i:02d}") for i in range(7, 0, -1)]  # given in reverse order
    batches = apart(rows, NIGHT, 3)
    assert members(batches) == [("p01", "p02", "p03"), ("p04", "p05", "p06"), ("p07",)]
    # A shared pair packs with the singles before it while it fits, and is never cut to fill a batch.
    pair = [prop("b", account="acct_pair"), prop("d", account="acct_pair")]
    mixed = apart([prop("a"), *pair, prop("c"), prop("e")], NIGHT, 3)
    assert members(mixed) == [("a", "b", "d"), ("c", "e")]
    assert members(apart([prop("a"), prop("a2"), *pair], NIGHT, 3)) == [("a", "a2"), ("b", "d")]
    assert members(apart(rows, NIGHT, 1)) == [(f"p{i:02d}",) for i in range(1, 8)]
    assert apart([], NIGHT, 3) == []


def test_a_batch_key_is_stable_for_the_same_members_and_new_when_one_is_added() -> None:
    rows = [prop("a"), prop("b"), prop("c")]
    [batch] = apart(rows, NIGHT, 10)
    [same] = apart(list(reversed(rows)), NIGHT, 10)
    assert batch == same and batch.key == same.key
    assert batch.key.startswith("2026-11-30@0000-3-")
    [grown] = apart([*rows, prop("d")], NIGHT, 10)
    assert grown.key != batch.key and grown.key.startswith("2026-11-30@0000-4-")
    [other_night] = apart(rows, NIGHT - timedelta(days=1), 10)
    assert other_night.key != batch.key
    [fewer] = apart(rows[:2], NIGHT, 10)
    [swapped] = apart([rows[0], rows[2]], NIGHT, 10)  # same size, other member: another digest
    assert len({fewer.key, swapped.key, batch.key}) == 3


@pytest.mark.parametrize(
    ("groups", "size", "parts"),
    [
        ([1] * 500, 100, [100, 100, 100, 100, 50, 25, 25]),  # a batch of 500 in chunks of 100
        ([1] * 130, 100, [100, 25, 5]),
        ([1] * 16, 3, [3, 3, 3, 3, 3, 1]),
        ([1] * 3, 100, [3]),  # never under a quarter of the size
        ([1, 1, 60, 1, 1], 50, [2, 60, 2]),  # a group larger than a part goes alone, never cut
        ([], 100, []),
    ],
)
def test_a_tapered_packing_ends_in_smaller_parts(groups: list[int], size: int, parts: list[int]) -> None:
    """The chunks a batch is computed in: of ``size`` until no more than ``size`` items are left, then
    each at most half of what is left and at least a quarter of ``size``, groups kept whole and in order."""
    numbered = [[f"g{n}-{i}" for i in range(length)] for n, length in enumerate(groups)]
    tapered = packed(numbered, size, taper=True)
    assert [len(part) for part in tapered] == parts
    assert [item for part in tapered for item in part] == [item for group in numbered for item in group]
    assert [len(part) for part in packed(numbered, size)] == [
        len(part) for part in packed(numbered, size, taper=False)
    ]


@pytest.mark.parametrize("size", [0, -1])
def test_a_batch_size_below_one_is_refused(size: int) -> None:
    with pytest.raises(ValueError, match=f"batch size must be at least 1, not {size}"):
        apart([prop("a")], NIGHT, size)


def test_a_night_asked_for_whole_packs_its_windows_together() -> None:
    """A backfill, a night run or ``recon reconcile-night`` asks for every window of the night at once:
    windows pack together, in property-id order, up to the batch size, so five windows are one run, not
    five; the batch's window start is its earliest window's."""
    rows = FIVE_WINDOWS
    [whole] = plan_batches(rows, NIGHT, 100, one_window_each=False)
    assert whole.property_ids == ("denver-a", "lisbon-a", "lisbon-late", "london-a", "tokyo-a")
    assert whole.window_start == datetime(2026, 11, 29, 15, 0, tzinfo=UTC)  # Tokyo's
    assert whole.key.startswith("2026-11-30@1500-5-")
    assert members(plan_batches(rows, NIGHT, 2, one_window_each=False)) == [
        ("denver-a", "lisbon-a"),
        ("lisbon-late", "london-a"),
        ("tokyo-a",),
    ]
    assert plan_batches(list(reversed(rows)), NIGHT, 100, one_window_each=False) == [whole]
    assert plan_batches([], NIGHT, 2, one_window_each=False) == []


def test_a_packed_night_keeps_each_shared_account_window_whole() -> None:
    """The platform account in Lisbon and in Tokyo is two pulls, so two groups when windows pack: each
    never split, the Lisbon one a batch of its own past the batch size; every property once."""
    platform = [prop(f"plat-{i}", account=None) for i in range(3)]
    tokyo_platform = prop("plat-tokyo", "Asia/Tokyo", account=None)
    singles = [prop("alone-1", "America/Denver"), prop("alone-2", "Asia/Tokyo")]
    batches = plan_batches([*singles, tokyo_platform, *platform], NIGHT, 2, one_window_each=False)
    assert members(batches) == [("alone-1", "alone-2"), ("plat-0", "plat-1", "plat-2"), ("plat-tokyo",)]
    packed = plan_batches(WORLD, NIGHT, 4, one_window_each=False)
    assert sorted(p for batch in packed for p in batch.property_ids) == sorted(ROWS)
    assert all(len(batch.property_ids) <= 4 for batch in packed)
    assert len(packed) == 5 < len(apart(WORLD, NIGHT, 4)) == 7  # Denver at 03:00 shares Honolulu's window


# Eight timezones, from the first to close a night (Auckland) to the last (Honolulu, and Denver at 03:00),
# with half- and quarter-hour offsets, several properties per window, a platform-account group of three
# in Lisbon and a connected account shared by three properties in Tokyo.
WORLD = [
    prop("akl-1", "Pacific/Auckland"),
    prop("akl-2", "Pacific/Auckland"),
    prop("tyo-1", "Asia/Tokyo", account="acct_tyo_chain"),
    prop("tyo-2", "Asia/Tokyo", account="acct_tyo_chain"),
    prop("tyo-3", "Asia/Tokyo", account="acct_tyo_chain"),
    prop("tyo-4", "Asia/Tokyo"),
    prop("ktm-1", "Asia/Kathmandu"),
    prop("bom-1", "Asia/Kolkata", "02:00"),
    prop("bom-2", "Asia/Kolkata", "02:00"),
    prop("lis-1", "Europe/Lisbon", account=None),
    prop("lis-2", "Europe/Lisbon", account=None),
    prop("lis-3", "Europe/Lisbon", account=None),
    prop("lis-4", "Europe/Lisbon"),
    prop("nyc-1", "America/New_York"),
    prop("den-1", "America/Denver", "03:00"),
    prop("den-2", "America/Denver", "03:00"),
    prop("hnl-1", "Pacific/Honolulu"),
]
ROWS = {row.property_id: row for row in WORLD}
LOOKBACK = 3
SIZE = 2


def ticks(day: date) -> list[datetime]:
    """Every 15-minute tick of a UTC day, as the schedule fires, from midnight to the next midnight."""
    start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
    return [start + timedelta(minutes=15 * i) for i in range(97)]


def test_a_day_of_ticks_requests_every_property_night_once_with_stable_run_keys() -> None:
    day = date(2026, 12, 1)
    by_key: dict[str, NightlyBatch] = {}
    by_closed: dict[tuple[date, ...], list[str]] = {}
    expected: set[tuple[str, date, date]] = set()
    for tick in ticks(day):
        tick_batches = nightly_batches(WORLD, tick, LOOKBACK, FIRST, SIZE)
        keys = [nightly.run_key for nightly in tick_batches]
        assert len(set(keys)) == len(keys)
        for nightly in tick_batches:
            assert by_key.setdefault(nightly.run_key, nightly) == nightly  # a key always means the same work
        closed = tuple(last_closed_night(tick, r.timezone, r.night_cutoff) for r in WORLD)
        # Between two ticks where no property closed a night, the schedule repeats itself exactly.
        assert by_closed.setdefault(closed, keys) == keys
        for row, night_closed in zip(WORLD, closed, strict=True):
            expected |= {(row.property_id, night_closed, night_closed - timedelta(days=k)) for k in range(4)}
    # The closing ticks of the day: New York 05:00, Denver and Honolulu 10:00, Auckland 11:00, Tokyo 15:00,
    # Kathmandu 18:15, Kolkata 20:30, Lisbon 24:00 (it closed Nov 30 at the first tick).
    assert len(by_closed) == 8

    requested = Counter[tuple[str, date, date]]()
    for key, nightly in by_key.items():
        batch = nightly.batch
        closed_text, batch_key = key.removeprefix("nightly:").split(":", 1)
        night_closed = date.fromisoformat(closed_text)
        assert batch_key == batch.key
        assert batch.night == night_closed - timedelta(days=nightly.lookback)  # the look-back nights
        assert 0 <= nightly.lookback <= LOOKBACK
        accounts = {ROWS[p].provider_account for p in batch.property_ids}
        assert len(batch.property_ids) <= SIZE or len(accounts) == 1, batch
        requested.update((p, night_closed, batch.night) for p in batch.property_ids)
    assert_one_window_per_batch([n.batch for n in by_key.values()], ROWS)
    assert set(requested) == expected
    assert set(requested.values()) == {1}  # every property-night once per closing night, never twice
    # Each property closed one new night during the day: two closing nights, four nights each.
    assert Counter(p for p, _, _ in requested) == {row.property_id: 8 for row in WORLD}


def test_once_every_zone_closed_the_night_the_schedule_plans_what_plan_batches_plans() -> None:
    """Between Honolulu and Denver closing Nov 30 (10:00 UTC) and Auckland closing Dec 1 (11:00 UTC),
    every property's latest closed night is Nov 30: the schedule's batches of each requested night are
    exactly ``plan_batches`` of that night window by window, as the stale-night sensor plans its nights."""
    now = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
    assert {last_closed_night(now, r.timezone, r.night_cutoff) for r in WORLD} == {NIGHT}
    scheduled = nightly_batches(WORLD, now, LOOKBACK, FIRST, SIZE)
    for back in range(LOOKBACK + 1):
        night = NIGHT - timedelta(days=back)
        planned = apart(WORLD, night, SIZE)
        assert [n.batch for n in scheduled if n.lookback == back] == planned
        assert {n.run_key for n in scheduled if n.lookback == back} == {
            f"nightly:{NIGHT.isoformat()}:{batch.key}" for batch in planned
        }
    assert len(scheduled) == 4 * len(apart(WORLD, NIGHT, SIZE))


def test_the_look_back_stops_at_the_first_night() -> None:
    tokyo = [ROWS["tyo-4"]]
    scheduled = nightly_batches(tokyo, datetime(2026, 1, 2, 16, 0, tzinfo=UTC), LOOKBACK, FIRST, SIZE)
    assert sorted((n.batch.night, n.lookback) for n in scheduled) == [
        (date(2026, 1, 1), 1),
        (date(2026, 1, 2), 0),
    ]
    assert nightly_batches(tokyo, datetime(2025, 12, 31, 16, 0, tzinfo=UTC), LOOKBACK, FIRST, SIZE) == []
