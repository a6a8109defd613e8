"""The findings list with its filters, a finding's detail, and its review (acknowledge, resolve, reopen
with a comment); all narrowed to the user's properties.

A review is one transaction: the finding is read narrowed to the user's properties (another property's
is the same 404 as an unknown id), ``review.store.review`` changes its status and writes
``discrepancy_reviews``, and the desk's audit row is written with it. The form may say which difference
its reader saw (``difference_seen``); a finding whose difference has changed since is refused (409), so
no one acknowledges an amount they never saw.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, RowMapping
from starlette.datastructures import FormData, QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from recon_pipeline.categories import ALL_CATEGORIES
from recon_pipeline.errors import ReviewError
from recon_pipeline.providers.cards import brand_of
from recon_pipeline.reconcile.takings import UNKNOWN_BRAND
from recon_pipeline.review.links import finding_links
from recon_pipeline.review.render import difference_text
from recon_pipeline.review.rules import ACTION_STATUS, MAX_NOTE_LENGTH, validate_note
from recon_pipeline.review_desk import findings
from recon_pipeline.review_desk.access import REVIEW_FINDINGS, may
from recon_pipeline.review_desk.facts import local_and_utc
from recon_pipeline.review_desk.finding_records import cleared_sentence, finding_records
from recon_pipeline.review_desk.finding_work import assignees, review_finding
from recon_pipeline.review_desk.findings import PAGE_SIZE
from recon_pipeline.review_desk.listing import parse_major_amount, parse_sort, totals
from recon_pipeline.review_desk.matches import CANDIDATE_CATEGORIES, finding_candidates, shown_match
from recon_pipeline.review_desk.pages.filters import optional_param, users_property
from recon_pipeline.review_desk.paging import Page, count_rows, parse_page
from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk, filled_query
from recon_pipeline.storage.findings import REVIEW_STATUSES, FindingFilter
from recon_pipeline.words import (
    CARD_BRAND_WORDS,
    CATEGORY_WORDS,
    KIND_WORDS,
    MATCH_STATE_WORDS,
    QUEUE_STATE_WORDS,
    REVIEW_STATE_WORDS,
    CategoryWords,
)

FILTERS = (
    "property",
    "night_from",
    "night_to",
    "category",
    "status",
    "cleared",
    "currency",
    "amount_at_least",
    "booking",
    "brand",
    "q",
    "sort",
)


def routes(desk: Desk) -> list[Route]:
    def findings_list(request: Request, user: ReviewUser) -> Response:
        params = request.query_params
        with desk.engine.connect() as connection:
            choices = _choices(params, user, findings.property_currencies(connection, user.properties))
            try:
                query = parse_finding_query(params, user)
                number = parse_page(params)
            except ValueError as error:
                return desk.page(
                    request,
                    "findings.html",
                    user,
                    400,
                    rows=[],
                    page=None,
                    totals=[],
                    sort=findings.DEFAULT_SORT,
                    list_query="",
                    error=str(error),
                    **choices,
                )
            statement = findings.findings_statement(query, user.properties, PAGE_SIZE)
            page = Page(number, PAGE_SIZE, count_rows(connection, statement))
            rows = findings.list_findings(connection, query, user.properties, offset=page.offset)
            sums = totals(connection, statement, "difference_minor")
        now = _now()
        return desk.page(
            request,
            "findings.html",
            user,
            rows=[findings.shown_finding(row, now) for row in rows],
            page=page,
            totals=sums,
            sort=query.sort,
            list_query=list_query(params),
            error=None,
            **choices,
        )

    def finding_detail(request: Request, user: ReviewUser) -> Response:
        finding_id = parse_id(request.path_params["finding_id"])
        row = None
        if finding_id is not None:
            with desk.engine.connect() as connection:
                row = findings.get_finding(connection, finding_id, user.properties)
        if row is None:
            return desk.not_found(request, user)
        desk.audit(
            user.name,
            "view_finding",
            target=str(row["discrepancy_id"]),
            amount_seen=int(row["difference_minor"]),
        )
        return finding_page(desk, request, user, row)

    def finding_review(request: Request, user: ReviewUser, form: FormData) -> Response:
        finding_id = parse_id(request.path_params["finding_id"])
        action = str(form.get("action", ""))
        comment = str(form.get("comment", ""))
        refusal: tuple[int, str] | None = None
        with desk.engine.begin() as connection:
            row = None
            if finding_id is not None:
                row = findings.get_finding(connection, finding_id, user.properties)
            if row is None or finding_id is None:
                return desk.not_found(request, user)
            try:
                note, seen = _review_input(action, comment, str(form.get("difference_seen", "")))
            except ReviewError as error:
                refusal = (400, str(error))
            else:
                try:
                    review_finding(connection, user.name, finding_id, action, note, seen, _now())
                except ReviewError as error:  # raised before anything was written
                    refusal = (409, str(error))
        if refusal is not None:
            return finding_page(desk, request, user, row, *refusal, comment, str(form.get("back", "")))
        back = list_query(QueryParams(str(form.get("back", ""))))
        return RedirectResponse(f"/findings/{finding_id}{'?' if back else ''}{back}", status_code=303)

    return [
        Route("/findings", desk.signed_in(findings_list), methods=["GET"]),
        Route("/findings/{finding_id}", desk.signed_in(finding_detail), methods=["GET"]),
        Route(
            "/findings/{finding_id}/review",
            desk.requires(REVIEW_FINDINGS, finding_review),
            methods=["POST"],
        ),
    ]


def finding_page(
    desk: Desk,
    request: Request,
    user: ReviewUser,
    row: RowMapping,
    status: int = 200,
    error: str | None = None,
    comment: str = "",
    back: str | None = None,
) -> Response:
    """A finding's page: its category in words, both sides' records as their holders hold them, the
    matching keys, one history, its adjustments, links; ``error`` above the form; its place in the list
    its reader came from (``back``: that list's query, else the page's own query)."""
    with desk.engine.connect() as connection:
        position = _position(connection, QueryParams(request.url.query if back is None else back), user, row)
        records = finding_records(connection, row)
        candidates = [
            {**shown_match(match), "status_words": MATCH_STATE_WORDS.get(match["status"], match["status"])}
            for match in finding_candidates(connection, row)
        ]
        people = assignees(connection, row["property_id"])
    timezone = records.timezone
    return desk.page(
        request,
        "finding.html",
        user,
        status,
        row=row,
        records=records,
        category=CATEGORY_WORDS.get(row["category"], CategoryWords(row["category"], row["category"], "", "")),
        kind=KIND_WORDS.get(row["kind"] or "", row["kind"] or ""),
        kind_words=KIND_WORDS,
        queue_words=QUEUE_STATE_WORDS,
        difference=difference_text(row),
        currencies_differ=bool(row["ledger_currency"]) and row["ledger_currency"] != row["currency"],
        review_state=REVIEW_STATE_WORDS.get(row["review_status"], row["review_status"]),
        reviewed_when=local_and_utc(row["reviewed_at"], timezone),
        reviewed=row["reviewed_by"] is not None,
        cleared=cleared_sentence(row, timezone),
        detected_when=local_and_utc(row["detected_at"], timezone),
        when=lambda moment: local_and_utc(moment, timezone),
        dagster=finding_links(desk.dagster_ui_url, row),
        may_review=may(user.role, REVIEW_FINDINGS),
        max_comment=MAX_NOTE_LENGTH,
        error=error,
        comment=comment,
        candidates=candidates,
        position=position,
        assignees=people,
        pairable=row["category"] in CANDIDATE_CATEGORIES and row["cleared_at"] is None,
        pair_query=filled_query(
            {
                "property": row["property_id"],
                "night": row["night"],
                "records": row["provider_record_id"] or "",
                "entries": row["ledger_entry_id"] or "",
            }
        ),
    )


def _review_input(action: str, comment: str, difference_seen: str) -> tuple[str, int | None]:
    """The form's note and the difference its reader saw (None: not said), or ReviewError."""
    if action not in ACTION_STATUS:
        raise ReviewError(f"unknown action {action!r}: acknowledge, resolve or reopen")
    seen = signed_int(difference_seen) if difference_seen else None
    if difference_seen and seen is None:
        raise ReviewError(f"difference seen {difference_seen!r} is not a whole number of minor units")
    return validate_note(comment, "the comment"), seen


