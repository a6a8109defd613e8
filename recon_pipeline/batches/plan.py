"""Which properties one run reconciles: a night's properties cut into batches. Pure: no I/O, no Dagster.

A run per property-night is all fixed overhead (Dagster spends seconds launching a run; a property-night
is milliseconds of work), so a run reconciles a *batch* of properties of one night. Batches follow two
rules, then a size:

- **one night window per batch**: its properties' nights start and end at the same instant (same
  timezone and cutoff). The nightly schedule requests a night as each timezone closes it, so a batch's
  membership never grows during the day and every tick repeats the same batches (the same run keys);
- **one pull per account window**: properties sharing a provider account (the platform account, whose
  payments are attributed by metadata) are never split, so the account's window is pulled once and
  split by attribution, not once per property;
- then groups are packed, in property-id order, into batches of at most ``batch_size`` properties (a
  shared-account group larger than that is a batch on its own).

A batch's key names its night, its window's start and a digest of its members: a run key made from it
dedupes exactly the same work, and a changed membership (a property added) is new work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from itertools import groupby

from recon_pipeline.nights import NightWindow, night_window
from recon_pipeline.properties import PropertyRow

# Measured faster than 100 for a night of 2,000 properties (benchmarks/results.md, "Partitions and
# batches: why").
DEFAULT_BATCH_SIZE = 250


@dataclass(frozen=True)
class NightBatch:
    """Properties of one night that one run reconciles, all with the same night window."""

    night: date
    window_start: datetime
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
    """Members of one window grouped so a shared account stays whole: a property alone on its account
    is its own group; properties sharing one (the platform account included) form one group."""
    by_account: dict[str | None, list[_Member]] = {}
    for member in members:
        by_account.setdefault(member.account, []).append(member)
    groups = [group for group in by_account.values() if len(group) > 1]
    singles = [group for group in by_account.values() if len(group) == 1]
    return sorted(groups + singles, key=lambda group: group[0].property_id)


def plan_batches(properties: Iterable[PropertyRow], night: date, batch_size: int) -> list[NightBatch]:
    """The batches that reconcile ``night`` for ``properties`` (validated rows), in a stable order."""
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    members = sorted(
        (
            _Member(p.property_id, night_window(night, p.timezone, p.night_cutoff), p.provider_account)
            for p in properties
        ),
        key=lambda m: (m.window.start, m.window.end, m.property_id),
    )
    batches: list[NightBatch] = []
    for (start, _end), same_window in groupby(members, key=lambda m: (m.window.start, m.window.end)):
        current: list[str] = []
        for group in _account_groups(list(same_window)):
            if current and len(current) + len(group) > batch_size:
                batches.append(NightBatch(night, start, tuple(sorted(current))))
                current = []
            current.extend(m.property_id for m in group)
        if current:
            batches.append(NightBatch(night, start, tuple(sorted(current))))
    return batches
