"""The recovery SLO of a queue, judged on the age of its oldest open job (pure).

Age, not depth or retry count: a burst of failures that are retried within minutes leaves many rows in
the queue but none of them old, and is no threat; one job that has waited half the SLO is, whatever the
queue's depth. Half the SLO warns (time to look), the SLO itself is an error (recovery is late).
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass

from recon_pipeline.config import positive_int_from_env
from recon_pipeline.errors import ConfigError

QUEUE_SLO_ENV = "RECON_QUEUE_SLO_S"
RENAMED_ENV = "RECON_MAX_PENDING_AGE_S"  # the events queue's own SLO before both queues shared one
DEFAULT_QUEUE_SLO_S = 900


class SloLevel(enum.Enum):
    OK = "ok"
    WARN = "warn"  # the oldest open job has waited half the SLO
    BREACHED = "breached"  # it has waited the whole SLO


@dataclass(frozen=True)
class SloVerdict:
    level: SloLevel
    oldest_age_s: float
    slo_s: int

    @property
    def warn_at_s(self) -> float:
        return self.slo_s / 2


def queue_slo_s() -> int:
    """RECON_QUEUE_SLO_S (900): how long a job may wait before its queue's recovery is late. The old name
    is refused rather than ignored, so a deployment that set it learns it has no effect."""
    if RENAMED_ENV in os.environ:
        raise ConfigError(
            f"{RENAMED_ENV} was renamed {QUEUE_SLO_ENV} (one SLO for both queues): set that instead"
        )
    return positive_int_from_env(QUEUE_SLO_ENV, DEFAULT_QUEUE_SLO_S)


def judge_oldest_age(oldest_age_s: float, slo_s: int) -> SloVerdict:
    if oldest_age_s >= slo_s:
        level = SloLevel.BREACHED
    elif oldest_age_s >= slo_s / 2:
        level = SloLevel.WARN
    else:
        level = SloLevel.OK
    return SloVerdict(level, oldest_age_s, slo_s)
