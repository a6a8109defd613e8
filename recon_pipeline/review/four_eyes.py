"""Each property's four-eyes threshold: an adjustment whose |amount| is above it needs two different
approvers (``review.adjustments.review_adjustment``, the desk's queue).

It is its own number (``approval_thresholds``, `recon adjustments four-eyes`), apart from the
unexplained-amount threshold that the blocking check judges, so that lowering one never moves the other.
The threshold in force: the property's own row, else RECON_FOUR_EYES_THRESHOLD_MINOR (read when used),
else the property's unexplained-amount threshold (``review.store.threshold_for``), so that an installation
that sets neither keeps "the property's threshold" of four-eyes as it was.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import Connection, delete, select

from recon_pipeline.db.schema import approval_thresholds
from recon_pipeline.db.upsert import upsert
from recon_pipeline.review.limits import four_eyes_default_minor
from recon_pipeline.review.store import Threshold, threshold_for

# Threshold.source of a four-eyes threshold taken from the property's unexplained-amount threshold.
UNEXPLAINED: Final = "unexplained"


def four_eyes_threshold(connection: Connection, property_id: str) -> Threshold:
    """The four-eyes threshold in force for the property, and where it comes from: ``property``
    (approval_thresholds), ``default`` (RECON_FOUR_EYES_THRESHOLD_MINOR) or ``unexplained``."""
    query = select(approval_thresholds.c.four_eyes_above_minor).where(
        approval_thresholds.c.property_id == property_id
    )
    own = connection.execute(query).scalar_one_or_none()
    if own is not None:
        return Threshold(int(own), "property")
    default = four_eyes_default_minor()
    if default is not None:
        return Threshold(default, "default")
    return Threshold(threshold_for(connection, property_id).minor, UNEXPLAINED)


def set_four_eyes_threshold(
    connection: Connection, property_id: str, minor: int | None, now: datetime
) -> None:
    """Set the property's own four-eyes threshold (minor units), or drop it (``None``) so that the
    default applies again."""
    if minor is None:
        connection.execute(
            delete(approval_thresholds).where(approval_thresholds.c.property_id == property_id)
        )
        return
    row = {"property_id": property_id, "four_eyes_above_minor": minor, "updated_at": now}
    upsert(connection, approval_thresholds, [row], ["property_id"], ["four_eyes_above_minor", "updated_at"])
