"""A person's decisions on matches: confirm, reject, pair by hand (the ``matches`` table and its reads are
``storage/matches.py``'s).

Every decision appends a ``match_decisions`` row: who, when, why, the ids and the amounts they saw. A
decision locks the property-night (``lock_partition``, as the run that saves its matches does) and the
row, and writes the row and its audit row in the caller's one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Connection, RowMapping, insert, or_, select

from recon_pipeline.db.schema import discrepancies, ledger_entries, match_decisions, matches
from recon_pipeline.errors import ReviewError
from recon_pipeline.ledger.queries import ADJACENT_NIGHT_MARGIN, load_property
from recon_pipeline.nights import night_window
from recon_pipeline.reconcile.matching import CONFIRMED, MATCHED, PERSON, match_key
from recon_pipeline.review.rules import validate_note, validate_reviewer
from recon_pipeline.storage.matches import (
    HELD_BACK_PREFIXES,
    REJECTED,
    adjacent_nights,
    decide,
    get_match,
    held_back_records,
    ids_of,
    save_pairing,
)
from recon_pipeline.storage.partition import lock_partition

CONFIRM: Final = "confirm"
REJECT: Final = "reject"
PAIR: Final = "pair"
DECISION_ACTIONS: Final = (CONFIRM, REJECT, PAIR)
_ACTION_STATUS: Final = {CONFIRM: CONFIRMED, REJECT: REJECTED, PAIR: CONFIRMED}


@dataclass(frozen=True)
class MatchDecision:
    """What one confirm, reject or pair did; ``changed`` is False when the row was already so."""

    property_id: str
    night: str
    match_key: str
    action: str
    previous_status: str | None  # None: a pair by hand made the row
    status: str
    provider_record_ids: str
    ledger_entry_ids: str
    provider_amount_minor: int | None
    ledger_amount_minor: int | None
    currency: str | None

    @property
    def changed(self) -> bool:
        return self.previous_status != self.status


def confirm_match(
    connection: Connection, property_id: str, night: str, key: str, by: str, reason: str, now: datetime
) -> MatchDecision:
    """Confirm the stored match (a suggestion, usually): the next run matches it for certain, clears its
    findings and withdraws their proposals. A person may also confirm a pairing they rejected before."""
    return _decide(connection, property_id, night, key, CONFIRM, by, reason, now)


def reject_match(
    connection: Connection, property_id: str, night: str, key: str, by: str, reason: str, now: datetime
) -> MatchDecision:
    """Reject the stored match: the matcher never proposes this pairing again (its records and entries go
    back to the diff unmatched, or to another candidate). A person may also reject what they confirmed."""
    return _decide(connection, property_id, night, key, REJECT, by, reason, now)


def _decide(
    connection: Connection,
    property_id: str,
    night: str,
    key: str,
    action: str,
    by: str,
    reason: str,
    now: datetime,
) -> MatchDecision:
    """Confirm or reject one stored row, with its audit row; already so: nothing written. A row a later
    run no longer found is refused: what was matched is not there to decide any more; so is a confirmation
    of a pairing whose record or entry another current match holds."""
    by, reason = validate_reviewer(by), validate_note(reason, "--reason")
    lock_partition(connection, property_id, night)
    row = get_match(connection, property_id, night, key, lock=True)
    if row["cleared_at"] is not None:
        raise ReviewError(
            f"match {key!r} of {property_id} on {night} is cleared: the latest run no longer finds it"
        )
    if action == CONFIRM:
        records, entries = ids_of(row["provider_record_ids"]), ids_of(row["ledger_entry_ids"])
        _refuse_matched(connection, property_id, night, key, records, entries)
    status = _ACTION_STATUS[action]
    decision = _decision(row, action, row["status"], status)
    if decision.changed:
        decide(connection, row["match_id"], status, by, reason, now)
        _record(connection, decision, by, reason, now)
    return decision


def pair_by_hand(
    connection: Connection,
    property_id: str,
    night: str,
    provider_record_ids: Sequence[str],
    ledger_entry_ids: Sequence[str],
    by: str,
    reason: str,
    now: datetime,
) -> MatchDecision:
    """Match these provider records with these ledger entries, as a person decides: a ``confirmed`` row,
    rule ``person``, which the next run matches for certain.

    Refused in one line naming the id: a side empty or naming an id twice; a ledger entry that is not the
    property's, posted in the night or the margin either side; a provider record no current finding or
    match of the night names (the records the pipeline knows it could not match); an id a current match
    of the night or the nights either side already holds. Pairing exactly a stored suggestion confirms it;
    pairing what a person rejected confirms it too (the person changed their mind, audited)."""
    by, reason = validate_reviewer(by), validate_note(reason, "--reason")
    records, entries = tuple(provider_record_ids), tuple(ledger_entry_ids)
    for side, ids in (("--record", records), ("--entry", entries)):
        if not ids:
            raise ReviewError(f"name at least one {side} to pair")
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ReviewError(f"{side} {twice[0]!r} is named twice")
        spaced = [i for i in ids if not i or any(c.isspace() for c in i) or "+" in i or "=" in i]
        if spaced:
            raise ReviewError(f"{side} {spaced[0]!r} is not an id (no blanks, '+' or '=')")
    lock_partition(connection, property_id, night)
    key = match_key(records, entries)
    entry_rows = _ledger_entries(connection, property_id, night, entries)
    provider_amount, record_kinds = _night_records(connection, property_id, night, records)
    _refuse_matched(connection, property_id, night, key, records, entries)
    stored = (
        connection.execute(
            select(matches)
            .where(matches.c.property_id == property_id, matches.c.night == night, matches.c.match_key == key)
            .with_for_update()
        )
        .mappings()
        .first()
    )
    if stored is not None and stored["cleared_at"] is None:
        decision = _decision(stored, PAIR, stored["status"], CONFIRMED)
        if decision.changed:
            decide(connection, stored["match_id"], CONFIRMED, by, reason, now)
            _record(connection, decision, by, reason, now)
        return decision
    currencies = sorted({row["currency"].upper() for row in entry_rows})
    # the records' kind, as their findings state it (else the entries'): what the matcher finds them by
    kinds = sorted(record_kinds or {row["kind"] for row in entry_rows})
    bookings = sorted({row["booking_id"] for row in entry_rows if row["booking_id"]})
    facts = {
        "rule": PERSON,
        "score": None,
        "status": CONFIRMED,
        "kind": kinds[0] if len(kinds) == 1 else None,
        "provider_record_ids": " ".join(sorted(records)),
        "ledger_entry_ids": " ".join(sorted(entries)),
        "booking_id": bookings[0] if len(bookings) == 1 else None,
        "provider_amount_minor": provider_amount,
        "ledger_amount_minor": sum(int(row["amount_minor"]) for row in entry_rows),
        "currency": currencies[0] if len(currencies) == 1 else None,
        "keys_agree": None,
        "keys_differ": None,
        "detail": f"paired by hand by {by}",
        "cleared_at": None,
        "decided_by": by,
        "decided_at": now,
        "decision_reason": reason,
    }
    # stored: a run found this pairing once and no longer does; the person's pair makes it current
    where = {"property_id": property_id, "night": night, "match_key": key}
    save_pairing(connection, None if stored is None else stored["match_id"], where, facts, now)
    row = get_match(connection, property_id, night, key)
    decision = _decision(row, PAIR, None, CONFIRMED)
    _record(connection, decision, by, reason, now)
    return decision


def _ledger_entries(
    connection: Connection, property_id: str, night: str, entry_ids: Sequence[str]
) -> list[RowMapping]:
    """The entries, each the property's and posted in the night or the margin either side (what the
    night's run reads); else a one-line LookupError naming the first that is not."""
    prop = load_property(connection, property_id)
    wide = night_window(night, prop.timezone, prop.night_cutoff).widened(ADJACENT_NIGHT_MARGIN)
    rows = {
        row["entry_id"]: row
        for row in connection.execute(
            select(
                ledger_entries.c.entry_id,
                ledger_entries.c.kind,
                ledger_entries.c.booking_id,
                ledger_entries.c.amount_minor,
                ledger_entries.c.currency,
            ).where(
                ledger_entries.c.entry_id.in_(entry_ids),
                ledger_entries.c.property_id == property_id,
                ledger_entries.c.posted_at >= wide.start,
                ledger_entries.c.posted_at < wide.end,
            )
        ).mappings()
    }
    for entry_id in entry_ids:
        if entry_id not in rows:
            raise LookupError(
                f"ledger entry {entry_id!r} is not in {property_id}'s ledger on {night} or the nights "
                "either side"
            )
    return [rows[entry_id] for entry_id in entry_ids]


