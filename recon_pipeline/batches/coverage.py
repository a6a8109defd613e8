"""Whether a night is whole: every valid property reconciled by its latest run. Pure: the check that
judges it (``defs/checks.py``) reads the properties and the night's outcomes.

Dagster's partition status is per night and turns green with any batch's run; this is what says the
night is done, naming the properties still missing or failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from recon_pipeline.storage.night_outcomes import PropertyOutcome

LISTED = 20  # properties named in the one-line sentence; the metadata lists them all


@dataclass(frozen=True)
class NightCoverage:
    night: str
    reconciled: tuple[str, ...]
    missing: tuple[str, ...]  # valid properties with no outcome for the night
    failed: tuple[str, ...]  # valid properties whose latest outcome failed

    @property
    def whole(self) -> bool:
        return not self.missing and not self.failed

    def sentence(self) -> str:
        """``2026-11-30: 1 of 4 properties reconciled; not reconciled: a, b, c``."""
        total = len(self.reconciled) + len(self.missing) + len(self.failed)
        head = f"{self.night}: {len(self.reconciled)} of {total} properties reconciled"
        parts = [head]
        for label, ids in (("not reconciled", self.missing), ("failed", self.failed)):
            if ids:
                more = f" and {len(ids) - LISTED} more" if len(ids) > LISTED else ""
                parts.append(f"{label}: {', '.join(ids[:LISTED])}{more}")
        return "; ".join(parts)


def night_coverage(
    night: str, valid: Iterable[str], outcomes: Mapping[str, PropertyOutcome]
) -> NightCoverage:
    """The night's valid properties split by their latest outcome (``outcomes``: property id → outcome)."""
    reconciled, missing, failed = [], [], []
    for property_id in sorted(set(valid)):
        outcome = outcomes.get(property_id)
        if outcome is None:
            missing.append(property_id)
        elif outcome.succeeded:
            reconciled.append(property_id)
        else:
            failed.append(property_id)
    return NightCoverage(night, tuple(reconciled), tuple(missing), tuple(failed))
