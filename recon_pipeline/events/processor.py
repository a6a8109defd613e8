"""Process stored payment events: claim, read the payment's current state from the provider, apply it once.

A webhook only records; this is where events take effect. Per claimed event:

1. Read the payment by id from the provider (``payment_state``), with no database transaction open, so a
   slow provider never holds locks. The payload is never trusted: duplicates, replays, out-of-order and
   stale events all converge on the provider's current state.
2. In ONE transaction: upsert ``payment_orders`` (provider truth), confirm the booking, mark the event
   processed with its ``outcome``, ``property_id`` and ``night``, and mark that night stale when it had
   already closed (so the reconciliation re-runs); commit. Locks are taken in one order (payment order,
   booking, confirmation, event, stale night), so concurrent workers cannot deadlock.

Idempotency is on business keys, decided by the database: the booking moves to ``confirmed`` with
``UPDATE … WHERE status IN ('pending', 'confirming')`` and ``booking_confirmations`` gets one row per
booking (``INSERT … ON CONFLICT DO NOTHING``), so duplicate or replayed events confirm a booking once. A
``payment_orders`` row is only overwritten by a provider read at least as recent as the one it holds
(``updated_at`` is the time of the read): two workers that read one payment at different moments cannot
leave the older state behind. A read that lost that race changes nothing (outcome
``superseded_by_newer_read``; the newer read's event did the booking work).

Failure policy:

- ``ProviderUnavailable`` and other provider failures are unknown outcomes: nothing is written and the
  event is retried with backoff (``queue.retry_later``), dead on a failure after the retry budget
  (``RetrySchedule``, RECON_EVENT_RETRY_BUDGET_S; each batch logs it). So is any unexpected error, which
  is also logged with its traceback: one poison event cannot stop the worker.
- A payment the provider does not know (404) is dead at once: retrying cannot make it exist. So is a
  request the provider refuses for good (a 4xx other than 408/409/425/429: a bad key, a revoked
  permission, a request it does not take), with the provider's one-line answer as ``last_error``; once
  the cause is fixed, ``recon events requeue`` brings the events back.
- No property attributable (no known ``metadata.property_id``, no property with the event's connected
  account) is dead with ``last_error`` "cannot attribute payment …": its night cannot be named.
- A booking id unknown locally is not an error: ``payment_orders`` is still written from provider truth
  and the event is processed with outcome ``booking_not_found``, which the orphan report surfaces.
- An event without a payment id has nothing to read: processed with outcome ``no_payment_reference``.
- A lease that expired before the event's turn is released untried (``queue.release``: due again at
  once, no attempt counted), so a batch held up by a hanging provider costs its tail nothing; a lease
  lost while writing rolls the transaction back.
- A worker killed outright (SIGKILL, OOM) leaves every event either applied and processed, or untouched:
  the processed mark commits with the effects. The rest of its claimed batch stays ``processing`` until
  the lease ends, then any worker reclaims it. ``reached`` marks both sides of the commit
  (``recon_pipeline.checkpoints``) for the crash-window tests, which kill workers there.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, Engine, select, update

from recon_pipeline.checkpoints import EVENT_BEFORE_COMMIT, EVENT_COMMITTED, reached
from recon_pipeline.db.schema import booking_confirmations, bookings, payment_orders, properties
from recon_pipeline.db.upsert import dialect_insert, insert_new
from recon_pipeline.events.payment_state import CONFIRMABLE_BOOKING_STATUSES, booking_action, night_of
from recon_pipeline.events.queue import (
    ClaimedEvent,
    claim_batch,
    complete,
    dead_letter,
    release,
    retry_later,
)
from recon_pipeline.events.stale import mark_night_stale
from recon_pipeline.ledger.queries import UnknownPropertyError, load_payment_order_owners, load_property
from recon_pipeline.metrics.instruments import ACKNOWLEDGEMENTS, PROCESSING_SECONDS
from recon_pipeline.metrics.queues import EVENTS
from recon_pipeline.nights import night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.errors import ProviderError, is_permanent
from recon_pipeline.providers.events import PaymentState
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.retry import RetrySchedule

logger = logging.getLogger(__name__)

DEFAULT_LEASE = timedelta(minutes=5)
Clock = Callable[[], datetime]
# (metadata or payment_orders property, None) or (None, account) → property
Attributions = dict[tuple[str | None, str | None], PropertyRow]

PROCESSED, RETRIED, DEAD, RELEASED, LEASE_LOST = "processed", "retried", "dead", "released", "lease_lost"


@dataclass(frozen=True)
class ProcessCounts:
    """What a ``process_available`` call did, summed over its batches."""

    batches: int = 0
    claimed: int = 0
    processed: int = 0
    retried: int = 0
    dead: int = 0
    released: int = 0  # claimed but never tried: the lease ran out before their turn
    lease_lost: int = 0
    retry_budget_s: int = 0  # the budget the failures were judged against


class _LeaseLost(Exception):
    """Our lease was taken over while we wrote: roll back, the new owner settles the event."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


