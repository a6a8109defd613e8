"""The matches list with its filters, a match's page and a person's decisions on it (confirm, reject with a
reason), and the form that pairs unmatched records by hand; all narrowed to the user's properties.

A decision is one transaction, as a finding's review is: the match is read narrowed to the user's
properties (another property's is the same 404 as an unknown id), ``review.matches`` decides it (who is
the signed-in user) and appends its ``match_decisions`` row, and the desk's audit row is written with
them. Deciding a match needs the permission that reviews findings (``access.REVIEW_FINDINGS``): a decision
moves no money, it tells the next run which records belong together (docs/review-desk.md says why).
A refusal of ``review.matches`` (a cleared match, a record another match holds, an entry outside the
night) is shown above the form as its one line, nothing written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import RowMapping
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from recon_pipeline.errors import ReviewError
from recon_pipeline.keys import parse_night
from recon_pipeline.reconcile.matching.policy import RULES
from recon_pipeline.review import matches as store
from recon_pipeline.review.rules import MAX_NOTE_LENGTH, validate_note
from recon_pipeline.review_desk import matches
from recon_pipeline.review_desk.access import REVIEW_FINDINGS, may
from recon_pipeline.review_desk.audit import record_audit
from recon_pipeline.review_desk.listing import amount_search, parse_sort, totals
from recon_pipeline.review_desk.matches import PAGE_SIZE, amount_text, shown_match
from recon_pipeline.review_desk.pages.filters import optional_param, users_property
from recon_pipeline.review_desk.pages.findings import parse_id
from recon_pipeline.review_desk.paging import Page, count_rows, parse_page
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk
from recon_pipeline.storage import matches as stored

FILTERS: Final = ("property", "night", "status", "rule", "cleared", "q", "sort")
PAIR_FIELDS: Final = ("property", "night", "records", "entries", "reason")
DECISIONS: Final = {store.CONFIRM: store.confirm_match, store.REJECT: store.reject_match}
AUDIT_ACTIONS: Final = {
    store.CONFIRM: "confirm_match",
    store.REJECT: "reject_match",
    store.PAIR: "pair_match",
}
_IDS_SPLIT: Final = re.compile(r"[\s,]+")
_FINDING_PAGE: Final = re.compile(r"/findings/[0-9]{1,18}")  # where a decision may send its reader back


def routes(desk: Desk) -> list[Route]:
    def matches_list(request: Request, user: ReviewUser) -> Response:
        params = request.query_params
        try:
            where = parse_match_filter(params, user)
            search = optional_param(params, "q")
            if search is not None:
                amount_search(search)  # a reversed amount range: refused here, not an empty list
            sort = parse_sort(params, matches.SORT_COLUMNS, matches.DEFAULT_SORT.word)
            number = parse_page(params)
        except ValueError as error:
            return desk.page(
                request,
                "matches.html",
                user,
                400,
                rows=[],
                page=None,
                provider_totals=[],
                ledger_totals=[],
                sort=matches.DEFAULT_SORT,
                error=str(error),
                **_choices(params, user),
            )
        with desk.engine.connect() as connection:
            statement = matches.matches_statement(where, user.properties, PAGE_SIZE, 0, search, sort)
            page = Page(number, PAGE_SIZE, count_rows(connection, statement))
            rows = matches.list_matches(
                connection, where, user.properties, PAGE_SIZE, page.offset, search, sort
            )
            provider_totals = totals(connection, statement, "provider_amount_minor")
            ledger_totals = totals(connection, statement, "ledger_amount_minor")
        return desk.page(
            request,
            "matches.html",
            user,
            rows=[shown_match(row) for row in rows],
            page=page,
            provider_totals=provider_totals,
            ledger_totals=ledger_totals,
            sort=sort,
            error=None,
            **_choices(params, user),
        )

    def match_detail(request: Request, user: ReviewUser) -> Response:
        row = _read(desk, request, user)
        if row is None:
            return desk.not_found(request, user)
        desk.audit(user.name, "view_match", target=_target(row), amount_seen=_amount_seen(row))
        return match_page(desk, request, user, row)

    def match_decide(request: Request, user: ReviewUser, form: FormData) -> Response:
        match_id = parse_id(request.path_params["match_id"])
        action = str(form.get("action", ""))
        reason = str(form.get("reason", ""))
        back = str(form.get("back", ""))
        refusal: tuple[int, str] | None = None
        with desk.engine.begin() as connection:
            row = None if match_id is None else matches.get_match_row(connection, match_id, user.properties)
            if row is None:
                return desk.not_found(request, user)
            try:
                decide = DECISIONS.get(action)
                if decide is None:
                    raise ReviewError(f"unknown decision {action!r}: confirm or reject")
                note = validate_note(reason, "the reason")
            except ReviewError as error:
                refusal = (400, str(error))
            else:
                try:
                    decision = decide(
                        connection,
                        row["property_id"],
                        row["night"],
                        row["match_key"],
                        user.name,
                        note,
                        _now(),
                    )
                except (ReviewError, LookupError) as error:  # raised before anything was written
                    refusal = (409, str(error))
                else:
                    record_audit(
                        connection,
                        user.name,
                        AUDIT_ACTIONS[action],
                        _target(row),
                        _amount_seen(row),
                        f"{_change(decision)}: {note}",
                    )
        if refusal is not None:
            return match_page(desk, request, user, row, *refusal, reason)
        return RedirectResponse(
            back if _FINDING_PAGE.fullmatch(back) else f"/matches/{match_id}", status_code=303
        )

    def pair_form(request: Request, user: ReviewUser) -> Response:
        given = {name: request.query_params.get(name, "") for name in PAIR_FIELDS}
        return pair_page(desk, request, user, given)

    def pair(request: Request, user: ReviewUser, form: FormData) -> Response:
        given = {name: str(form.get(name, "")) for name in PAIR_FIELDS}
        property_id = given["property"].strip() or None
        if property_id is not None and property_id not in user.properties:
            return desk.not_found(request, user)  # another property's records: as if none existed
        try:
            if property_id is None:
                raise ValueError("choose the property")
            night = optional_param(given, "night")
            if night is None:
                raise ValueError("give the night")
            parse_night(night)
            records, entries = split_ids(given["records"]), split_ids(given["entries"])
            if not records or not entries:
                raise ValueError(
                    f"name at least one {'provider record' if not records else 'ledger entry'} id"
                )
            note = validate_note(given["reason"], "the reason")
        except (ValueError, ReviewError) as error:
            return pair_page(desk, request, user, given, 400, str(error))
        refusal: str | None = None
        row: RowMapping | None = None
        with desk.engine.begin() as connection:
            try:
                decision = store.pair_by_hand(
                    connection, property_id, night, records, entries, user.name, note, _now()
                )
            except (ReviewError, LookupError, ValueError) as error:  # raised before anything was written
                refusal = str(error)
            else:
                row = stored.get_match(connection, property_id, night, decision.match_key)
                record_audit(
                    connection,
                    user.name,
                    AUDIT_ACTIONS[store.PAIR],
                    _target(row),
                    _amount_seen(row),
                    f"{_change(decision)}: {note}",
                )
        if refusal is not None or row is None:
            return pair_page(desk, request, user, given, 409, refusal)
        return RedirectResponse(f"/matches/{row['match_id']}", status_code=303)

    return [
        Route("/matches", desk.signed_in(matches_list), methods=["GET"]),
        Route("/matches/pair", desk.signed_in(pair_form), methods=["GET"]),  # before /matches/{match_id}
        Route("/matches/pair", desk.requires(REVIEW_FINDINGS, pair), methods=["POST"]),
        Route("/matches/{match_id}", desk.signed_in(match_detail), methods=["GET"]),
        Route("/matches/{match_id}/decide", desk.requires(REVIEW_FINDINGS, match_decide), methods=["POST"]),
    ]


def match_page(
    desk: Desk,
    request: Request,
    user: ReviewUser,
    row: RowMapping,
    status: int = 200,
    error: str | None = None,
    reason: str = "",
) -> Response:
    """A match's page: both sides, the keys that agree and differ, its decisions; ``error`` above the form."""
    with desk.engine.connect() as connection:
        history = stored.decision_history(connection, row["property_id"], row["night"], row["match_key"])
    return desk.page(
        request,
        "match.html",
        user,
        status,
        match=shown_match(row),
        history=[_shown_decision(decision) for decision in history],
        may_decide=may(user.role, REVIEW_FINDINGS),
        max_reason=MAX_NOTE_LENGTH,
        error=error,
        reason=reason,
    )


