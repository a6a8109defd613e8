"""The matches a review desk user may see: ``storage.matches``' filter, narrowed to their properties.

As for findings (``findings.py``), every query takes the user's properties and applies them in SQL, so no
page shows or decides a match of another property whatever its URL, filter or form says. Decisions
themselves are ``review.matches``' (confirm, reject, pair by hand): the desk only reads here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, RowMapping, Select, literal, or_, select

from recon_pipeline.db.schema import matches
from recon_pipeline.reconcile.matching.words import RULE_WORDS
from recon_pipeline.review.render import money
from recon_pipeline.review_desk.listing import (
    Sort,
    SortColumn,
    amount_between,
    amount_search,
    sorted_statement,
)
from recon_pipeline.storage.conditions import one_of
from recon_pipeline.storage.matches import MatchFilter, ids_of, matching_conditions

PAGE_SIZE: Final = 200
MAX_CANDIDATES: Final = 50  # a finding's candidates shown; a held-back finding has a handful
# Findings whose page lists the matches that hold their records or entries: the matcher's own, and the
# unmatched sides a person may pair (or whose pairing a person rejected).
CANDIDATE_CATEGORIES: Final = (
    "suggested_match",
    "ambiguous_match",
    "missing_in_ledger",
    "missing_at_provider",
)
_KEYED_PREFIXES: Final = ("match:", "ambiguous:")  # record keys that carry a match key: "match:<key>"
_m = matches.c
SORT_COLUMNS: Final = (
    SortColumn("property", _m.property_id, "Property"),
    SortColumn("night", _m.night, "Night"),
    SortColumn("match", _m.match_key, "Match"),
    SortColumn("rule", _m.rule, "Rule"),
    SortColumn("score", _m.score, "Score"),
    SortColumn("status", _m.status, "Status"),
    SortColumn("provider_amount", _m.provider_amount_minor, "Provider amount"),
    SortColumn("ledger_amount", _m.ledger_amount_minor, "Ledger amount"),
)
DEFAULT_SORT: Final = Sort("night", descending=True)
TIEBREAK: Final = (_m.night.desc(), _m.property_id, _m.match_key, _m.match_id)


def matches_statement(
    where: MatchFilter,
    allowed: tuple[str, ...],
    limit: int | None,
    offset: int = 0,
    search: str | None = None,
    sort: Sort = DEFAULT_SORT,
) -> Select[Any]:
    """Every column of the matches the list shows, in ``sort``'s order; its count and totals wrap the same
    statement. The id ends the order, so pages never overlap."""
    conditions = [*matching_conditions(where), one_of(_m.property_id, allowed)]
    if search is not None:
        conditions.append(search_condition(search))
    statement = select(matches).where(*conditions)
    return sorted_statement(statement, sort, SORT_COLUMNS, TIEBREAK).limit(limit).offset(offset)


def search_condition(text: str) -> ColumnElement[bool]:
    """A match the search names: one of its provider records or ledger entries, its booking, a part of its
    key, or an amount of either side (``120.50``, ``100..200``, major units, either sign)."""
    named = [
        _holds(_m.provider_record_ids, text),
        _holds(_m.ledger_entry_ids, text),
        _m.booking_id == text,
        _m.match_key.contains(text, autoescape=True),
    ]
    amounts = amount_search(text)
    if amounts is not None:
        sides = [_m.provider_amount_minor, _m.ledger_amount_minor]
        named.append(amount_between(sides, _m.currency, *amounts, None))
    return or_(*named)


def list_matches(
    connection: Connection,
    where: MatchFilter,
    allowed: tuple[str, ...],
    limit: int = PAGE_SIZE,
    offset: int = 0,
    search: str | None = None,
    sort: Sort = DEFAULT_SORT,
) -> list[RowMapping]:
    """The matching rows of ``allowed`` properties in ``sort``'s order (newest night first unless told)."""
    statement = matches_statement(where, allowed, limit, offset, search, sort)
    return list(connection.execute(statement).mappings())


