"""Both sides of a finding for its page: the provider's record as the provider held it, the PMS's ledger
entry and booking, its adjustments, one history of the finding and its adjustments; and what an adjustment
corrects, for the adjustment's page.

Every query is narrowed to the finding's own property in SQL (a provider record, payment order, ledger
entry or booking of another property with the same id is never shown), so a finding's page shows nothing
its viewer may not see. The finding itself was already read narrowed to the viewer's properties.

The provider's side comes from ``provider_records`` (what the night's run saw at the provider:
``storage/provider_records.py``), else from ``payment_orders`` (what the PMS's payment flow recorded), else
the payout the finding names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, RowMapping, case, select

from recon_pipeline.db.schema import (
    FINDING_KEY,
    adjustment_reviews,
    adjustments,
    bookings,
    discrepancies,
    ledger_entries,
    payment_events,
    payment_orders,
    payouts,
    properties,
    provider_records,
)
from recon_pipeline.review.render import difference_text, money
from recon_pipeline.review.rules import status_after
from recon_pipeline.review.store import review_history
from recon_pipeline.review_desk.facts import (
    Fact,
    booking_facts,
    ledger_entry_facts,
    local_and_utc,
    payment_order_facts,
    payout_facts,
    provider_name,
    provider_record_facts,
)
from recon_pipeline.storage.findings import NOTE, PIPELINE_REVIEWER
from recon_pipeline.words import QUEUE_STATE_WORDS, REVIEW_STATE_WORDS, category_label

MAX_EVENTS = 50  # a payment's webhook events shown; a payment has a handful
MAX_PROVIDER_RECORDS = 10  # the movements stored under one id (a payment, its refunds' charge...): a few
# An adjustment review's action in words (one not listed reads as its code with spaces).
ADJUSTMENT_ACTION_WORDS = {"approve": "approved", "reject": "rejected", "withdraw": "approval withdrawn"}


@dataclass(frozen=True)
class ProviderSide:
    """One stored provider record in words, and where its provider's dashboard shows it."""

    facts: list[Fact]
    dashboard_url: str | None
    dashboard_name: str  # "Stripe's dashboard"


@dataclass(frozen=True)
class FindingRecords:
    """What the database holds about a finding's records; None or empty where it holds nothing."""

    timezone: str
    provider: list[ProviderSide]
    payment_order: list[Fact]
    payment_events: list[RowMapping]
    payout: list[Fact]
    ledger_entry: list[Fact]
    booking: list[Fact]
    adjustments: list[RowMapping]
    timeline: list[dict[str, Any]] = field(default_factory=list)


def property_timezone(connection: Connection, property_id: str) -> str:
    """The property's IANA timezone (UTC when the row is gone)."""
    found = connection.execute(
        select(properties.c.timezone).where(properties.c.property_id == property_id)
    ).scalar_one_or_none()
    return str(found) if found else "UTC"


def finding_records(connection: Connection, finding: Mapping[Any, Any]) -> FindingRecords:
    """The stored records behind ``finding``: provider side by its provider_record_id, PMS side by its
    ledger_entry_id and booking_id (else the ledger entry's or provider record's booking), its adjustments
    and the one history of the finding's and its adjustments' reviews."""
    property_id = finding["property_id"]
    timezone = property_timezone(connection, property_id)
    record_id = finding["provider_record_id"]
    stored = provider_rows(connection, property_id, record_id, finding["kind"])
    order = _order(connection, property_id, record_id)
    payout = None
    events: list[RowMapping] = []
    if record_id is not None:
        payout = _first(
            connection,
            select(payouts).where(
                payouts.c.payout_id == record_id, payouts.c.holder_property_id == property_id
            ),
        )
    if order is not None:  # events carry no property: only those of the property's own payment
        events = list(
            connection.execute(
                select(
                    payment_events.c.event_id,
                    payment_events.c.provider,
                    payment_events.c.event_type,
                    payment_events.c.received_at,
                )
                .where(payment_events.c.provider_payment_id == order["provider_payment_id"])
                .order_by(payment_events.c.received_at, payment_events.c.event_id)
                .limit(MAX_EVENTS)
            ).mappings()
        )
    entry = _entry(connection, property_id, finding["ledger_entry_id"])
    booking_id = (
        finding["booking_id"]
        or _field(entry, "booking_id")
        or next((row["booking_id"] for row in stored if row["booking_id"]), None)
        or _field(order, "booking_id")
    )
    booking = None
    if booking_id is not None:
        booking = _first(
            connection,
            select(bookings).where(
                bookings.c.booking_id == booking_id, bookings.c.property_id == property_id
            ),
        )
    proposed = finding_adjustments(connection, finding)
    return FindingRecords(
        timezone=timezone,
        provider=[provider_side(row, timezone) for row in stored],
        payment_order=[] if order is None else payment_order_facts(order, timezone),
        payment_events=events,
        payout=[] if payout is None else payout_facts(payout, timezone),
        ledger_entry=[] if entry is None else ledger_entry_facts(entry, timezone),
        booking=[] if booking is None else booking_facts(booking, timezone),
        adjustments=proposed,
        timeline=timeline(connection, finding, proposed, timezone),
    )