def pair_page(
    desk: Desk,
    request: Request,
    user: ReviewUser,
    given: Mapping[str, str],
    status: int = 200,
    error: str | None = None,
) -> Response:
    """The form that pairs records by hand, filled with ``given``; ``error`` above it."""
    return desk.page(
        request,
        "match_pair.html",
        user,
        status,
        given=given,
        properties=user.properties,
        may_decide=may(user.role, REVIEW_FINDINGS),
        max_reason=MAX_NOTE_LENGTH,
        error=error,
    )


def parse_match_filter(params: Any, user: ReviewUser) -> stored.MatchFilter:
    """The list's filters, validated; a property outside the user's is refused like an unknown one."""
    property_id = users_property(params, user)
    cleared_text = optional_param(params, "cleared")
    if cleared_text not in (None, "yes", "no"):
        raise ValueError("cleared is yes or no")
    rule = optional_param(params, "rule")
    if rule is not None and rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}: use one of {', '.join(RULES)}")
    return stored.MatchFilter(
        property_id=property_id,
        night=optional_param(params, "night"),
        status=optional_param(params, "status"),
        rule=rule,
        cleared=None if cleared_text is None else cleared_text == "yes",
    )


def split_ids(text: str) -> list[str]:
    """Ids as a person types them: separated by blanks or commas."""
    return [part for part in _IDS_SPLIT.split(text.strip()) if part]