def signed_int(text: str) -> int | None:
    """A signed whole number (minor units) from a form, or None."""
    digits = text[1:] if text.startswith("-") else text
    if parse_id(digits) is None:
        return None
    return int(text)


def _now() -> datetime:
    return datetime.now(UTC)


def parse_id(raw: str) -> int | None:
    """A row id from a URL or form: digits only, at most 18 of them; None for anything else."""
    if raw.isascii() and raw.isdigit() and len(raw) <= 18:
        return int(raw)
    return None


def parse_finding_query(params: Any, user: ReviewUser) -> findings.FindingQuery:
    """The page's filters, validated; a property outside the user's is refused like an unknown one."""
    property_id = users_property(params, user)
    cleared_text = optional_param(params, "cleared")
    if cleared_text not in (None, "yes", "no"):
        raise ValueError("cleared is yes or no")
    currency = optional_param(params, "currency")
    currency = None if currency is None else currency.upper()
    amount_text = optional_param(params, "amount_at_least")
    amount = None if amount_text is None else parse_major_amount(amount_text, currency, "amount at least")
    return findings.FindingQuery(
        FindingFilter(
            property_id=property_id,
            category=optional_param(params, "category"),
            status=optional_param(params, "status"),
            cleared=None if cleared_text is None else cleared_text == "yes",
        ),
        night_from=optional_param(params, "night_from"),
        night_to=optional_param(params, "night_to"),
        amount_at_least=amount,
        currency=currency,
        booking=optional_param(params, "booking"),
        search=optional_param(params, "q"),
        sort=parse_sort(params, findings.SORT_COLUMNS, findings.DEFAULT_SORT.word),
        brand=_brand(optional_param(params, "brand")),
    )