def _night_records(
    connection: Connection, property_id: str, night: str, record_ids: Sequence[str]
) -> tuple[int | None, set[str]]:
    """The records' amount as the night's current findings state it (summed; None if one is not stated)
    and the kinds those findings give them (the matcher finds a known match's records by id and kind); a
    LookupError naming the first record no current finding or stored match of the night names.

    A finding names its record in ``provider_record_id``; the matcher's held-back findings (an ambiguity,
    a suggestion) name all of theirs in the record key, ``ambiguous:<records>=<entries>``."""
    wanted = set(record_ids)
    amounts: dict[str, int] = {}
    kinds: set[str] = set()
    named: set[str] = set()
    query = (
        select(
            discrepancies.c.provider_record_id,
            discrepancies.c.provider_amount_minor,
            discrepancies.c.kind,
            discrepancies.c.record_key,
        )
        .where(
            discrepancies.c.property_id == property_id,
            discrepancies.c.night == night,
            discrepancies.c.cleared_at.is_(None),
            or_(
                discrepancies.c.provider_record_id.in_(record_ids),
                *(discrepancies.c.record_key.startswith(prefix) for prefix in HELD_BACK_PREFIXES),
            ),
        )
        .order_by(discrepancies.c.discrepancy_id)
    )
    for record_id, amount, kind, record_key in connection.execute(query):
        held = held_back_records(record_key) & wanted
        if held:  # its amount is the sum of all the records it holds: not one record's
            named |= held
        elif record_id in wanted:
            named.add(record_id)
            if amount is not None:
                amounts.setdefault(record_id, int(amount))
        else:
            continue
        if kind:
            kinds.add(kind)
    for cell in connection.execute(
        select(matches.c.provider_record_ids).where(
            matches.c.property_id == property_id, matches.c.night == night
        )
    ).scalars():
        named.update(ids_of(cell))
    for record_id in record_ids:
        if record_id not in named:
            raise LookupError(
                f"provider record {record_id!r} is in no current finding or match of {property_id} on {night}"
            )
    return (sum(amounts.values()) if set(amounts) == wanted else None), kinds