def process_available(
    engine: Engine,
    client: ProviderClient,
    worker_id: str,
    batch_size: int = 100,
    max_batches: int = 50,
    policy: RetrySchedule | None = None,
    lease: timedelta = DEFAULT_LEASE,
    clock: Clock = _utc_now,
) -> ProcessCounts:
    """Claim and process due events, batch by batch, until none is due or ``max_batches`` were done.

    ``lease`` should outlast a batch (``batch_size`` events, two provider reads each); an event whose lease
    ran out before its turn is released untried. ``policy`` defaults to the RECON_EVENT_RETRY_* settings.
    """
    schedule = policy or RetrySchedule.configured()
    attributions: Attributions = {}
    tally: Counter[str] = Counter()
    batches = 0
    while batches < max_batches:
        batch = claim_batch(engine, worker_id, batch_size, lease, clock())
        if not batch:
            break
        batches += 1
        # One connection per batch (a transaction per event): no pool checkout and ping per event.
        with engine.connect() as connection:
            results: Counter[str] = Counter()
            for event in batch:
                with PROCESSING_SECONDS.labels(EVENTS).time():  # duration and outcome: metrics
                    result = _process(connection, client, event, worker_id, schedule, clock, attributions)
                ACKNOWLEDGEMENTS.labels(EVENTS, result).inc()
                results[result] += 1
        logger.info(
            "worker %s batch %d: claimed %d, processed %d, retried %d, dead %d, released untried %d, "
            "lease lost %d (retry budget %d s)",
            worker_id,
            batches,
            len(batch),
            results[PROCESSED],
            results[RETRIED],
            results[DEAD],
            results[RELEASED],
            results[LEASE_LOST],
            schedule.budget.total_seconds(),
        )
        tally.update(results)
        tally["claimed"] += len(batch)
    return ProcessCounts(
        batches=batches,
        claimed=tally["claimed"],
        processed=tally[PROCESSED],
        retried=tally[RETRIED],
        dead=tally[DEAD],
        released=tally[RELEASED],
        lease_lost=tally[LEASE_LOST],
        retry_budget_s=int(schedule.budget.total_seconds()),
    )


def _process(
    connection: Connection,
    client: ProviderClient,
    event: ClaimedEvent,
    worker_id: str,
    policy: RetrySchedule,
    clock: Clock,
    attributions: Attributions,
) -> str:
    """Process one claimed event; returns PROCESSED, RETRIED, DEAD, RELEASED or LEASE_LOST."""
    now = clock()
    if now >= event.locked_until:
        with connection.begin():
            released = release(connection, event, worker_id, now)
        logger.warning("event %s: lease expired before its turn; released untried", event.event_id)
        return RELEASED if released else LEASE_LOST
    try:
        if event.provider_payment_id is None:
            with connection.begin():
                _complete(connection, event, worker_id, "no_payment_reference", None, None, clock())
            return PROCESSED
        as_of = clock()
        state = client.payment_state(event.account, event.provider_payment_id)
        with connection.begin():
            if state is None:
                error = f"provider does not know payment {event.provider_payment_id!r} (404)"
                return _dead(connection, event, worker_id, error)
            settled = _apply(connection, event, worker_id, state, as_of, clock(), attributions)
        reached(EVENT_COMMITTED)  # effects and processed mark are durable; the rest of the batch is not
        return settled
    except _LeaseLost:
        logger.warning("event %s: lease lost while writing; rolled back", event.event_id)
        return LEASE_LOST
    except ProviderError as error:  # nothing was written
        if is_permanent(error):  # the provider refused the request itself: asking again gets the same
            with connection.begin():
                return _dead(connection, event, worker_id, f"{type(error).__name__}: {error}")
        return _retry(connection, event, worker_id, f"{type(error).__name__}: {error}", policy, clock())
    except Exception as error:  # noqa: BLE001 - a poison event is retried, then dead, never stops the worker
        logger.exception("event %s: unexpected failure", event.event_id)
        return _retry(connection, event, worker_id, f"{type(error).__name__}: {error}", policy, clock())


def _apply(
    connection: Connection,
    event: ClaimedEvent,
    worker_id: str,
    state: PaymentState,
    as_of: datetime,
    now: datetime,
    attributions: Attributions,
) -> str:
    """The event's one transaction: payment order, booking, processed mark, stale night."""
    prop = _attribute(connection, state, event.account, attributions)
    if prop is None:
        error = (
            f"cannot attribute payment {state.provider_payment_id!r} to a property: metadata.property_id "
            f"is {state.property_id!r}, no payment_orders row holds it and provider_account "
            f"{event.account!r} is not one property's alone"
        )
        return _dead(connection, event, worker_id, error)
    applied = _write_order(connection, state, prop.property_id, as_of)
    outcome = "superseded_by_newer_read"
    if applied:
        action = booking_action(state.status, state.booking_id, _locked_booking_status(connection, state))
        if action.confirm:
            _confirm_booking(connection, state, event.event_id, now)
        outcome = action.outcome
    night = night_of(state.occurred_at, prop.timezone, prop.night_cutoff)
    _complete(connection, event, worker_id, outcome, prop.property_id, night.isoformat(), now)
    if applied and night_window(night, prop.timezone, prop.night_cutoff).end <= now:
        reason = f"late event {event.event_id}: {outcome}"
        mark_night_stale(connection, prop.property_id, night.isoformat(), reason, now)
    reached(EVENT_BEFORE_COMMIT)  # everything written, nothing committed: a death here must undo it all
    return PROCESSED


