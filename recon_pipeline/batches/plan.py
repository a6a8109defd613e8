"""Which properties one run reconciles: a night's properties cut into batches. Pure: no I/O, no Dagster.

A run per property-night is all fixed overhead (a run worker spends seconds of CPU starting: a fresh
interpreter importing Dagster, pandas and the code location; a property-night is milliseconds of work), so
a run reconciles a *batch* of properties of one night. Batches follow two rules, then a size:

- **night windows**: the nightly schedule asks for a night window by window, as each timezone closes it
  (``one_window_each``): a batch's properties' nights then start and end at the same instant (same
  timezone and cutoff), so a batch's membership never grows during the day and every tick repeats the
  same batches (the same run keys); the stale-night sensor plans the same way, so that one property's
  late event does not change another window's run key. A night asked for whole (a backfill from the UI,
  a night run, ``recon reconcile-night``) packs its windows together: fewer runs, fewer start-ups, each
  property still pulled over its own window;
- **one pull per account window**: properties sharing a provider account (the platform account, whose
  payments are attributed by metadata) are never split, so the account's window is pulled once and
  split by attribution, not once per property;
- then groups are packed, in property-id order, into batches of at most ``batch_size`` properties (a
  shared-account group larger than that is a batch on its own).

A batch's key names its night, its earliest window's start and a digest of its members: a run key made
from it dedupes exactly the same work, and a changed membership (a property added) is new work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from itertools import groupby
from typing import TypeVar

from recon_pipeline.nights import NightWindow, night_window
from recon_pipeline.properties import PropertyRow

# A run worker's start costs seconds of CPU whatever it reconciles: 500 was faster than 250 for a night of
# 2,000 properties asked for whole (4 runs, one wave at the deployment's 4, against 8 in two waves), as 250
# was than 100 (benchmarks/results.md).
DEFAULT_BATCH_SIZE = 500

T = TypeVar("T")


@dataclass(frozen=True)
class NightBatch:
    """Properties of one night that one run reconciles."""

    night: date
    window_start: datetime  # the earliest of its properties' night windows (the only one, window by window)
    property_ids: tuple[str, ...]

    @property
    def key(self) -> str:
        """``<night>@<window start, UTC HHMM>-<n>-<digest>``: stable for the same members."""
        digest = hashlib.sha256("\n".join(self.property_ids).encode()).hexdigest()[:10]
        return f"{self.night.isoformat()}@{self.window_start:%H%M}-{len(self.property_ids)}-{digest}"


@dataclass(frozen=True)
class _Member:
    property_id: str
    window: NightWindow
    account: str | None


def _account_groups(members: list[_Member]) -> list[list[_Member]]:
    """Members grouped so one pull serves a group: a property alone on its account is its own group;
    properties sharing one (the platform account included) in the same night window form one group."""
    by_pull: dict[tuple[str | None, datetime, datetime], list[_Member]] = {}
    for member in members:
        by_pull.setdefault((member.account, member.window.start, member.window.end), []).append(member)
    groups = [group for group in by_pull.values() if len(group) > 1]
    singles = [group for group in by_pull.values() if len(group) == 1]
    return sorted(groups + singles, key=lambda group: group[0].property_id)


def plan_batches(
    properties: Iterable[PropertyRow], night: date, batch_size: int, *, one_window_each: bool
) -> list[NightBatch]:
    """The batches that reconcile ``night`` for ``properties`` (validated rows), in a stable order: each of
    one night window (``one_window_each``, the schedule's) or windows packed together (a whole night)."""
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    members = sorted(
        (
            _Member(p.property_id, night_window(night, p.timezone, p.night_cutoff), p.provider_account)
            for p in properties
        ),
        key=lambda m: (m.window.start, m.window.end, m.property_id),
    )
    if one_window_each:
        parts = [list(same) for _, same in groupby(members, key=lambda m: (m.window.start, m.window.end))]
    else:
        parts = [members] if members else []
    return [batch for part in parts for batch in _packed(night, _account_groups(part), batch_size)]


def packed(groups: Iterable[list[T]], size: int, *, taper: bool = False) -> list[list[T]]:
    """Groups packed in order into parts of at most ``size`` items, never cut (a larger group alone). With
    ``taper``, once no more than ``size`` items are left, each part takes at most half of what is left,
    but never less than a quarter of ``size`` (100: ..., 100, 50, 25, 25)."""
    groups = list(groups)
    left = sum(len(group) for group in groups)
    parts: list[list[T]] = []
    current: list[T] = []
    limit = _limit(left, size, taper)
    for group in groups:
        if current and len(current) + len(group) > limit:
            parts.append(current)
            left -= len(current)
            current = []
            limit = _limit(left, size, taper)
        current.extend(group)
    if current:
        parts.append(current)
    return parts


def _limit(left: int, size: int, taper: bool) -> int:
    """The next part's size, ``left`` items to go (``packed``)."""
    if not taper or left > size:
        return size
    return max(size // 4, (left + 1) // 2)


def _packed(night: date, groups: list[list[_Member]], batch_size: int) -> list[NightBatch]:
    """Account groups packed in order into batches of at most ``batch_size`` (a larger group alone)."""
    return [
        NightBatch(night, min(m.window.start for m in batch), tuple(sorted(m.property_id for m in batch)))
        for batch in packed(groups, batch_size)
    ]
