"""What a process counts as it works: counters and a histogram, per process (a Dagster run, a worker, a
receiver worker each count their own; Prometheus sums them across targets). Unregistered here: the
registry that exposes them is built with the database collector in ``exposition``.

Labels are bounded sets: ``queue`` is ``events`` or ``postings``; ``outcome`` is a settled state.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Histogram

LOST: Final = "lost"  # the claim was taken over or ran out before its turn: nothing written

PROCESSING_SECONDS = Histogram(
    "recon_queue_processing_seconds",
    "Time to process one claimed job, from its turn to its committed outcome.",
    ["queue"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=None,
)
ACKNOWLEDGEMENTS = Counter(
    "recon_queue_acknowledgements",
    "Claimed jobs settled, by the outcome committed (events: processed, retried, dead, released, "
    "lease_lost; postings: posted, failed, unknown, approved, lost).",
    ["queue", "outcome"],
    registry=None,
)
DUPLICATES_SUPPRESSED = Counter(
    "recon_duplicates_suppressed",
    "Work recognised as already done: webhook deliveries of a stored event id (events), posts the PMS "
    "answered as already holding the key, e.g. a 409 (postings).",
    ["queue"],
    registry=None,
)
UNKNOWN_TRANSITIONS = Counter(
    "recon_unknown_outcome_transitions",
    "Jobs that entered the unknown state (sent, no answer), to be resolved by lookup.",
    ["queue"],
    registry=None,
)
PROCESS_METRICS: Final = (PROCESSING_SECONDS, ACKNOWLEDGEMENTS, DUPLICATES_SUPPRESSED, UNKNOWN_TRANSITIONS)
