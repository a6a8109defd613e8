"""What a batch's steps hand each other for each property-night: its target, its input (the batch's PMS
input and its account's pull), the comparison, what was looked up, and the conclusions ready to write."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from recon_pipeline.batches.holds import hold_booking_ids
from recon_pipeline.frames import present
from recon_pipeline.ledger.validation import LedgerSplit
from recon_pipeline.nights import NightWindow
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.holds import AuthorizationHold
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.reconcile.captured import Sighting
from recon_pipeline.reconcile.diff import DiffResult
from recon_pipeline.reconcile.fees import FeesTaken
from recon_pipeline.reconcile.identity import PaymentAliases
from recon_pipeline.reconcile.matching import KnownMatch, MatchOutcome
from recon_pipeline.reconcile.posted import PostedAdjustment
from recon_pipeline.reconcile.report import NightReport
from recon_pipeline.reconcile.takings import NightTakings, Tendered


@dataclass(frozen=True)
class Target:
    """A property of the batch: its ``properties`` row, its night's window and its provider account."""

    row: PropertyRow
    window: NightWindow
    account: PropertyAccount


@dataclass(frozen=True)
class PmsInput:
    """The batch's night input from the PMS, each table read once for every property (rows by property;
    each property's frames are built in its own work, so a row it cannot take fails it alone)."""

    ledger: dict[str, list[dict[str, Any]]]
    captured_orders: dict[str, list[dict[str, Any]]]
    holds: dict[str, dict[str, str | None]]  # payment id → booking id of the holds to look at
    posted: dict[str, list[PostedAdjustment]]  # the night's posted adjustments, credited to their entries
    # matches decided before this run (people's, and the adjacent nights'), as the matcher takes them
    known: dict[str, list[KnownMatch]]
    groups: dict[str, dict[str, str]]  # booking id → group id of the bookings in a group


@dataclass(frozen=True)
class NightInput:
    """What one property-night is reconciled from: its target, the batch's PMS input, and its account's
    pulled window (``claimed``, with the owners of the payments that name no property)."""

    target: Target
    pms: PmsInput
    claimed: pd.DataFrame
    owners: dict[str, str]


@dataclass(frozen=True)
class RunScope:
    """What every property-night of one run shares: the night, the run, the orphans' grace."""

    night: str
    run_id: str
    orphan_grace: timedelta


@dataclass(frozen=True)
class Comparison:
    """The night compared before any lookup (pure): the ledger's valid entries by tender, the pull's
    records split by attribution, the matcher's outcome and the fees it set aside."""

    entries: LedgerSplit
    tendered: Tendered
    own: pd.DataFrame
    nobody: pd.DataFrame  # payments nobody owns, where this property reports them
    unattributed: int
    aliases: PaymentAliases
    matching: MatchOutcome
    taken: FeesTaken | None
    orders: pd.DataFrame  # the night's captured payment orders (payment_orders)
    unmatched: list[str]  # ids of in-night ledger entries no record of the pull matches (to look up)


@dataclass(frozen=True)
class LookedUp:
    """What the provider and the database said, by id, of the night's loose ends."""

    elsewhere: pd.DataFrame  # records the ledger names that the night's pull lacks
    unmatched: int  # how many ids were looked up
    holds: list[AuthorizationHold]
    hold_bookings: dict[str, str | None]  # payment id → booking id of the holds looked at
    captured: list[Sighting]  # the night's captured payments, with the booking their posting names

    def booking_ids(self) -> list[str]:
        """The bookings whose state the night's conclusions read: the captured payments' and the holds'."""
        booked = [s["booking_id"] for s in self.captured if present(s["booking_id"])]
        return [*booked, *hold_booking_ids(self.holds, self.hold_bookings)]


LookUps = Sequence[tuple[Comparison, LookedUp] | BaseException]  # per night: looked up, or its error


@dataclass(frozen=True)
class Concluded:
    """The night's results (pure), ready to commit together."""

    comparison: Comparison
    looked_up: LookedUp
    diff: DiffResult
    orphans: pd.DataFrame
    proposals: list[dict[str, Any]]
    report: NightReport  # its findings: the diff's and the orphans, as the night stores them
    matches: pd.DataFrame  # tonight's, without the adjacent nights' machine matches
    matches_by_rule: dict[str, int]
    takings: NightTakings
    now: datetime

    @property
    def findings(self) -> pd.DataFrame:
        """The night's findings to store: the diff's and the orphaned captured payments."""
        return self.report.findings
