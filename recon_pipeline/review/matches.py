"""The one owner of the matches' tables (``matches``, ``match_decisions``): the pipeline's save of a night's
matches, what the next run is told was decided (``known_matches``), and a person's decisions: confirm,
reject, pair by hand.

Matches are kept true across re-runs as findings are (``reconcile/lifecycle.py`` states the rule for
findings; this is the same rule for matches):

- A match a run no longer finds is *cleared*, not deleted: ``cleared_at`` is set, the row stays for
  audit. A later run that finds it again makes it current again (``cleared_at`` back to NULL).
- A re-run that finds the same matches modifies no row; one that finds a match with other facts (rule,
  score, status, amounts, the keys that agree) refreshes them and keeps ``detected_at`` and ``run_id``,
  the run that first found it.
- A person's decision is never rewritten by a run: a ``confirmed`` or ``rejected`` row is neither
  refreshed nor cleared, and a run writes no ``confirmed`` row (only a person confirms). The next run
  is told of it (``known_matches``): a confirmed pairing is matched (its findings clear, their proposals
  are withdrawn), a rejected one is never proposed again.

Every decision appends a ``match_decisions`` row: who, when, why, the ids and the amounts they saw. A
decision locks the property-night (``lock_partition``, as the run that saves its matches does) and the
row, and writes the row and its audit row in the caller's one transaction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import pandas as pd
from sqlalchemy import ColumnElement, Connection, RowMapping, and_, func, insert, or_, select, update

from recon_pipeline.db.schema import discrepancies, ledger_entries, match_decisions, matches
from recon_pipeline.db.upsert import insert_new
from recon_pipeline.errors import ReviewError
from recon_pipeline.keys import parse_night, validate_property_id
from recon_pipeline.ledger.queries import ADJACENT_NIGHT_MARGIN, in_chunks, load_property
from recon_pipeline.nights import night_window
from recon_pipeline.reconcile.matching import (
    CONFIRMED,
    MATCH_COLUMNS,
    MATCHED,
    PERSON,
    SUGGESTED,
    KnownMatch,
    match_key,
)
from recon_pipeline.review.results import lock_partition
from recon_pipeline.review.rules import validate_note, validate_reviewer

# The matcher's statuses (reconcile/matching/policy.py: matched at or above the property's threshold,
# suggested below it, confirmed by a person) and the one only a person gives: never proposed again.
REJECTED: Final = "rejected"
MATCH_STATUSES: Final = (MATCHED, SUGGESTED, CONFIRMED, REJECTED)
DECIDED_STATUSES: Final = (CONFIRMED, REJECTED)  # never rewritten by a run

CONFIRM: Final = "confirm"
REJECT: Final = "reject"
PAIR: Final = "pair"
DECISION_ACTIONS: Final = (CONFIRM, REJECT, PAIR)
_ACTION_STATUS: Final = {CONFIRM: CONFIRMED, REJECT: REJECTED, PAIR: CONFIRMED}

# What a run may refresh of a row it finds again (not a person's): every fact but the key.
MATCH_FACTS: Final = tuple(name for name in MATCH_COLUMNS if name != "match_key")
_INTEGER_FACTS: Final = ("provider_amount_minor", "ledger_amount_minor")
# The record keys of the matcher's held-back findings (an ambiguity, a suggestion): they name every record
# they hold, ``<prefix><records joined by +>=<entries joined by +>``.
HELD_BACK_PREFIXES: Final = ("ambiguous:", "match:")


class UnknownMatchError(LookupError):
    """No row of ``matches`` has this property, night and match key."""


@dataclass(frozen=True)
class MatchSaveCounts:
    """What ``save_matches`` did to a property-night's rows (each row counted once)."""

    new: int  # found for the first time
    unchanged: int  # found again as they were: not written
    updated: int  # found again with other facts (rule, score, status, amounts, keys)
    reappeared: int  # cleared by an earlier run, found again
    cleared: int  # no longer found
    decided: int  # a person's decisions the run found (status confirmed, or stored as decided): not written


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


@dataclass(frozen=True)
class MatchFilter:
    """Which matches ``list_matches`` shows; None matches everything. Validated on creation.

    ``cleared``: False for the rows the latest run still finds (and every person's decision), True for the
    ones a later run no longer found, None for both."""

    property_id: str | None = None
    night: str | None = None
    status: str | None = None
    rule: str | None = None
    cleared: bool | None = None

    def __post_init__(self) -> None:
        if self.property_id is not None:
            validate_property_id(self.property_id)
        if self.night is not None:
            parse_night(self.night)
        if self.status is not None and self.status not in MATCH_STATUSES:
            raise ValueError(f"unknown match status {self.status!r}: use one of {', '.join(MATCH_STATUSES)}")


def ids_of(text: str | None) -> tuple[str, ...]:
    """The ids of a ``provider_record_ids`` or ``ledger_entry_ids`` cell (joined by a single space)."""
    return tuple(text.split(" ")) if text else ()


