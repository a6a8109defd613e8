"""`recon demo --desk-users`: the review desk's demo users over the demo's properties, and one property's
four-eyes threshold lowered so that the desk shows four-eyes approval on the demo's own proposed
adjustments.

The users are ``demo-analyst`` (analyst), ``demo-approver`` and ``demo-approver2`` (approvers), all with one
password: RECON_NEW_USER_PASSWORD if set, else a generated one that only the terminal sees. A re-run
resets the three to that password, their role and the demo's properties (a generated password is printed
once, so a re-run must make the new one work); no other user is touched.

The four-eyes threshold is the property's own (``review.four_eyes``), not the unexplained-amount threshold
that the night's blocking check judges, so a later `recon demo` still passes its checks.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, func, select

from recon_pipeline.db.schema import adjustments
from recon_pipeline.errors import ConfigError
from recon_pipeline.properties import PropertyRow
from recon_pipeline.reconcile.lifecycle import PROPOSED
from recon_pipeline.review.four_eyes import set_four_eyes_threshold
from recon_pipeline.review.render import money
from recon_pipeline.review_desk.users import reset_user, validate_password

DEMO_USERS = (("demo-analyst", "analyst"), ("demo-approver", "approver"), ("demo-approver2", "approver"))
PASSWORD_ENV = "RECON_NEW_USER_PASSWORD"
LISTED = 5  # adjustments named in the four-eyes line; the desk's queue shows them all


@dataclass(frozen=True)
class FourEyes:
    """The property whose four-eyes threshold was lowered, and the proposed adjustments now above it."""

    property_id: str
    threshold_minor: int
    currency: str
    above: tuple[tuple[str, int], ...]  # (adjustment_id, amount_minor), largest first


@dataclass(frozen=True)
class DeskDemo:
    """What the desk step did: which users it added or reset, with which password, and four-eyes."""

    added: tuple[str, ...]
    reset: tuple[str, ...]
    password: str
    generated: bool
    four_eyes: FourEyes | None


def demo_password() -> tuple[str, bool]:
    """RECON_NEW_USER_PASSWORD (validated, naming the variable), else a generated one; and whether it
    was generated (only then is it printed: a password the user chose is theirs already)."""
    given = os.environ.get(PASSWORD_ENV, "")
    if not given:
        return secrets.token_urlsafe(18), True
    try:
        return validate_password(given), False
    except ValueError as error:
        raise ConfigError(f"{PASSWORD_ENV}: {error}") from None


def four_eyes_property(properties: tuple[PropertyRow, ...]) -> str:
    """The demo property whose four-eyes threshold the desk step lowers: the first."""
    return properties[0].property_id


def add_desk_demo(engine: Engine, properties: tuple[PropertyRow, ...], now: datetime) -> DeskDemo:
    """Add or reset the demo users and lower the four-eyes property's four-eyes threshold, in one
    transaction."""
    password, generated = demo_password()
    property_ids = tuple(sorted(p.property_id for p in properties))
    added: list[str] = []
    reset: list[str] = []
    with engine.begin() as connection:
        for name, role in DEMO_USERS:
            (added if reset_user(connection, name, role, property_ids, password, now) else reset).append(name)
        property_id = four_eyes_property(properties)
        amount = func.abs(adjustments.c.amount_minor)
        proposed = connection.execute(
            select(adjustments.c.adjustment_id, adjustments.c.amount_minor, adjustments.c.currency)
            .where(adjustments.c.property_id == property_id, adjustments.c.status == PROPOSED)
            .order_by(amount.desc(), adjustments.c.adjustment_id)
        ).all()
        four_eyes = None
        if proposed:
            threshold = abs(proposed[0].amount_minor) // 2  # the larger ones need two approvers, not all
            set_four_eyes_threshold(connection, property_id, threshold, now)
            above = tuple(
                (row.adjustment_id, row.amount_minor) for row in proposed if abs(row.amount_minor) > threshold
            )
            four_eyes = FourEyes(property_id, threshold, proposed[0].currency, above)
    return DeskDemo(tuple(added), tuple(reset), password, generated, four_eyes)


def render_desk_demo(desk: DeskDemo) -> list[str]:
    """The lines the demo prints: users, the password once (if generated), and four-eyes."""
    lines = []
    if desk.added:
        lines.append(f"review desk users added: {', '.join(desk.added)}")
    if desk.reset:
        lines.append(f"review desk users reset (role, properties, password): {', '.join(desk.reset)}")
    if desk.generated:
        lines.append(f"demo password (shown once; set {PASSWORD_ENV} to choose one): {desk.password}")
    else:
        lines.append(f"demo password: the one in {PASSWORD_ENV}")
    four_eyes = desk.four_eyes
    if four_eyes is None:
        lines.append("four-eyes: no proposed adjustment to show it on")
    else:
        listed = ", ".join(
            f"{adjustment_id} ({money(amount, four_eyes.currency)})"
            for adjustment_id, amount in four_eyes.above[:LISTED]
        )
        more = len(four_eyes.above) - LISTED
        lines.append(
            f"four-eyes: {four_eyes.property_id}'s four-eyes threshold is now "
            f"{money(four_eyes.threshold_minor, four_eyes.currency)}; these proposed adjustments need two "
            f"different approvers: {listed}" + (f" and {more} more" if more > 0 else "")
        )
    return lines
