"""Retry with capped exponential backoff and jitter, within a budget in time: the schedule shared by the
event queue (``events/queue.py``) and the posting outbox (``postings/outbox.py``).

A budget in time, not in tries, is what makes "an outage shorter than the budget gives up on nothing"
hold whatever the backoff and however often workers run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from recon_pipeline import config


@dataclass(frozen=True)
class RetrySchedule:
    """How long a failing job is retried (``budget``, from its first failed try), and how long to wait
    before each retry."""

    budget: timedelta = timedelta(hours=6)
    base_delay: timedelta = timedelta(seconds=30)
    max_delay: timedelta = timedelta(minutes=30)

    @classmethod
    def configured(cls) -> RetrySchedule:
        """The event queue's schedule, as the RECON_EVENT_RETRY_* settings describe it (read now, not at
        import)."""
        settings = config.event_retry_settings()
        return cls(
            budget=timedelta(seconds=settings.budget_s),
            base_delay=timedelta(seconds=settings.base_delay_s),
            max_delay=timedelta(seconds=settings.max_delay_s),
        )

    def delay(self, tries: int, rng: random.Random) -> timedelta:
        """Wait after the ``tries``-th failed try (1-based): half the capped exponential step plus up
        to as much again at random, so the wait is never zero yet retries of one outage spread out."""
        step = min(self.max_delay, self.base_delay * 2 ** min(max(0, tries - 1), 32))
        return step / 2 + step * (rng.random() / 2)

    def spent(self, first_failed_at: datetime, now: datetime) -> bool:
        """Whether a failure at ``now`` is past the budget that started at ``first_failed_at``."""
        return now - first_failed_at >= self.budget