def adjacent_nights(night: str) -> tuple[str, str, str]:
    """The night before, the night and the night after, as 'YYYY-MM-DD'."""
    day = parse_night(night)
    one = timedelta(days=1)
    return (day - one).isoformat(), night, (day + one).isoformat()


# ----- the pipeline's save ---------------------------------------------------------------------------


def save_matches(
    connection: Connection,
    property_id: str,
    night: str,
    found: pd.DataFrame,
    run_id: str | None,
    now: datetime,
) -> MatchSaveCounts:
    """Make the property-night's current machine matches equal ``found`` (MATCH_COLUMNS, one row per match
    or suggestion the matcher found): insert the new ones, refresh the ones found with other facts, clear
    the ones no longer found, and leave every person's decision as it is (see the module's rule). A row
    the run hands over as ``confirmed`` (rule ``person``: the matcher applied a known match) is not
    written: the decision is stored where the person made it, on this night or a night either side.

    Under the partition's lock (the one ``save_findings`` and ``sync_adjustments`` take, so the three
    are one step of a night's run), so each writer's read of what is there is current: two identical runs
    at once insert each match once, and the second changes nothing."""
    lock_partition(connection, property_id, night)
    rows = [_clean(record) for record in found.loc[:, list(MATCH_COLUMNS)].to_dict("records")]
    keys = [row["match_key"] for row in rows]
    if len(set(keys)) != len(keys):
        twice = sorted({key for key in keys if keys.count(key) > 1})
        raise ValueError(f"matches of {property_id} on {night} name match_key {twice[0]!r} twice")
    unknown = sorted({row["status"] for row in rows} - {MATCHED, SUGGESTED, CONFIRMED})
    if unknown:
        raise ValueError(f"a run saves matches matched, suggested or confirmed, not {unknown[0]!r}")
    present = {
        row["match_key"]: row
        for row in connection.execute(
            select(matches)
            .where(matches.c.property_id == property_id, matches.c.night == night)
            .order_by(matches.c.match_id)
            .with_for_update()
        ).mappings()
    }
    new_rows: list[dict[str, Any]] = []
    unchanged = updated = reappeared = decided = 0
    for row in rows:
        stored = present.get(row["match_key"])
        if row["status"] == CONFIRMED or (stored is not None and stored["status"] in DECIDED_STATUSES):
            decided += 1  # a person's decision, here or on a night either side: only a person writes it
        elif stored is None:
            new_rows.append(
                {**row, "property_id": property_id, "night": night, "run_id": run_id, "detected_at": now}
            )
        elif stored["cleared_at"] is None and all(_same(stored[name], row[name]) for name in MATCH_FACTS):
            unchanged += 1
        else:
            connection.execute(
                update(matches)
                .where(matches.c.match_id == stored["match_id"])
                .values(**{name: row[name] for name in MATCH_FACTS}, cleared_at=None)
            )
            if stored["cleared_at"] is None:
                updated += 1
            else:
                reappeared += 1
    new = insert_new(connection, matches, new_rows, ["property_id", "night", "match_key"])
    seen = set(keys)
    stale = [
        row["match_id"]
        for key, row in present.items()
        if key not in seen and row["status"] not in DECIDED_STATUSES and row["cleared_at"] is None
    ]
    if stale:
        connection.execute(
            update(matches)
            .where(matches.c.match_id.in_(stale), matches.c.cleared_at.is_(None))
            .values(cleared_at=now)
        )
    return MatchSaveCounts(
        new=new,
        unchanged=unchanged,
        updated=updated,
        reappeared=reappeared,
        cleared=len(stale),
        decided=decided,
    )


def known_matches(
    connection: Connection, property_ids: Sequence[str], night: str
) -> dict[str, list[KnownMatch]]:
    """Per property, the matches decided before tonight's run, as the matcher takes them: every person's
    decision of the night and of the nights either side (confirmed: rule ``person``; rejected: its rule,
    ``confirmed=False``), and the adjacent nights' current machine matches (so an entry a neighbouring
    night's record took is not taken twice). Every property of ``property_ids`` has a list, maybe empty,
    ordered by night and match key; one statement per ``IN_CLAUSE_CHUNK`` properties."""
    nights = adjacent_nights(night)
    found: dict[str, list[KnownMatch]] = {property_id: [] for property_id in property_ids}
    columns = (
        matches.c.property_id,
        matches.c.status,
        matches.c.rule,
        matches.c.kind,
        matches.c.provider_record_ids,
        matches.c.ledger_entry_ids,
    )
    for chunk in in_chunks(sorted(found)):
        query = (
            select(*columns)
            .where(
                matches.c.property_id.in_(chunk),
                matches.c.night.in_(nights),
                or_(
                    matches.c.status.in_(DECIDED_STATUSES),
                    and_(
                        matches.c.night != night,
                        matches.c.status == MATCHED,
                        matches.c.cleared_at.is_(None),
                    ),
                ),
            )
            .order_by(matches.c.property_id, matches.c.night, matches.c.match_key)
        )
        for row in connection.execute(query).mappings():
            found[row["property_id"]].append(
                KnownMatch(
                    provider_record_ids=ids_of(row["provider_record_ids"]),
                    ledger_entry_ids=ids_of(row["ledger_entry_ids"]),
                    kind=row["kind"] or "",
                    rule=PERSON if row["status"] == CONFIRMED else row["rule"],
                    confirmed=row["status"] != REJECTED,
                )
            )
    return found


