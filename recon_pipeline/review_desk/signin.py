"""Sign-in attempts per name and per client, bounded in a sliding window (pure, in memory).

One process serves the desk, so the counts live here; a restart forgets them, which only gives an
attacker one more window, never a way around it. Every attempt counts, good or bad, so a guesser cannot
interleave correct sign-ins to reset the count.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

MAX_TRACKED_KEYS = 100_000  # beyond it the oldest keys are forgotten: memory stays bounded under a flood


@dataclass
class AttemptLimiter:
    """At most ``limit`` attempts per key within ``window_s`` seconds."""

    limit: int = 5
    window_s: float = 60.0
    _attempts: dict[str, deque[float]] = field(default_factory=dict)

    def allow(self, keys: tuple[str, ...], now: float) -> bool:
        """Record an attempt under every key unless one of them is already at its limit."""
        recent = [self._recent(key, now) for key in keys]
        if any(len(times) >= self.limit for times in recent):
            return False
        for times in recent:
            times.append(now)
        return True

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._attempts.pop(key, None) or deque()
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if len(self._attempts) >= MAX_TRACKED_KEYS:
            del self._attempts[next(iter(self._attempts))]
        self._attempts[key] = times  # re-inserted last: the dict's order is least recently used first
        return times