def provider_side(row: Mapping[Any, Any], timezone: str) -> ProviderSide:
    return ProviderSide(
        provider_record_facts(row, timezone),
        row["dashboard_url"],
        f"{provider_name(row['provider'])}'s dashboard",
    )


def provider_rows(
    connection: Connection, property_id: str, record_id: str | None, kind: str | None
) -> list[RowMapping]:
    """The property's stored provider records of ``record_id``: the finding's own kind first."""
    if record_id is None:
        return []
    pr = provider_records.c
    statement = (
        select(provider_records)
        .where(pr.property_id == property_id, pr.provider_record_id == record_id)
        .order_by(case((pr.kind == (kind or ""), 0), else_=1), pr.kind)
        .limit(MAX_PROVIDER_RECORDS)
    )
    return list(connection.execute(statement).mappings())


def finding_adjustments(connection: Connection, finding: Mapping[Any, Any]) -> list[RowMapping]:
    """The adjustments proposed for the finding (same property, night, category and record), by revision."""
    query = (
        select(adjustments)
        .where(*(adjustments.c[name] == finding[name] for name in FINDING_KEY))
        .order_by(adjustments.c.revision, adjustments.c.created_at)
    )
    return list(connection.execute(query).mappings())


def cleared_sentence(finding: Mapping[Any, Any], timezone: str) -> str:
    """When and by which run a finding cleared, and what that says; empty while it is outstanding."""
    if finding["cleared_at"] is None:
        return ""
    run = finding.get("cleared_run_id")
    by = f" by run {run}" if run else ""
    return (
        f"Cleared {local_and_utc(finding['cleared_at'], timezone)}{by}: a later run of this night no longer "
        "found it, so the ledger (or the provider) has since changed to agree."
    )


def timeline(
    connection: Connection, finding: Mapping[Any, Any], proposed: list[RowMapping], timezone: str
) -> list[dict[str, Any]]:
    """One history, oldest first: the finding detected and cleared, its reviews, its adjustments
    proposed and their reviews. Each item: ``at`` (datetime), ``when`` (both zones), ``what``, ``who``,
    ``amount``, ``note``, ``href`` (an adjustment's page, or None)."""
    items: list[dict[str, Any]] = [
        _item(
            finding["detected_at"],
            timezone,
            "Last detected" + (f" by run {finding['run_id']}" if finding["run_id"] else ""),
            "",
            "",
        )
    ]
    if finding["cleared_at"] is not None:
        run = finding.get("cleared_run_id")
        items.append(
            _item(finding["cleared_at"], timezone, "Cleared" + (f" by run {run}" if run else ""), "", "")
        )
    for event in review_history(connection, finding):  # type: ignore[arg-type]
        was = REVIEW_STATE_WORDS.get(event["previous_status"], event["previous_status"])
        after = status_after(event["action"], event["previous_status"])
        now = REVIEW_STATE_WORDS.get(after, after)
        who = "the pipeline" if event["reviewed_by"] == PIPELINE_REVIEWER else event["reviewed_by"]
        what = (
            f"Note (finding still {was.lower()})"
            if event["action"] == NOTE
            else f"Finding {was.lower()} → {now.lower()}"
        )
        if event["run_id"]:
            what += f" (run {event['run_id']})"
        items.append(
            _item(
                event["reviewed_at"], timezone, what, who, money(event["difference_minor"], event["currency"])
            )
            | {"note": event["note"] or ""}
        )
    by_id = {row["adjustment_id"]: row for row in proposed}
    for row in proposed:
        items.append(
            _item(
                row["created_at"],
                timezone,
                f"Adjustment revision {row['revision']} proposed",
                "the pipeline",
                money(row["amount_minor"], row["currency"]),
            )
            | {"href": f"/adjustments/{row['adjustment_id']}", "note": row["reason"]}
        )
    if by_id:
        ar = adjustment_reviews.c
        reviews = connection.execute(
            select(adjustment_reviews)
            .where(ar.adjustment_id.in_(list(by_id)))
            .order_by(ar.reviewed_at, ar.review_id)
        ).mappings()
        for event in reviews:
            revision = by_id[event["adjustment_id"]]["revision"]
            was = QUEUE_STATE_WORDS.get(event["previous_status"], event["previous_status"])
            now = QUEUE_STATE_WORDS.get(event["status"], event["status"])
            items.append(
                _item(
                    event["reviewed_at"],
                    timezone,
                    f"Adjustment revision {revision} {_action_words(event['action'])} ({was} → {now})",
                    event["reviewed_by"],
                    money(event["amount_minor"], event["currency"]),
                )
                | {"href": f"/adjustments/{event['adjustment_id']}", "note": event["note"]}
            )
    return sorted(items, key=lambda item: item["at"])


