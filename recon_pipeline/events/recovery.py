"""Recovery: what webhooks alone would miss, queued exactly like a webhook so one processor handles all.

- ``recover_missed_events`` asks the provider for its events since the last cursor (per account,
  ``ProviderClient.events_since``) and stores each event once; events already delivered by webhook are
  no-ops on their event id. A provider without an events API answers None: recovery is skipped (with a
  log line), and missed webhooks are recovered by the orphan sweep below and by the nightly pull, which
  finds every captured payment. An event the provider lists but that is malformed is skipped by the
  client (a warning naming its id, never its body) and counted: failing the run instead would keep the
  cursor where it is, and every later run would fail on the same event, so no event would ever be
  recovered again. The cursor moves to the newest well-formed event; the orphan sweep still finds a
  captured payment whose only event was the malformed one.
- ``enqueue_orphaned_payments`` queues a synthetic ``recovery.orphaned_payment`` event for each captured
  payment whose booking is still not confirmed after a grace, so the processor fetches its current state
  and confirms the booking if the money really is there. One per payment per day at most.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, and_, or_, select

from recon_pipeline.categories import ORPHANED_CAPTURED_PAYMENT
from recon_pipeline.db.schema import bookings, discrepancies, payment_orders, properties, provider_cursors
from recon_pipeline.db.upsert import upsert
from recon_pipeline.events.store import store_event
from recon_pipeline.providers.events import CAPTURED_ORDER_STATUSES, ProviderEvent
from recon_pipeline.providers.interface import ProviderClient

logger = logging.getLogger(__name__)

FIRST_RECOVERY_LOOKBACK = timedelta(days=3)
# Events created in the same second as the cursor may arrive after it was written: re-read a margin.
CURSOR_OVERLAP_S = 300
ORPHAN_EVENT_TYPE = "recovery.orphaned_payment"
RECOVERY_WORKERS = 8  # connected accounts read at once (the provider client bounds requests anyway)
RECOVERY_PROVIDER = "recovery"


@dataclass(frozen=True)
class RecoveryCounts:
    seen: int
    stored: int
    malformed: int = 0  # listed by the provider but not a well-formed event: skipped


def recover_missed_events(
    engine: Engine, client: ProviderClient, now: datetime, workers: int = RECOVERY_WORKERS
) -> RecoveryCounts:
    """Store every provider event since each account's cursor; a cursor only moves after its events commit.

    One run covers every account (the platform first, then each connected account, ``workers`` at a
    time over the process's one rate-bounded client): at thousands of properties that is one run per
    tick, never one per property. The cursor of an account is ``<provider>_events:<account or platform>``."""
    platform = _recover_account(engine, client, None, now)
    if platform is None:
        logger.info(
            "recovery of missed events skipped: %s has no events API; "
            "missed webhooks are recovered by the orphan sweep and the nightly pull",
            client.name,
        )
        return RecoveryCounts(seen=0, stored=0)
    counts = [platform]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for account_counts in pool.map(
            lambda account: _recover_account(engine, client, account, now), _connected_accounts(engine)
        ):
            counts.append(account_counts or RecoveryCounts(seen=0, stored=0))
    return RecoveryCounts(
        seen=sum(c.seen for c in counts),
        stored=sum(c.stored for c in counts),
        malformed=sum(c.malformed for c in counts),
    )


def _recover_account(
    engine: Engine, client: ProviderClient, account: str | None, now: datetime
) -> RecoveryCounts | None:
    """One account's events since its cursor, stored; None when the provider has no events API."""
    cursor_name = f"{client.name}_events:{account or 'platform'}"
    with engine.connect() as connection:
        since = _read_cursor(connection, cursor_name) or int((now - FIRST_RECOVERY_LOOKBACK).timestamp())
    listed = client.events_since(account, max(0, since - CURSOR_OVERLAP_S))
    if listed is None:
        return None
    newest, stored = since, 0
    with engine.begin() as connection:
        for received in listed.events:
            event = received.event
            if event.account is None and account is not None:
                event = replace(event, account=account)
            stored += store_event(connection, client.name, event, received.payload, now)
            newest = max(newest, event.created)
        _write_cursor(connection, cursor_name, newest, now)
    logger.info("recovered %d events of %s since %d", len(listed.events), account or "platform", since)
    return RecoveryCounts(
        seen=len(listed.events) + listed.malformed, stored=stored, malformed=listed.malformed
    )


def enqueue_orphaned_payments(engine: Engine, now: datetime, grace: timedelta) -> RecoveryCounts:
    """Queue a processing event for each captured payment whose booking is not confirmed after ``grace``."""
    with engine.begin() as connection:
        candidates = _orphan_candidates(connection, now - grace)
        stored = 0
        for payment_id, account in candidates:
            event = ProviderEvent(
                event_id=f"rcv_orphan_{payment_id}_{now:%Y%m%d}",
                event_type=ORPHAN_EVENT_TYPE,
                created=int(now.timestamp()),
                provider_payment_id=payment_id,
                account=account,
            )
            payload = {
                "id": event.event_id,
                "type": event.event_type,
                "created": event.created,
                "data": {"object": {"object": "payment_intent", "id": payment_id}},
            }
            stored += store_event(connection, RECOVERY_PROVIDER, event, json.dumps(payload), now)
    return RecoveryCounts(seen=len(candidates), stored=stored)


def _orphan_candidates(connection: Connection, captured_before: datetime) -> list[tuple[str, str | None]]:
    """(payment id, connected account) of local orphans and of open orphan findings of the reconciliation."""
    local = (
        select(payment_orders.c.provider_payment_id, properties.c.provider_account)
        .join(properties, properties.c.property_id == payment_orders.c.property_id)
        .outerjoin(bookings, bookings.c.booking_id == payment_orders.c.booking_id)
        .where(payment_orders.c.status.in_(CAPTURED_ORDER_STATUSES))
        .where(payment_orders.c.captured_at <= captured_before)
        .where(or_(bookings.c.status.is_(None), bookings.c.status != "confirmed"))
    )
    found = (
        select(discrepancies.c.provider_record_id, properties.c.provider_account)
        .join(properties, properties.c.property_id == discrepancies.c.property_id)
        .where(
            and_(
                discrepancies.c.category == ORPHANED_CAPTURED_PAYMENT, discrepancies.c.review_status == "open"
            )
        )
    )
    rows = {(payment_id, account) for payment_id, account in connection.execute(local.union(found)).tuples()}
    return sorted((payment_id, account) for payment_id, account in rows if payment_id)


def _connected_accounts(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        query = (
            select(properties.c.provider_account).where(properties.c.provider_account.is_not(None)).distinct()
        )
        return sorted(connection.execute(query).scalars())


def _read_cursor(connection: Connection, name: str) -> int | None:
    value = connection.execute(
        select(provider_cursors.c.value).where(provider_cursors.c.name == name)
    ).scalar()
    return int(value) if value is not None else None


def _write_cursor(connection: Connection, name: str, value: int, now: datetime) -> None:
    upsert(
        connection,
        provider_cursors,
        [{"name": name, "value": str(value), "updated_at": now}],
        ["name"],
        ["value", "updated_at"],
    )