def _brand(text: str | None) -> str | None:
    """The brand filter in the one vocabulary (``VA`` or ``Visa`` is ``visa``), ``unknown`` as it is;
    ValueError for a spelling nobody knows."""
    if text is None or text.lower() == UNKNOWN_BRAND:
        return None if text is None else UNKNOWN_BRAND
    brand = brand_of(text)
    if brand is None:
        raise ValueError(f"unknown card brand {text[:40]!r}")
    return brand


def list_query(params: Any) -> str:
    """The list's query string as the links of its rows carry it: its filters, order and page, nothing
    else (a form's ``back`` field is read through this, so a redirect only ever goes to a findings URL)."""
    page = params.get("page", "")
    return filled_query(
        {name: params.get(name, "") for name in FILTERS}, int(page) if _is_page(page) else None
    )


def _is_page(text: str) -> bool:
    try:
        return parse_page({"page": text}) > 1
    except ValueError:
        return False


def _position(
    connection: Connection, params: QueryParams, user: ReviewUser, row: RowMapping
) -> findings.ListPosition | None:
    """The finding's place in the list ``params`` describe; None when they are no list's (a bad filter)."""
    try:
        query = parse_finding_query(params, user)
    except ValueError:
        return None
    return findings.list_position(connection, query, user.properties, row, list_query(params))


def _choices(params: Any, user: ReviewUser, currencies: list[str]) -> dict[str, Any]:
    return {
        "params": {name: params.get(name, "") for name in FILTERS},
        "list_name": "findings",
        "properties": user.properties,
        "categories": ALL_CATEGORIES,
        "category_words": CATEGORY_WORDS,
        "statuses": REVIEW_STATUSES,
        "currencies": currencies,
        "brands": CARD_BRAND_WORDS,
        "sort_columns": findings.SORT_COLUMNS,
        "may_review": may(user.role, REVIEW_FINDINGS),
    }