# ----- reading ---------------------------------------------------------------------------------------


def matching_conditions(where: MatchFilter) -> list[ColumnElement[bool]]:
    conditions = [
        matches.c[column] == value
        for column, value in (
            ("property_id", where.property_id),
            ("night", where.night),
            ("status", where.status),
            ("rule", where.rule),
        )
        if value is not None
    ]
    if where.cleared is not None:
        cleared_at = matches.c.cleared_at
        conditions.append(cleared_at.is_not(None) if where.cleared else cleared_at.is_(None))
    return conditions


def list_matches(connection: Connection, where: MatchFilter, limit: int) -> list[RowMapping]:
    """Matching rows, newest night first, then property and match key."""
    query = (
        select(matches)
        .where(*matching_conditions(where))
        .order_by(matches.c.night.desc(), matches.c.property_id, matches.c.match_key)
        .limit(limit)
    )
    return list(connection.execute(query).mappings())


def count_matches(connection: Connection, where: MatchFilter) -> int:
    query = select(func.count()).select_from(matches).where(*matching_conditions(where))
    return int(connection.execute(query).scalar_one())


def get_match(
    connection: Connection, property_id: str, night: str, key: str, *, lock: bool = False
) -> RowMapping:
    """The match's row, or UnknownMatchError naming it; ``lock`` holds it until the transaction ends."""
    query = select(matches).where(
        matches.c.property_id == property_id, matches.c.night == night, matches.c.match_key == key
    )
    row = connection.execute(query.with_for_update() if lock else query).mappings().first()
    if row is None:
        raise UnknownMatchError(f"no match {key!r} for property {property_id} on {night}")
    return row


def decision_history(connection: Connection, property_id: str, night: str, key: str) -> list[RowMapping]:
    """Every decision on the match, oldest first."""
    query = (
        select(match_decisions)
        .where(
            match_decisions.c.property_id == property_id,
            match_decisions.c.night == night,
            match_decisions.c.match_key == key,
        )
        .order_by(match_decisions.c.decided_at, match_decisions.c.decision_id)
    )
    return list(connection.execute(query).mappings())


# ----- a person's decisions --------------------------------------------------------------------------


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
        connection.execute(
            update(matches)
            .where(matches.c.match_id == row["match_id"])
            .values(status=status, decided_by=by, decided_at=now, decision_reason=reason)
        )
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
            connection.execute(
                update(matches)
                .where(matches.c.match_id == stored["match_id"])
                .values(status=CONFIRMED, decided_by=by, decided_at=now, decision_reason=reason)
            )
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
    if stored is None:
        connection.execute(
            insert(matches),
            {**facts, "property_id": property_id, "night": night, "match_key": key, "detected_at": now},
        )
    else:  # a run found this pairing once and no longer does: the person's pair makes it current
        connection.execute(update(matches).where(matches.c.match_id == stored["match_id"]).values(**facts))
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


def held_back_records(record_key: str) -> set[str]:
    """The provider record ids a held-back finding's record key names (none for another finding)."""
    prefix = next((prefix for prefix in HELD_BACK_PREFIXES if record_key.startswith(prefix)), None)
    if prefix is None or "=" not in record_key:
        return set()
    return {i for i in record_key.removeprefix(prefix).split("=", 1)[0].split("+") if i}


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


def _same(stored: Any, found: Any) -> bool:
    """A stored fact and a run's are the same (a float score compared as floats; NULL equals NULL)."""
    if stored is None or found is None:
        return stored is None and found is None
    if isinstance(found, float) or isinstance(stored, float):
        return math.isclose(float(stored), float(found), rel_tol=0.0, abs_tol=1e-12)
    return bool(stored == found)


def _clean(record: Mapping[str, Any]) -> dict[str, Any]:
    """pandas NA/NaN → None and numpy scalars → Python ones, as the DB drivers expect; amounts as ints."""
    cleaned: dict[str, Any] = {}
    for name, value in record.items():
        if value is None or (not isinstance(value, str) and bool(pd.isna(value))):
            cleaned[name] = None
            continue
        value = value.item() if hasattr(value, "item") else value
        cleaned[name] = int(value) if name in _INTEGER_FACTS else value
    return cleaned