def _action_words(action: str) -> str:
    return ADJUSTMENT_ACTION_WORDS.get(action, action.replace("_", " "))


def _item(at: datetime, timezone: str, what: str, who: str, amount: str) -> dict[str, Any]:
    return {
        "at": at,
        "when": local_and_utc(at, timezone),
        "what": what,
        "who": who,
        "amount": amount,
        "note": "",
        "href": None,
    }


@dataclass(frozen=True)
class Corrects:
    """What an adjustment corrects, in words: its finding (None when it is gone), the ledger entry and
    the provider's record."""

    finding: dict[str, Any] | None
    ledger_entry: list[Fact]
    provider: list[ProviderSide]
    payment_order: list[Fact]


def adjustment_corrects(connection: Connection, adjustment: Mapping[Any, Any]) -> Corrects:
    """What ``adjustment`` corrects: the finding of its property, night, category and record (label,
    difference, link), the ledger entry and the provider record it names, all of its own property."""
    property_id = adjustment["property_id"]
    timezone = property_timezone(connection, property_id)
    found = None
    if adjustment["category"] is not None:
        found = _first(
            connection,
            select(discrepancies).where(*(discrepancies.c[name] == adjustment[name] for name in FINDING_KEY)),
        )
    record_id = adjustment["provider_record_id"]
    stored = provider_rows(connection, property_id, record_id, adjustment["kind"])
    order = None if stored else _order(connection, property_id, record_id)
    entry = _entry(connection, property_id, adjustment["ledger_entry_id"])
    return Corrects(
        finding=None
        if found is None
        else {
            "id": found["discrepancy_id"],
            "label": category_label(found["category"]),
            "category": found["category"],
            "difference": difference_text(found),
            "detail": found["detail"] or "",
            "cleared": cleared_sentence(found, timezone),
        },
        ledger_entry=[] if entry is None else ledger_entry_facts(entry, timezone),
        provider=[provider_side(row, timezone) for row in stored],
        payment_order=[] if order is None else payment_order_facts(order, timezone),
    )


def _order(connection: Connection, property_id: str, record_id: str | None) -> RowMapping | None:
    if record_id is None:
        return None
    return _first(
        connection,
        select(payment_orders).where(
            payment_orders.c.provider_payment_id == record_id, payment_orders.c.property_id == property_id
        ),
    )


def _entry(connection: Connection, property_id: str, entry_id: str | None) -> RowMapping | None:
    if entry_id is None:
        return None
    return _first(
        connection,
        select(ledger_entries).where(
            ledger_entries.c.entry_id == entry_id, ledger_entries.c.property_id == property_id
        ),
    )


def _first(connection: Connection, query: Any) -> RowMapping | None:
    return connection.execute(query).mappings().first()


def _field(row: RowMapping | None, name: str) -> Any:
    return None if row is None else row[name]