def get_match_row(connection: Connection, match_id: int, allowed: tuple[str, ...]) -> RowMapping | None:
    """The match if it exists and is of an ``allowed`` property; None otherwise (the caller's 404)."""
    statement = select(matches).where(matches.c.match_id == match_id, one_of(matches.c.property_id, allowed))
    return connection.execute(statement).mappings().first()


def finding_ids(finding: Mapping[Any, Any]) -> tuple[set[str], set[str]]:
    """The provider record ids and ledger entry ids a finding names: its own columns, and for the
    matcher's findings the sides its record key states (``match:<key>``, ``ambiguous:<key>``)."""
    records = {finding["provider_record_id"]} - {None}
    entries = {finding["ledger_entry_id"]} - {None}
    key = str(finding["record_key"])
    for prefix in _KEYED_PREFIXES:
        if key.startswith(prefix) and "=" in key:
            record_part, entry_part = key[len(prefix) :].split("=", 1)
            records.update(part for part in record_part.split("+") if part)
            entries.update(part for part in entry_part.split("+") if part)
    return records, entries


def finding_candidates(connection: Connection, finding: Mapping[Any, Any]) -> list[RowMapping]:
    """The current matches of the finding's property-night that hold one of its records or entries (a
    suggestion, a match a person may reject, a pairing a person rejected), suggestions first; empty for a
    category that has none. Narrowed to the finding's own property, which was read narrowed to the
    viewer's."""
    if finding["category"] not in CANDIDATE_CATEGORIES:
        return []
    records, entries = finding_ids(finding)
    held = [_holds(matches.c.provider_record_ids, i) for i in sorted(records)]
    held += [_holds(matches.c.ledger_entry_ids, i) for i in sorted(entries)]
    if not held:
        return []
    statement = (
        select(matches)
        .where(
            matches.c.property_id == finding["property_id"],
            matches.c.night == finding["night"],
            matches.c.cleared_at.is_(None),
            or_(*held),
        )
        .order_by((matches.c.status != "suggested"), matches.c.match_key, matches.c.match_id)
        .limit(MAX_CANDIDATES)
    )
    return [row for row in connection.execute(statement).mappings() if _names_one(row, records, entries)]


def _holds(column: Any, one_id: str) -> ColumnElement[bool]:
    """Whether a space-joined ids cell names ``one_id`` (LIKE with its wildcards escaped: ids hold '_')."""
    return (literal(" ") + column + literal(" ")).contains(f" {one_id} ", autoescape=True)


def _names_one(row: Mapping[Any, Any], records: set[str], entries: set[str]) -> bool:
    """The same test in Python, exact (a belt to the SQL's braces: LIKE's collation may fold case)."""
    return bool(
        records & set(ids_of(row["provider_record_ids"])) or entries & set(ids_of(row["ledger_entry_ids"]))
    )


def shown_match(row: Mapping[Any, Any]) -> dict[str, Any]:
    """A match as the pages show it: its row, the rule in words, the score to two places, both amounts in
    major units with the currency (the bare minor units when a by-hand pair mixed currencies)."""
    currency = row["currency"]
    score = row["score"]
    return {
        **row,
        "rule_words": RULE_WORDS.get(row["rule"], row["rule"]),
        "score_text": "" if score is None else f"{float(score):.2f}",
        "provider_amount": amount_text(row["provider_amount_minor"], currency),
        "ledger_amount": amount_text(row["ledger_amount_minor"], currency),
        "records": ids_of(row["provider_record_ids"]),
        "entries": ids_of(row["ledger_entry_ids"]),
        "open": row["cleared_at"] is None,
    }


def amount_text(minor: int | None, currency: str | None) -> str:
    """An amount in major units with its currency; bare minor units when a pair by hand mixed currencies."""
    if minor is None:
        return "-"
    return money(int(minor), currency) if currency else f"{int(minor):,} (minor units, mixed currencies)"