def _refuse_matched(
    connection: Connection,
    property_id: str,
    night: str,
    key: str,
    record_ids: Sequence[str],
    entry_ids: Sequence[str],
) -> None:
    """A ReviewError naming the first id a current match (matched or confirmed) of the night or the
    nights either side already holds, other than the pairing itself."""
    held = connection.execute(
        select(
            matches.c.night, matches.c.match_key, matches.c.provider_record_ids, matches.c.ledger_entry_ids
        )
        .where(
            matches.c.property_id == property_id,
            matches.c.night.in_(adjacent_nights(night)),
            matches.c.status.in_((MATCHED, CONFIRMED)),
            matches.c.cleared_at.is_(None),
        )
        .order_by(matches.c.night, matches.c.match_key)
    ).mappings()
    for row in held:
        if row["night"] == night and row["match_key"] == key:
            continue
        for what, ids, cell in (
            ("provider record", record_ids, row["provider_record_ids"]),
            ("ledger entry", entry_ids, row["ledger_entry_ids"]),
        ):
            taken = sorted(set(ids) & set(ids_of(cell)))
            if taken:
                raise ReviewError(
                    f"{what} {taken[0]!r} is already matched (match {row['match_key']!r} on {row['night']})"
                )


def _decision(row: Mapping[Any, Any], action: str, previous: str | None, status: str) -> MatchDecision:
    return MatchDecision(
        property_id=row["property_id"],
        night=row["night"],
        match_key=row["match_key"],
        action=action,
        previous_status=previous,
        status=status,
        provider_record_ids=row["provider_record_ids"],
        ledger_entry_ids=row["ledger_entry_ids"],
        provider_amount_minor=row["provider_amount_minor"],
        ledger_amount_minor=row["ledger_amount_minor"],
        currency=row["currency"],
    )


def _record(connection: Connection, decision: MatchDecision, by: str, reason: str, now: datetime) -> None:
    """Append the decision to ``match_decisions``: who, when, why, the ids and the amounts seen."""
    connection.execute(
        insert(match_decisions),
        {
            "property_id": decision.property_id,
            "night": decision.night,
            "match_key": decision.match_key,
            "action": decision.action,
            "previous_status": decision.previous_status,
            "decided_by": by,
            "reason": reason,
            "provider_record_ids": decision.provider_record_ids,
            "ledger_entry_ids": decision.ledger_entry_ids,
            "provider_amount_minor": decision.provider_amount_minor,
            "ledger_amount_minor": decision.ledger_amount_minor,
            "currency": decision.currency,
            "decided_at": now,
        },
    )
