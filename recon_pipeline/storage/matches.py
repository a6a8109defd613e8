"""The ``matches`` table: the run's save of a night's matches, what the next run is told was decided
(``known_matches``), the query type the command line and the review desk list matches with
(``MatchFilter``), and the writes of a person's decision (``review/matches.py`` decides them).

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
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import pandas as pd
from sqlalchemy import (
    ColumnElement,
    Connection,
    RowMapping,
    and_,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)

from recon_pipeline.db.schema import match_decisions, matches
from recon_pipeline.db.upsert import inserted_keys
from recon_pipeline.frames import for_database, records
from recon_pipeline.keys import parse_night, validate_property_id
from recon_pipeline.ledger.queries import in_chunks
from recon_pipeline.reconcile.matching import (
    CONFIRMED,
    MATCH_COLUMNS,
    MATCHED,
    PERSON,
    SUGGESTED,
    KnownMatch,
)
from recon_pipeline.storage.conditions import filter_conditions
from recon_pipeline.storage.partition import lock_partitions

# The matcher's statuses (reconcile/matching/policy.py: matched at or above the property's threshold,
# suggested below it, confirmed by a person) and the one only a person gives: never proposed again.
REJECTED: Final = "rejected"
MATCH_STATUSES: Final = (MATCHED, SUGGESTED, CONFIRMED, REJECTED)
DECIDED_STATUSES: Final = (CONFIRMED, REJECTED)  # never rewritten by a run

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


def save_matches(
    connection: Connection,
    property_id: str,
    night: str,
    found: pd.DataFrame,
    run_id: str | None,
    now: datetime,
) -> MatchSaveCounts:
    """``save_batch_matches`` of one partition: its counts."""
    return save_batch_matches(connection, night, {property_id: found}, run_id, now)[property_id]


def save_batch_matches(
    connection: Connection,
    night: str,
    found: Mapping[str, pd.DataFrame],
    run_id: str | None,
    now: datetime,
) -> dict[str, MatchSaveCounts]:
    """Make each property-night's current machine matches equal its frame of ``found`` (MATCH_COLUMNS, one
    row per match or suggestion the matcher found): insert the new ones, refresh the ones found with other
    facts, clear the ones no longer found, and leave every person's decision as it is (see the module's
    rule); the counts per property. A row the run hands over as ``confirmed`` (rule ``person``: the matcher
    applied a known match) is not written: the decision is stored where the person made it, on this night
    or a night either side. One read of every partition's rows, then one insert, one (executemany) refresh
    and one clear for the batch.

    Under the partitions' locks (the ones ``save_findings`` and ``sync_adjustments`` take, so the three
    are one step of a night's run), so each writer's read of what is there is current: two identical runs
    at once insert each match once, and the second changes nothing."""
    lock_partitions(connection, night, found)
    rows = {
        property_id: [_with_integers(for_database(record)) for record in records(frame, MATCH_COLUMNS)]
        for property_id, frame in found.items()
    }
    for property_id, property_rows in rows.items():
        keys = [row["match_key"] for row in property_rows]
        if len(set(keys)) != len(keys):
            twice = sorted({key for key in keys if keys.count(key) > 1})
            raise ValueError(f"matches of {property_id} on {night} name match_key {twice[0]!r} twice")
        unknown = sorted({row["status"] for row in property_rows} - {MATCHED, SUGGESTED, CONFIRMED})
        if unknown:
            raise ValueError(f"a run saves matches matched, suggested or confirmed, not {unknown[0]!r}")
    present: dict[str, dict[str, RowMapping]] = {property_id: {} for property_id in found}
    for chunk in in_chunks(sorted(found)):
        for each in connection.execute(
            select(matches)
            .where(matches.c.night == night, matches.c.property_id.in_(chunk))
            .order_by(matches.c.match_id)
            .with_for_update()
        ).mappings():
            present[each["property_id"]][each["match_key"]] = each
    new_rows: list[dict[str, Any]] = []
    refreshed: list[dict[str, Any]] = []
    stale: list[tuple[int, str]] = []  # match id, property
    counts: dict[str, dict[str, int]] = {}
    for property_id, property_rows in rows.items():
        there = present[property_id]
        count = counts[property_id] = dict.fromkeys(("unchanged", "updated", "reappeared", "decided"), 0)
        for row in property_rows:
            stored = there.get(row["match_key"])
            # a person's decision, here or on a night either side: only a person writes it
            if row["status"] == CONFIRMED or (stored is not None and stored["status"] in DECIDED_STATUSES):
                count["decided"] += 1
            elif stored is None:
                new_rows.append(
                    {**row, "property_id": property_id, "night": night, "run_id": run_id, "detected_at": now}
                )
            elif stored["cleared_at"] is None and all(_same(stored[name], row[name]) for name in MATCH_FACTS):
                count["unchanged"] += 1
            else:
                refreshed.append({"target": stored["match_id"], **{f"fact_{n}": row[n] for n in MATCH_FACTS}})
                count["updated" if stored["cleared_at"] is None else "reappeared"] += 1
        seen = {row["match_key"] for row in property_rows}
        stale += [
            (stored["match_id"], property_id)
            for key, stored in there.items()
            if key not in seen and stored["status"] not in DECIDED_STATUSES and stored["cleared_at"] is None
        ]
    if refreshed:
        connection.execute(
            update(matches)
            .where(matches.c.match_id == bindparam("target"))
            .values(**{name: bindparam(f"fact_{name}") for name in MATCH_FACTS}, cleared_at=None),
            refreshed,
        )
    new = Counter(inserted_keys(connection, matches, new_rows, ["property_id", "night", "match_key"]))
    for ids in in_chunks([match_id for match_id, _ in stale]):
        connection.execute(
            update(matches)
            .where(matches.c.match_id.in_(ids), matches.c.cleared_at.is_(None))
            .values(cleared_at=now)
        )
    cleared = Counter(property_id for _, property_id in stale)
    return {
        property_id: MatchSaveCounts(
            new=new[property_id], cleared=cleared[property_id], **counts[property_id]
        )
        for property_id in found
    }


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


def matching_conditions(where: MatchFilter) -> list[ColumnElement[bool]]:
    equal = {
        "property_id": where.property_id,
        "night": where.night,
        "status": where.status,
        "rule": where.rule,
    }
    return filter_conditions(matches, equal, where.cleared)


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


def held_back_records(record_key: str) -> set[str]:
    """The provider record ids a held-back finding's record key names (none for another finding)."""
    prefix = next((prefix for prefix in HELD_BACK_PREFIXES if record_key.startswith(prefix)), None)
    if prefix is None or "=" not in record_key:
        return set()
    return {i for i in record_key.removeprefix(prefix).split("=", 1)[0].split("+") if i}


