"""Each requester's share of the desk's page time, so that one person's back-to-back heavy requests slow
that person down rather than everyone else (pure: the caller gives the time and does the waiting).

A requester (a signed-in session, or before sign-in a client address) is charged the wall time each of
its requests spent in a page thread. What it has used drains at ``share`` seconds a second, a leaky
bucket: over any stretch of ``t`` seconds a requester gets ``burst_s + share * t`` of page time before
it waits. Past ``burst_s`` its next request waits until it is back under, at most ``max_wait_s``: what
is used is counted to ``burst_s + share * max_wait_s`` and no further, so a wait is bounded however long
a request ran. A requester waits only while someone else had a page in the last ``others_s``: alone at
the desk, it never waits, since no one would gain by it. A requester is forgotten once it has been idle for
``others_s`` and has nothing left to drain, so memory holds the last ``others_s`` of requesters only.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

SHARE = 1 / 5  # of one core: on the two-core host, one requester leaves a core and four fifths to the rest
BURST_S = 1.0  # ten ordinary pages ahead of the share: a person clicking through them never waits
MAX_WAIT_S = 3.0  # the longest a request waits for its requester's share: a slow page, never a stalled one
OTHERS_S = 60.0  # someone who had a page in the last minute is still at the desk, reading it


@dataclass(frozen=True)
class ShareLimits:
    """A requester's share of page time: ``share`` seconds a second, ``burst_s`` ahead of it before its
    requests wait, each at most ``max_wait_s``, and only while another had a page within ``others_s``."""

    share: float = SHARE
    burst_s: float = BURST_S
    max_wait_s: float = MAX_WAIT_S
    others_s: float = OTHERS_S

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1 or min(self.burst_s, self.max_wait_s, self.others_s) < 0:
            raise ValueError(f"a share is over (0, 1] and its times are not negative, not {self}")

    @property
    def most_used_s(self) -> float:
        """How much page time is counted at most: enough for a wait of ``max_wait_s``."""
        return self.burst_s + self.share * self.max_wait_s


@dataclass
class _Use:
    """What a requester had used at ``at``, its last charge."""

    used_s: float
    at: float


class WorkShares:
    """Page time used per requester (``charge``) and how long its next request waits (``wait_for``);
    ``now`` is any clock's seconds that never go back (the desk's: ``time.monotonic``)."""

    def __init__(self, limits: ShareLimits) -> None:
        self.limits = limits
        self._uses: OrderedDict[str, _Use] = OrderedDict()  # by last charge, the oldest first

    def __len__(self) -> int:
        """How many requesters are remembered."""
        return len(self._uses)

    def charge(self, requester: str, seconds: float, now: float) -> None:
        """``requester``'s request spent ``seconds`` in a page thread, ending at ``now``."""
        used = self._used(requester, now) + max(seconds, 0.0)
        self._uses[requester] = _Use(min(used, self.limits.most_used_s), now)
        self._uses.move_to_end(requester)
        self._forget_idle(now)

    def wait_for(self, requester: str, now: float) -> float:
        """How long ``requester``'s next request waits before it starts: none under its share or alone."""
        if not self._others_asked(requester, now):
            return 0.0
        over = self._used(requester, now) - self.limits.burst_s
        return max(over, 0.0) / self.limits.share

    def _used(self, requester: str, now: float) -> float:
        use = self._uses.get(requester)
        if use is None:
            return 0.0
        return max(use.used_s - self.limits.share * (now - use.at), 0.0)

    def _others_asked(self, requester: str, now: float) -> bool:
        """Whether anyone but ``requester`` was charged in the last ``others_s``: the latest other one."""
        for other in reversed(self._uses):
            if other != requester:
                return now - self._uses[other].at <= self.limits.others_s
        return False

    def _forget_idle(self, now: float) -> None:
        """Forget the oldest requesters while idle for ``others_s`` with nothing left to drain."""
        while self._uses:
            requester, use = next(iter(self._uses.items()))
            if now - use.at <= self.limits.others_s or self._used(requester, now) > 0:
                return
            del self._uses[requester]