def _attribute(
    connection: Connection, state: PaymentState, account: str | None, attributions: Attributions
) -> PropertyRow | None:
    """The payment's property, by the pipeline's rule (docs/design.md: metadata, then ``payment_orders``):
    the one its metadata names, else the one ``payment_orders`` already holds it under, else the property
    owning the connected account when it owns it alone. An account several properties share names nobody:
    guessing would write one property's payment under another's name, and the night's pull, which
    attributes by ``payment_orders`` too, would then reconcile it against the wrong ledger.

    Properties found by metadata or account are remembered for the rest of the ``process_available`` call
    (properties change rarely and a call is bounded); a miss is asked again every time.
    """
    if state.property_id is not None:
        named = _remembered(connection, (state.property_id, None), attributions)
        if named is not None:
            return named
    owner = load_payment_order_owners(connection, [state.provider_payment_id]).get(state.provider_payment_id)
    if owner is not None:
        return _remembered(connection, (owner, None), attributions)
    if account is None:
        return None
    return _remembered(connection, (None, account), attributions)


def _remembered(
    connection: Connection, key: tuple[str | None, str | None], attributions: Attributions
) -> PropertyRow | None:
    """The property a metadata id names (``(id, None)``) or that alone owns an account (``(None, acct)``)."""
    if key in attributions:
        return attributions[key]
    property_id, account = key
    found = None
    if property_id is not None:
        with suppress(UnknownPropertyError):
            found = load_property(connection, property_id)
    else:
        owners = connection.execute(
            select(properties.c.property_id).where(properties.c.provider_account == account).limit(2)
        ).all()
        if len(owners) == 1:
            found = load_property(connection, owners[0].property_id)
    if found is not None:
        attributions[key] = found
    return found


def _write_order(connection: Connection, state: PaymentState, property_id: str, as_of: datetime) -> bool:
    """Upsert the payment order unless the row holds a later provider read; True when written."""
    row = state.order_row(property_id, as_of)
    insert = dialect_insert(connection, payment_orders).values(row)
    statement = insert.on_conflict_do_update(
        index_elements=["provider_payment_id"],
        set_={name: insert.excluded[name] for name in row if name != "provider_payment_id"},
        where=payment_orders.c.updated_at <= insert.excluded.updated_at,
    ).returning(payment_orders.c.provider_payment_id)
    return connection.execute(statement).first() is not None


def _locked_booking_status(connection: Connection, state: PaymentState) -> str | None:
    """The booking's status, row-locked (PostgreSQL) until commit so the decision cannot go stale."""
    if state.booking_id is None:
        return None
    query = select(bookings.c.status).where(bookings.c.booking_id == state.booking_id).with_for_update()
    status: str | None = connection.execute(query).scalar()
    return status


def _confirm_booking(connection: Connection, state: PaymentState, event_id: str, now: datetime) -> None:
    connection.execute(
        update(bookings)
        .where(bookings.c.booking_id == state.booking_id)
        .where(bookings.c.status.in_(CONFIRMABLE_BOOKING_STATUSES))
        .values(status="confirmed", updated_at=now)
    )
    insert_new(
        connection,
        booking_confirmations,
        [
            {
                "booking_id": state.booking_id,
                "event_id": event_id,
                "provider_payment_id": state.provider_payment_id,
                "confirmed_at": now,
            }
        ],
        ["booking_id"],
    )


def _complete(
    connection: Connection,
    event: ClaimedEvent,
    worker_id: str,
    outcome: str,
    property_id: str | None,
    night: str | None,
    now: datetime,
) -> None:
    if not complete(connection, event, worker_id, outcome, property_id, night, now):
        raise _LeaseLost


def _dead(connection: Connection, event: ClaimedEvent, worker_id: str, error: str) -> str:
    if not dead_letter(connection, event, worker_id, error):
        raise _LeaseLost
    logger.error("event %s is dead: %s", event.event_id, error)
    return DEAD


def _retry(
    connection: Connection,
    event: ClaimedEvent,
    worker_id: str,
    error: str,
    policy: RetrySchedule,
    now: datetime,
) -> str:
    with connection.begin():
        status = retry_later(connection, event, worker_id, error, now, policy)
    if status is None:
        return LEASE_LOST
    logger.warning("event %s try %d failed (%s): %s", event.event_id, event.attempts + 1, status, error)
    return DEAD if status == "dead" else RETRIED
