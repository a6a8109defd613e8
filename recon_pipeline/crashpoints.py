"""Named crash points: SIGKILL this very process the N-th time it passes a named point. Off by default.

The crash-window tests need a process to die at an exact place, e.g. after the adjustments committed but
before Dagster heard of them. Like the simulator's fault switches, the switch is thrown from outside, by
the process's environment:

- ``RECON_CRASH_POINT`` names one of ``POINTS`` (anything else is a configuration error, so a typo cannot
  silently disarm a test);
- ``RECON_CRASH_AFTER`` (default 1) is the hit of that point at which to die: 3 means the third time.

The variables are read once, at the first ``crash_point`` call, not at import, so a process that imported
this module before its environment was set (a fork server that preloads the package) still obeys its own
environment; a forked child forgets its parent's reading and hit count. Unset, a call costs one cached
lookup and a comparison: production never sets the variables.

SIGKILL, not an exception or ``sys.exit``: nothing in the process (``finally`` blocks, Dagster's event
writes, atexit hooks, connection pools) gets to run, exactly as when the kernel kills a worker.
"""

from __future__ import annotations

import functools
import os
import signal
from dataclasses import dataclass

POINT_VARIABLE = "RECON_CRASH_POINT"
AFTER_VARIABLE = "RECON_CRASH_AFTER"

ADJUSTMENTS_BEFORE_COMMIT = "adjustments.before_commit"  # rows written, transaction still open
ADJUSTMENTS_COMMITTED = "adjustments.committed"  # committed; the materialization not yet reported
EVENT_BEFORE_COMMIT = "events.before_commit"  # the event's effects and processed mark written, not committed
EVENT_COMMITTED = "events.committed"  # committed; the batch's next events and the run's report not done

POINTS = frozenset({ADJUSTMENTS_BEFORE_COMMIT, ADJUSTMENTS_COMMITTED, EVENT_BEFORE_COMMIT, EVENT_COMMITTED})


@dataclass
class _Switch:
    point: str
    after: int
    hits: int = 0


def crash_point(name: str) -> None:
    """Die here (SIGKILL) when the environment names ``name`` and this is its ``RECON_CRASH_AFTER``-th hit."""
    switch = _armed()
    if switch is None or switch.point != name:
        return
    switch.hits += 1
    if switch.hits >= switch.after:
        os.kill(os.getpid(), signal.SIGKILL)


@functools.cache
def _armed() -> _Switch | None:
    point = os.environ.get(POINT_VARIABLE)
    if not point:
        return None
    if point not in POINTS:
        raise ValueError(f"{POINT_VARIABLE}={point!r} is not a crash point; known: {sorted(POINTS)}")
    after = os.environ.get(AFTER_VARIABLE, "1")
    if not after.isdigit() or int(after) < 1:
        raise ValueError(f"{AFTER_VARIABLE} must be a positive integer, got {after!r}")
    return _Switch(point, int(after))


os.register_at_fork(after_in_child=_armed.cache_clear)
