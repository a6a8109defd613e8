"""CPython's cyclic garbage collector, run less often while a batch computes.

A batch decodes thousands of provider pages into dicts and lists that live for one pull and builds frames
of them. At CPython's default (a young collection every 700 container allocations, a full one after a
hundred young ones) the collector ran thousands of times a batch, and its dozen full collections, each
over every object the process holds, were a fifth of the batch's CPU (benchmarks/results.md). Reference
counting frees almost all of what a batch makes as it goes: with the young threshold at
``YOUNG_THRESHOLD`` while a batch runs, a batch of 500 property-nights makes no collection at all, and the
process's peak memory does not grow. What the process held before the batch (Dagster, pandas, the code
location: most of its objects) is frozen for the batch's span (``gc.freeze``), so a collection that does
come walks only what the batch made. The thresholds the process had come back, and its objects are
unfrozen, when its last running batch ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 500_000


class _Collector:
    """The collector's thresholds, raised while at least one batch of the process runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._before = gc.get_threshold()
        self._froze = False

    @contextmanager
    def fewer_collections(self) -> Iterator[None]:
        """While it is open, the young generation is collected every ``YOUNG_THRESHOLD`` allocations, not
        700 (a process already set higher keeps its own), and the objects the process held when it opened
        are frozen (unless something else froze some: its freeze is left alone); batches running at once
        in threads share one raise, and the last to end puts the thresholds back and unfreezes."""
        with self._lock:
            if self._running == 0:
                self._before = gc.get_threshold()
                young, *older = self._before
                gc.set_threshold(max(young, YOUNG_THRESHOLD), *older)
                self._froze = gc.get_freeze_count() == 0
                if self._froze:
                    gc.freeze()
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    if self._froze:
                        gc.unfreeze()
                    gc.set_threshold(*self._before)


_collector = _Collector()
fewer_collections = _collector.fewer_collections
