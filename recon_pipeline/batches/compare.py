"""Compare a batch's nights (pure): the ledgers and captured payment orders as one frame each, each night's
entries by tender and its pull attributed, then the matcher, run once over the batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from recon_pipeline.batches.at_once import at_once, beside, ok
from recon_pipeline.batches.property_nights import Comparison, NightInput
from recon_pipeline.frames import SCOPE, pieces
from recon_pipeline.ledger.queries import captured_orders_frame, ledger_frames
from recon_pipeline.ledger.validation import LedgerSplit, split_ledger_records
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.attribution import attribute, reports_unattributed
from recon_pipeline.reconcile.diff import NightToDiff, unmatched_ids_of_nights
from recon_pipeline.reconcile.fees import FeesTaken, fees_for_diff
from recon_pipeline.reconcile.identity import PaymentAliases, canonical_ledger, payment_aliases
from recon_pipeline.reconcile.matching import MatchPolicy, NightToMatch, match_nights, with_groups
from recon_pipeline.reconcile.posted import fold_posted_adjustments
from recon_pipeline.reconcile.takings import Tendered, by_tender


@dataclass(frozen=True)
class _Prepared:
    """A night's comparison up to the matcher: what the matcher is handed, and the fees set aside."""

    entries: LedgerSplit
    tendered: Tendered
    own: pd.DataFrame
    nobody: pd.DataFrame
    unattributed: int
    aliases: PaymentAliases
    to_match: NightToMatch
    taken: FeesTaken | None
    orders: pd.DataFrame


def compare(nights: Sequence[NightInput]) -> list[Comparison | BaseException]:
    """Every night's ledger entries and captured payment orders as one frame each (split once into what
    the diff takes and the invalid entries' findings), each night's ledger by tender and pull split by
    attribution, then the matcher over all the nights at once (``match_nights``: a batch pays its fixed
    costs once). A bad ledger row becomes a finding; a bad match_policy, or anything else one night's
    input breaks, fails that night alone (with its name)."""
    ledgers = at_once(nights, _ledgers, "ledger frame")
    orders = at_once(nights, _orders, "payment orders frame")
    prepared: list[_Prepared | BaseException] = []
    for night, entries, captured in zip(nights, ledgers, orders, strict=True):
        try:
            prepared.append(_prepare(night, ok(entries), ok(captured)))
        except Exception as error:
            prepared.append(error)
    matchings = beside(prepared, lambda ready: match_nights([p.to_match for p in ready]), "matching")
    unmatched = beside(
        matchings,
        lambda ready: unmatched_ids_of_nights(
            [NightToDiff(m.provider_records, m.ledger, cuts=m.cuts) for m in ready]
        ),
        "unmatched ids",
    )
    compared: list[Comparison | BaseException] = []
    for part, matching, loose in zip(prepared, matchings, unmatched, strict=True):
        if isinstance(loose, BaseException):  # the first step's error, kept in its place by the next
            compared.append(loose)
            continue
        done = ok(part)
        compared.append(
            Comparison(
                done.entries,
                done.tendered,
                done.own,
                done.nobody,
                done.unattributed,
                done.aliases,
                ok(matching),
                done.taken,
                done.orders,
                loose,
            )
        )
    return compared


def rematched(night: NightInput, compared: Comparison, elsewhere: pd.DataFrame) -> Comparison:
    """The night compared again when the aliases the records looked up (``elsewhere``) add key some ledger
    entry by another charge: only then does the matcher, whose input is otherwise the same, see anything
    new; else the comparison as it was. Most lookups find timing differences of charges the ledger names
    by their own id: where the ledger names none of the records' intents, no alias is even built."""
    ledger = compared.tendered.provider
    named = set(ledger["provider_record_id"].tolist())
    if named.isdisjoint(elsewhere["payment_intent_id"].tolist()):
        return compared
    aliases = payment_aliases(compared.own, elsewhere)
    if not _renames(ledger, compared.aliases, aliases):
        return compared
    to_match, taken = _to_match(night, compared.tendered, compared.own, aliases)
    return replace(compared, matching=match_nights([to_match])[0], taken=taken)


