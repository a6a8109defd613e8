"""A property as the pipeline knows it (one ``properties`` row) and the one judgement of such a row.

The PMS writes the ``properties`` table, so every floor meets these rows: the ledger reads them, providers
find a property's account through them, batches, schedules and checks skip an invalid one by name. The row
and its validation live at the root so none of those need the ledger's queries to name a property.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Final

from recon_pipeline.keys import validate_property_id
from recon_pipeline.money import BASIS_POINTS, normalize_currency, upper_currency
from recon_pipeline.nights import parse_cutoff, property_zone

# How the property's PMS books the provider's fees (``properties.fee_booking``; NULL is per_movement):
# - per_movement: one ``fee`` entry per provider fee, under its movement's id, compared in the night's diff;
# - per_payout: one ``fee`` entry per payout, under the payout id, compared with the sum of that payout's
#   fees by the payouts asset (``payouts/fees.py``), not in the night's diff;
# - none: the ledger books gross and no fee at all; the night's report shows the fees the provider took.
FEE_PER_MOVEMENT: Final = "per_movement"
FEE_PER_PAYOUT: Final = "per_payout"
FEE_NONE: Final = "none"
FEE_BOOKINGS: Final = (FEE_PER_MOVEMENT, FEE_PER_PAYOUT, FEE_NONE)


class InvalidPropertyError(ValueError):
    """A ``properties`` row the contract forbids; one line naming the property and everything wrong.

    A ValueError, so the CLI prints it as its one-line ``error:``; schedules, sensors and checks skip
    the property it names and carry on with the others."""

    def __init__(self, property_id: str, problems: Sequence[str]) -> None:
        self.property_id = property_id
        self.problems = tuple(problems)
        super().__init__(f"property {property_id!r} is invalid: {'; '.join(problems)}")


@dataclass(frozen=True)
class PropertyRow:
    """One row of ``properties``: what the pipeline needs to know about a property."""

    property_id: str
    name: str
    timezone: str
    currency: str
    night_cutoff: str
    provider_account: str | None
    # how far an entry booked at a conversion's settlement figure may be off it, in basis points of the
    # settlement amount (``fx_tolerance``); NULL, as the PMS inserts rows that name no such column, is 0
    fx_tolerance_bps: int | None = None
    # one of FEE_BOOKINGS; NULL (the PMS inserts rows that name no such column) is per_movement
    fee_booking: str | None = None
    # the matcher's tiers, threshold and window as JSON (``reconcile/matching``); NULL is its defaults
    match_policy: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "currency", upper_currency(self.currency))  # the PMS may store "usd"

    def row(self) -> dict[str, str | int | None]:
        """The ``properties`` row this was read from (or is to be written as)."""
        return asdict(self)

    @property
    def fx_tolerance(self) -> int:
        """The diff's FX tolerance in basis points: the row's, else 0 (exact)."""
        return self.fx_tolerance_bps or 0

    @property
    def fee_booking_mode(self) -> str:
        """How the PMS books the provider's fees: the row's ``fee_booking``, else per_movement (today's)."""
        return self.fee_booking or FEE_PER_MOVEMENT

    def validated(self) -> PropertyRow:
        """This row with its currency upper-cased, or InvalidPropertyError listing every problem.

        The one place a ``properties`` row is judged: the PMS writes the table, so a bad row must fail
        its own property with its name on it, never whichever schedule or check met it first."""
        problems = []
        for check in (
            lambda: validate_property_id(self.property_id),
            lambda: property_zone(self.timezone),
            lambda: parse_cutoff(self.night_cutoff),
        ):
            try:
                check()
            except ValueError as error:
                problems.append(str(error))
        try:
            currency = normalize_currency(self.currency)
        except (ValueError, AttributeError):
            problems.append(f"currency must be a three-letter ISO 4217 code, not {self.currency!r}")
        tolerance = self.fx_tolerance_bps
        if tolerance is not None and not (
            isinstance(tolerance, int) and not isinstance(tolerance, bool) and 0 <= tolerance <= BASIS_POINTS
        ):
            problems.append(
                f"fx_tolerance_bps must be whole basis points from 0 to {BASIS_POINTS}, not {tolerance!r}"
            )
        if self.fee_booking is not None and self.fee_booking not in FEE_BOOKINGS:
            problems.append(f"fee_booking must be one of {', '.join(FEE_BOOKINGS)}, not {self.fee_booking!r}")
        if problems:
            raise InvalidPropertyError(self.property_id, problems)
        return replace(self, currency=currency)


def split_valid_properties(
    rows: Iterable[PropertyRow],
) -> tuple[list[PropertyRow], list[InvalidPropertyError]]:
    """The valid rows (validated) and one error per invalid row: callers act on each property alone."""
    valid, invalid = [], []
    for row in rows:
        try:
            valid.append(row.validated())
        except InvalidPropertyError as error:
            invalid.append(error)
    return valid, invalid