def _same(stored: Any, found: Any) -> bool:
    """A stored fact and a run's are the same (a float score compared as floats; NULL equals NULL)."""
    if stored is None or found is None:
        return stored is None and found is None
    if isinstance(found, float) or isinstance(stored, float):
        return math.isclose(float(stored), float(found), rel_tol=0.0, abs_tol=1e-12)
    return bool(stored == found)


def _with_integers(record: dict[str, Any]) -> dict[str, Any]:
    """A found row with its amounts as ints (a float column's 120.0 is stored and compared as 120)."""
    for name in _INTEGER_FACTS:
        if record[name] is not None:
            record[name] = int(record[name])
    return record


def decide(connection: Connection, match_id: int, status: str, by: str, reason: str, now: datetime) -> None:
    """Write a person's decision on a stored row: its status, who, when and why."""
    connection.execute(
        update(matches)
        .where(matches.c.match_id == match_id)
        .values(status=status, decided_by=by, decided_at=now, decision_reason=reason)
    )


def save_pairing(
    connection: Connection,
    stored_id: int | None,
    key: Mapping[str, Any],
    facts: Mapping[str, Any],
    now: datetime,
) -> None:
    """Write a person's pairing: a new row under ``key`` (property, night, match key), or the facts of the
    stored row ``stored_id`` a run found once and no longer does."""
    if stored_id is None:
        connection.execute(insert(matches), {**facts, **key, "detected_at": now})
    else:
        connection.execute(update(matches).where(matches.c.match_id == stored_id).values(**facts))