def _choices(params: Any, user: ReviewUser) -> dict[str, Any]:
    return {
        "params": {name: params.get(name, "") for name in FILTERS},
        "properties": user.properties,
        "statuses": stored.MATCH_STATUSES,
        "rules": RULES,
        "list_name": "matches",
        "sort_columns": {column.name: column for column in matches.SORT_COLUMNS},
    }


def _read(desk: Desk, request: Request, user: ReviewUser) -> RowMapping | None:
    match_id = parse_id(request.path_params["match_id"])
    if match_id is None:
        return None
    with desk.engine.connect() as connection:
        return matches.get_match_row(connection, match_id, user.properties)


def _shown_decision(row: Mapping[Any, Any]) -> dict[str, Any]:
    currency = row["currency"]
    return {
        **row,
        "provider_amount": amount_text(row["provider_amount_minor"], currency),
        "ledger_amount": amount_text(row["ledger_amount_minor"], currency),
    }


def _change(decision: store.MatchDecision) -> str:
    """What a decision did, for the audit log: ``suggested -> confirmed``, ``unmatched -> confirmed`` (a
    pair by hand made the row), ``already confirmed, unchanged``."""
    if not decision.changed:
        return f"already {decision.status}, unchanged"
    return f"{decision.previous_status or 'unmatched'} -> {decision.status}"


def _target(row: Mapping[Any, Any]) -> str:
    """A match in the audit log: its property, night and key (its row id could be reused, these not)."""
    return f"{row['property_id']} {row['night']} {row['match_key']}"


def _amount_seen(row: Mapping[Any, Any]) -> int | None:
    """The amount the person saw: the provider's side, else the ledger's."""
    amount = row["provider_amount_minor"]
    if amount is None:
        amount = row["ledger_amount_minor"]
    return None if amount is None else int(amount)


def _now() -> datetime:
    return datetime.now(UTC)
