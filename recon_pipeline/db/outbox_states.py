"""The states of a ``posting_outbox`` row (``db/schema.py``), named once beside the table.

The poster moves rows between them (``postings/outbox.py``: approved → posting → posted | failed |
unknown); the queue gauges (``metrics/queues.py``), the review desk and the commands read them. Naming
them here, on the floor below all of those, lets the readers count rows by state without importing the
poster.
"""

from __future__ import annotations

from typing import Final

APPROVED: Final = "approved"
POSTING: Final = "posting"
POSTED: Final = "posted"
FAILED: Final = "failed"
UNKNOWN: Final = "unknown"
OUTBOX_STATES: Final = (APPROVED, POSTING, POSTED, FAILED, UNKNOWN)
# The states a drainer still has work in (the outbox's depth).
OPEN_STATES: Final = (APPROVED, POSTING, UNKNOWN)
