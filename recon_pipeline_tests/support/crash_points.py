"""The crash-window tests' hook on ``recon_pipeline.checkpoints``: SIGKILL this very process the N-th time
it reaches the armed checkpoint.

The switch travels in the environment a child is given, like the simulator's fault switches:

- ``RECON_CRASH_POINT`` names one of ``checkpoints.CHECKPOINTS`` (anything else is an error, so a typo
  cannot silently disarm a test);
- ``RECON_CRASH_AFTER`` (default 1) is the hit at which to die: 3 means the third time.

``arm_from(env)`` installs the hook; the warm children call it right after adopting their environment
(``warm_children._enter``), so the package itself never reads these variables and production, which
installs no hook, pays nothing for them.

SIGKILL, not an exception or ``sys.exit``: nothing in the process (``finally`` blocks, Dagster's event
writes, atexit hooks, connection pools) gets to run, exactly as when the kernel kills a worker.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass

from recon_pipeline import checkpoints

POINT_VARIABLE = "RECON_CRASH_POINT"
AFTER_VARIABLE = "RECON_CRASH_AFTER"


@dataclass
class CrashAt:
    """The hook: counts hits of ``point`` and SIGKILLs the process at the ``after``-th."""

    point: str
    after: int = 1
    hits: int = 0

    def __call__(self, name: str) -> None:
        if name != self.point:
            return
        self.hits += 1
        if self.hits >= self.after:
            os.kill(os.getpid(), signal.SIGKILL)


def crash_env(point: str | None, after: int = 1) -> dict[str, str]:
    """The variables that arm a child at ``point`` (none: its checkpoints stay inert)."""
    return {} if point is None else {POINT_VARIABLE: point, AFTER_VARIABLE: str(after)}


def arm_from(env: Mapping[str, str]) -> CrashAt | None:
    """Install the hook ``env`` asks for (or none); a misspelt point or a bad count raises ValueError."""
    point = env.get(POINT_VARIABLE)
    if not point:
        checkpoints.hook = None
        return None
    if point not in checkpoints.CHECKPOINTS:
        raise ValueError(
            f"{POINT_VARIABLE}={point!r} is not a checkpoint; known: {sorted(checkpoints.CHECKPOINTS)}"
        )
    after = env.get(AFTER_VARIABLE, "1")
    if not after.isdigit() or int(after) < 1:
        raise ValueError(f"{AFTER_VARIABLE} must be a positive integer, got {after!r}")
    hook = CrashAt(point, int(after))
    checkpoints.hook = hook
    return hook
