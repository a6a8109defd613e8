"""What the asset checks judge (pure): the unexplained amount against its threshold, open orphans.

Unexplained is the sum of |difference_minor| of a property-night's OPEN findings, per currency, in
minor units; acknowledged and resolved findings are explained (someone looked at that amount). Each
currency's sum is compared with the same threshold, which is in minor units: minor units of JPY (yen),
EUR and USD (cents) are of a similar size, so one default serves them; set a property's own threshold
(`recon findings threshold`) where that is too coarse.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from recon_pipeline.config import positive_int_from_env
from recon_pipeline.errors import ConfigError

THRESHOLD_ENV: Final = "RECON_UNEXPLAINED_THRESHOLD_MINOR"
# 1,000,000 minor units: 10,000.00 EUR/USD or ¥1,000,000 in one night before the run fails.
DEFAULT_THRESHOLD_MINOR: Final = 1_000_000
FOUR_EYES_ENV: Final = "RECON_FOUR_EYES_THRESHOLD_MINOR"
ORPHAN_ERROR_ENV: Final = "RECON_ORPHAN_ERROR_HOURS"
DEFAULT_ORPHAN_ERROR_HOURS: Final = 24


def default_threshold_minor() -> int:
    """RECON_UNEXPLAINED_THRESHOLD_MINOR (minor units, ≥ 0), 1,000,000 when unset."""
    raw = os.environ.get(THRESHOLD_ENV, str(DEFAULT_THRESHOLD_MINOR)).strip()
    return threshold_minor(raw, THRESHOLD_ENV)


def four_eyes_default_minor() -> int | None:
    """RECON_FOUR_EYES_THRESHOLD_MINOR (minor units, ≥ 0), None when unset or empty: then a property
    without its own four-eyes threshold uses its unexplained-amount threshold (``review.four_eyes``)."""
    raw = os.environ.get(FOUR_EYES_ENV, "").strip()
    return threshold_minor(raw, FOUR_EYES_ENV) if raw else None


def threshold_minor(raw: str, name: str) -> int:
    """A threshold in minor units: a non-negative integer (0 tolerates nothing unexplained)."""
    if not (raw.isascii() and raw.isdigit()):
        raise ConfigError(f"{name} must be a non-negative integer of minor units, not {raw!r}")
    return int(raw)


def orphan_error_after() -> timedelta:
    """RECON_ORPHAN_ERROR_HOURS: open orphans of a night closed longer ago than this are an ERROR (24)."""
    return timedelta(hours=positive_int_from_env(ORPHAN_ERROR_ENV, DEFAULT_ORPHAN_ERROR_HOURS))


@dataclass(frozen=True)
class UnexplainedVerdict:
    """The unexplained amount per currency against the threshold; fails when any currency exceeds it."""

    amounts_minor: dict[str, int]
    threshold_minor: int
    currency: str  # the currency shown first: the largest amount, else the property's own

    @property
    def exceeded(self) -> list[str]:
        return sorted(c for c, amount in self.amounts_minor.items() if amount > self.threshold_minor)

    @property
    def passed(self) -> bool:
        return not self.exceeded

    @property
    def amount_minor(self) -> int:
        return self.amounts_minor.get(self.currency, 0)


def judge_unexplained(
    amounts_minor: Mapping[str, int], threshold: int, property_currency: str
) -> UnexplainedVerdict:
    """The verdict over the open findings' amounts (currency → sum of |difference|, minor units)."""
    amounts = {currency: int(amount) for currency, amount in sorted(amounts_minor.items()) if amount}
    largest = max(amounts, key=lambda currency: (amounts[currency], currency), default=property_currency)
    return UnexplainedVerdict(amounts, threshold, largest)


@dataclass(frozen=True)
class OrphanVerdict:
    """The night's open orphans (each already past the asset's grace) and how long ago the night closed.

    Every orphan of a night was captured during it, so the night's close bounds their age from below:
    ERROR once it lies ``error_after`` behind, WARN before.
    """

    count: int
    closed_ago: timedelta
    error_after: timedelta

    @property
    def passed(self) -> bool:
        return self.count == 0

    @property
    def is_error(self) -> bool:
        return self.count > 0 and self.closed_ago > self.error_after


def judge_orphans(count: int, night_end: datetime, now: datetime, error_after: timedelta) -> OrphanVerdict:
    """The verdict over ``count`` open orphans of the night that ended at ``night_end``."""
    return OrphanVerdict(count, now - night_end, error_after)