def _renames(ledger: pd.DataFrame, before: PaymentAliases, after: PaymentAliases) -> bool:
    """Whether ``after`` keys some ledger entry by another charge than ``before``."""
    keyed = canonical_ledger(ledger, before)["provider_record_id"]
    return not keyed.equals(canonical_ledger(ledger, after)["provider_record_id"])


def _ledgers(nights: Sequence[NightInput]) -> list[LedgerSplit]:
    """The nights' ledger rows as one frame, split once into the entries the diff takes and the invalid
    entries' findings, then handed to each night."""
    parts = [(night.pms.ledger[night.target.row.property_id], night.target.window) for night in nights]
    split = split_ledger_records(ledger_frames(parts))
    valid = pieces(split.valid, split.valid[SCOPE].to_numpy(), len(parts))
    invalid = pieces(split.invalid, split.invalid[SCOPE].to_numpy(), len(parts))
    return [LedgerSplit(entries, found) for entries, found in zip(valid, invalid, strict=True)]


def _orders(nights: Sequence[NightInput]) -> list[pd.DataFrame]:
    """The nights' captured payment orders as one frame, handed to each night."""
    parts = [night.pms.captured_orders[night.target.row.property_id] for night in nights]
    scopes = np.repeat(np.arange(len(parts), dtype=np.int64), [len(rows) for rows in parts])
    return pieces(captured_orders_frame([row for rows in parts for row in rows]), scopes, len(parts))


def _prepare(night: NightInput, entries: LedgerSplit, orders: pd.DataFrame) -> _Prepared:
    """The night's ledger by tender and pull by attribution, and what the matcher is to compare."""
    target = night.target
    # Cash, bank transfers, OTA-collected money: the hotel's takings, never the provider's (takings.py).
    tendered = by_tender(entries.valid)
    split = attribute(night.claimed, target.account, night.owners)
    own = split.own
    unattributed = split.unattributed
    nobody = (
        unattributed if unattributed.empty or reports_unattributed(target.account) else unattributed.iloc[0:0]
    )
    # Ledger ids are mapped to charge ids first (identity.py): an entry booked by PaymentIntent or order id
    # is explained by its charge and not looked up.
    aliases = payment_aliases(own)  # the pull's: the lookups add to it only when they found something
    to_match, taken = _to_match(night, tendered, own, aliases)
    return _Prepared(entries, tendered, own, nobody, len(unattributed), aliases, to_match, taken, orders)


def _to_match(
    night: NightInput, tendered: Tendered, own: pd.DataFrame, aliases: PaymentAliases
) -> tuple[NightToMatch, FeesTaken | None]:
    """What the matcher compares, and from it the diff: the ledger keyed by charge, the night's posted
    corrections credited to the entries they correct (so a corrected movement is matched and its finding
    clears), the fees the property does not book per movement set aside; the matcher then pairs what names
    no provider id (reconcile/matching)."""
    row, property_id = night.target.row, night.target.row.property_id
    policy = _match_policy(row)
    ledger = fold_posted_adjustments(
        canonical_ledger(tendered.provider, aliases), night.pms.posted[property_id]
    )
    compared, ledger, taken = fees_for_diff(own, ledger, row.fee_booking_mode)
    grouped = with_groups(compared, night.pms.groups[property_id])
    return NightToMatch(grouped, ledger, policy, night.pms.known[property_id]), taken


def _match_policy(row: PropertyRow) -> MatchPolicy:
    """The property's matching policy (``properties.match_policy``, the defaults when NULL); a bad one is
    a ValueError naming the property, which fails that property alone."""
    try:
        return MatchPolicy.parse(row.match_policy)
    except ValueError as error:
        raise ValueError(f"property {row.property_id!r} has an invalid match_policy: {error}") from None
