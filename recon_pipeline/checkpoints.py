"""Named checkpoints on both sides of the durable commits, and the one hook that may watch them.

The crash-window tests must kill a process at an exact place, e.g. after the adjustments committed but
before Dagster heard of them. The package only names those places and calls ``reached`` there; what
happens at a checkpoint is the business of whoever installs ``hook``. Production installs nothing, so a
call costs one global lookup and a None test: no environment read, no import of test code. The tests'
hook (``recon_pipeline_tests.support.crash_points``) SIGKILLs the process at the armed checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable

ADJUSTMENTS_BEFORE_COMMIT = "adjustments.before_commit"  # rows written, transaction still open
ADJUSTMENTS_COMMITTED = "adjustments.committed"  # committed; the materialization not yet reported
EVENT_BEFORE_COMMIT = "events.before_commit"  # the event's effects and processed mark written, not committed
EVENT_COMMITTED = "events.committed"  # committed; the batch's next events and the run's report not done
POSTING_BEFORE_SEND = "postings.before_send"  # a claimed row, nothing sent to the PMS yet
POSTING_PMS_ACCEPTED = "postings.pms_accepted"  # the sql PMS committed the posting; no answer returned yet
POSTING_ANSWERED = "postings.answered"  # the PMS's answer is in hand; the outbox row not yet written
POSTING_COMMITTED = "postings.committed"  # the outbox row committed; the drain's report not done

CHECKPOINTS = frozenset(
    {
        ADJUSTMENTS_BEFORE_COMMIT,
        ADJUSTMENTS_COMMITTED,
        EVENT_BEFORE_COMMIT,
        EVENT_COMMITTED,
        POSTING_BEFORE_SEND,
        POSTING_PMS_ACCEPTED,
        POSTING_ANSWERED,
        POSTING_COMMITTED,
    }
)

hook: Callable[[str], None] | None = None  # None in production; a test installs one


def reached(name: str) -> None:
    """The process has reached checkpoint ``name``: tell the hook, if one is installed."""
    if hook is not None:
        hook(name)
