"""The data contract's tables in SQLAlchemy Core: one definition that runs on SQLite and PostgreSQL.

Columns the PMS writes are the contract's; every column this project adds is nullable or has a default,
because other systems insert into these tables with only the contract's columns.
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    event,
)

from recon_pipeline.db.types import UtcDateTime

metadata = MetaData()

UTC_TIMESTAMP = UtcDateTime()

properties = Table(
    "properties",
    metadata,
    Column("property_id", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("timezone", Text, nullable=False),
    Column("currency", Text, nullable=False),
    Column("night_cutoff", Text, nullable=False, server_default="00:00"),
    Column("provider_account", Text, nullable=True),
    # basis points of a conversion's settlement amount that a ledger entry booked at it may be off before
    # it is an fx_difference; NULL is 0 (revision 0004)
    Column("fx_tolerance_bps", Integer, nullable=True),
    # how the hotel books the provider's fees: per_movement (NULL, today's) | per_payout | none; and the
    # matcher's policy as JSON (MatchPolicy.parse; NULL is the default policy) (revision 0011)
    Column("fee_booking", Text, nullable=True),
    Column("match_policy", Text, nullable=True),
)

bookings = Table(
    "bookings",
    metadata,
    Column("booking_id", Text, primary_key=True),
    Column("property_id", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("created_at", UTC_TIMESTAMP, nullable=False),
    Column("updated_at", UTC_TIMESTAMP, nullable=False),
    # the group (block, master folio) the booking belongs to: a group's payment may be posted across its
    # bookings (revision 0013; NULL: none)
    Column("group_id", Text, nullable=True),
    Index("ix_bookings_property_status", "property_id", "status"),
)

payment_orders = Table(
    "payment_orders",
    metadata,
    Column("provider_payment_id", Text, primary_key=True),
    Column("property_id", Text, nullable=False),
    Column("booking_id", Text, nullable=True),
    Column("amount_minor", BigInteger, nullable=False),
    Column("amount_refunded_minor", BigInteger, nullable=False, server_default="0"),
    Column("currency", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("captured_at", UTC_TIMESTAMP, nullable=True),
    Column("updated_at", UTC_TIMESTAMP, nullable=False),
    Index("ix_payment_orders_property_captured", "property_id", "captured_at"),
    # the open holds (``authorized``) and captured orders of a property are read by status (revision 0007)
    Index("ix_payment_orders_property_status", "property_id", "status"),
)

payment_events = Table(
    "payment_events",
    metadata,
    Column("event_id", Text, primary_key=True),
    Column("provider", Text, nullable=False),
    Column("event_type", Text, nullable=False),
    Column("provider_payment_id", Text, nullable=True),
    Column("payload", Text, nullable=False),
    Column("received_at", UTC_TIMESTAMP, nullable=False),
)

ledger_entries = Table(
    "ledger_entries",
    metadata,
    Column("entry_id", Text, primary_key=True),
    Column("property_id", Text, nullable=False),
    Column("booking_id", Text, nullable=True),
    Column("provider_record_id", Text, nullable=True),
    Column("kind", Text, nullable=False),
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("posted_at", UTC_TIMESTAMP, nullable=False),
    # what a PMS records of a card payment when it never learns the provider's id: the matcher's keys
    # (revision 0011; the PMS may leave them all NULL)
    Column("card_brand", Text, nullable=True),
    Column("card_last4", Text, nullable=True),
    Column("approval_code", Text, nullable=True),
    Column("reference", Text, nullable=True),
    # how the guest paid (tenders.py; revision 0013): only a card, or NULL (not recorded), is the provider's
    Column("tender", Text, nullable=True),
    Index("ix_ledger_entries_property_posted", "property_id", "posted_at"),
    Index("ix_ledger_entries_reference", "reference"),  # the desk's search (revision 0015)
)

adjustments = Table(
    "adjustments",
    metadata,
    Column("adjustment_id", Text, primary_key=True),
    Column("idempotency_key", Text, nullable=False, unique=True),
    Column("property_id", Text, nullable=False),
    Column("night", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("provider_record_id", Text, nullable=True),
    Column("ledger_entry_id", Text, nullable=True),
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("status", Text, nullable=False, server_default="proposed"),
    Column("created_at", UTC_TIMESTAMP, nullable=False),
    Column("run_id", Text, nullable=True),
    # The lifecycle (reconcile/lifecycle.py): which finding the row corrects, which revision of the
    # operation it is (revision 1 keeps the operation's own idempotency key; revision n appends "#n"),
    # when its status last changed and, once superseded, the row that replaced it.
    Column("category", Text, nullable=True),
    Column("record_key", Text, nullable=True),
    Column("revision", Integer, nullable=False, server_default="1"),
    Column("updated_at", UTC_TIMESTAMP, nullable=True),
    Column("superseded_by", Text, nullable=True),
    Index("ix_adjustments_property_night", "property_id", "night"),
)

# Append-only history of every review action on an adjustment (recon adjustments approve|reject): who,
# when, why and the amount they saw.
adjustment_reviews = Table(
    "adjustment_reviews",
    metadata,
    Column("review_id", Integer, primary_key=True, autoincrement=True),
    Column("adjustment_id", Text, nullable=False),
    Column("action", Text, nullable=False),  # approve | reject
    Column("previous_status", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("reviewed_by", Text, nullable=False),
    Column("note", Text, nullable=False),
    Column("amount_minor", BigInteger, nullable=False),  # the amount approved or rejected
    Column("currency", Text, nullable=False),
    Column("reviewed_at", UTC_TIMESTAMP, nullable=False),
    Index("ix_adjustment_reviews_adjustment", "adjustment_id"),
)

# A finding's business key: the unique constraint of `discrepancies`, and how its review history is keyed.
FINDING_KEY = ("property_id", "night", "category", "record_key")

discrepancies = Table(
    "discrepancies",
    metadata,
    Column("discrepancy_id", Integer, primary_key=True, autoincrement=True),
    Column("property_id", Text, nullable=False),
    Column("night", Text, nullable=False),
    Column("category", Text, nullable=False),
    Column("record_key", Text, nullable=False),
    Column("kind", Text, nullable=True),
    Column("provider_record_id", Text, nullable=True),
    Column("ledger_entry_id", Text, nullable=True),
    Column("booking_id", Text, nullable=True),
    Column("provider_amount_minor", BigInteger, nullable=True),
    Column("ledger_amount_minor", BigInteger, nullable=True),
    Column("difference_minor", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("ledger_currency", Text, nullable=True),  # the ledger entry's; differs on a currency_mismatch
    Column("detail", Text, nullable=True),
    Column("detected_at", UTC_TIMESTAMP, nullable=False),
    Column("run_id", Text, nullable=True),
    Column("review_status", Text, nullable=False, server_default="open"),
    # The last human review (recon findings ack|resolve|reopen); an automatic re-open leaves them as
    # they were, so they keep saying who looked at which amount. reviewed_difference_minor is the amount the
    # reviewer saw: a re-detection with another difference re-opens the finding (storage/findings.py).
    Column("reviewed_by", Text, nullable=True),
    Column("reviewed_at", UTC_TIMESTAMP, nullable=True),
    Column("review_note", Text, nullable=True),
    Column("reviewed_difference_minor", BigInteger, nullable=True),
    # Set when a later run of the property-night no longer sees the finding (the row stays, for audit);
    # NULL again when it reappears. A cleared finding is not outstanding, whatever its review status.
    Column("cleared_at", UTC_TIMESTAMP, nullable=True),
    # Who on the review desk is working on the finding, since when (revision 0012; NULL: nobody).
    Column("assigned_to", Text, nullable=True),
    Column("assigned_at", UTC_TIMESTAMP, nullable=True),
    # The run that cleared the finding (revision 0012; NULL while it is seen, and for one cleared before).
    Column("cleared_run_id", Text, nullable=True),
    UniqueConstraint(*FINDING_KEY, name="uq_discrepancies_finding"),
    Index("ix_discrepancies_review_status", "review_status", "property_id", "night"),
    # the desk's search, one lookup per column (revision 0015; the record key by trigram on PostgreSQL)
    Index("ix_discrepancies_booking", "booking_id"),
    Index("ix_discrepancies_provider_record", "provider_record_id"),
    Index("ix_discrepancies_ledger_entry", "ledger_entry_id"),
    Index(
        "ix_discrepancies_record_key_trigram",
        "record_key",
        postgresql_using="gin",
        postgresql_ops={"record_key": "gin_trgm_ops"},
    ),
)

# The record key's trigram index needs PostgreSQL's pg_trgm, created with the table (``create_all``) as
# revision 0015 creates it.
event.listen(
    discrepancies,
    "before_create",
    DDL("CREATE EXTENSION IF NOT EXISTS pg_trgm").execute_if(dialect="postgresql"),
)

# The matcher's matches and suggestions (reconcile/matching; revision 0011), one row per property-night and
# match_key (the sides' sorted ids: stable across runs), kept true across re-runs as findings are
# (storage/matches.py): not seen again, cleared_at is set; seen again, NULL. A person's decision (status
# confirmed or rejected, decided_by/decided_at/decision_reason) is never rewritten by a run.
# provider_record_ids / ledger_entry_ids: the ids joined by a single space.
matches = Table(
    "matches",
    metadata,
    Column("match_id", Integer, primary_key=True, autoincrement=True),
    Column("property_id", Text, nullable=False),
    Column("night", Text, nullable=False),
    Column("match_key", Text, nullable=False),
    Column("rule", Text, nullable=False),
    Column("score", Float(precision=53), nullable=True),
    Column("status", Text, nullable=False),  # matched | suggested | confirmed | rejected
    Column("kind", Text, nullable=True),
    Column("provider_record_ids", Text, nullable=False),
    Column("ledger_entry_ids", Text, nullable=False),
    Column("booking_id", Text, nullable=True),
    Column("provider_amount_minor", BigInteger, nullable=True),
    Column("ledger_amount_minor", BigInteger, nullable=True),
    Column("currency", Text, nullable=True),
    Column("keys_agree", Text, nullable=True),
    Column("keys_differ", Text, nullable=True),
    Column("detail", Text, nullable=True),
    Column("run_id", Text, nullable=True),
    Column("detected_at", UTC_TIMESTAMP, nullable=False),
    Column("cleared_at", UTC_TIMESTAMP, nullable=True),
    Column("decided_by", Text, nullable=True),
    Column("decided_at", UTC_TIMESTAMP, nullable=True),
    Column("decision_reason", Text, nullable=True),
    UniqueConstraint("property_id", "night", "match_key", name="uq_matches_match"),
    # a property-night's rows come by the unique key; the suggestions waiting for a person, by this
    Index("ix_matches_status", "status", "property_id", "night"),
)

# Append-only history of every decision on a match (recon matches confirm|reject|pair, the review desk):
# who, when, why, the ids and the amounts they saw.
match_decisions = Table(
    "match_decisions",
    metadata,
    Column("decision_id", Integer, primary_key=True, autoincrement=True),
    Column("property_id", Text, nullable=False),
    Column("night", Text, nullable=False),
    Column("match_key", Text, nullable=False),
    Column("action", Text, nullable=False),  # confirm | reject | pair
    Column("previous_status", Text, nullable=True),  # NULL: a pair by hand made the row
    Column("decided_by", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("provider_record_ids", Text, nullable=False),
    Column("ledger_entry_ids", Text, nullable=False),
    Column("provider_amount_minor", BigInteger, nullable=True),  # the amounts seen when deciding
    Column("ledger_amount_minor", BigInteger, nullable=True),
    Column("currency", Text, nullable=True),
    Column("decided_at", UTC_TIMESTAMP, nullable=False),
    Index("ix_match_decisions_match", "property_id", "night", "match_key"),
)

# Append-only history of every review action on a finding, human (acknowledge, resolve, reopen) or
# automatic (reopen by "recon": re-detected with another amount). Keyed by the finding's business key, not
# its row id, so the history outlives a cleared open finding and follows it if it is detected again.
discrepancy_reviews = Table(
    "discrepancy_reviews",
    metadata,
    Column("review_id", Integer, primary_key=True, autoincrement=True),
    Column("property_id", Text, nullable=False),
    Column("night", Text, nullable=False),
    Column("category", Text, nullable=False),
    Column("record_key", Text, nullable=False),
    Column("action", Text, nullable=False),  # acknowledge | resolve | reopen
    Column("previous_status", Text, nullable=False),
    Column("reviewed_by", Text, nullable=False),  # a person, or "recon" for an automatic re-open
    Column("note", Text, nullable=True),
    Column("difference_minor", BigInteger, nullable=False),  # the amount seen when acting
    Column("currency", Text, nullable=False),
    Column("reviewed_at", UTC_TIMESTAMP, nullable=False),
    Column("run_id", Text, nullable=True),  # the run that re-opened the finding
    Index("ix_discrepancy_reviews_finding", "property_id", "night", "category", "record_key"),
)

# Per-property ceiling of the unexplained amount (sum of |difference_minor| of open findings, per
# currency, in minor units) above which the blocking check `unexplained_discrepancy_amount` fails. Its
# own table rather than a column of `properties`, which the PMS owns; a property without a row uses
# RECON_UNEXPLAINED_THRESHOLD_MINOR.
discrepancy_thresholds = Table(
    "discrepancy_thresholds",
    metadata,
    Column("property_id", Text, primary_key=True),
    Column("unexplained_threshold_minor", BigInteger, nullable=False),
    Column("updated_at", UTC_TIMESTAMP, nullable=False),
)

# Per-property four-eyes threshold: an adjustment whose |amount_minor| is above it needs two different
# approvers. Its own number, not the unexplained threshold above, so lowering one never moves the blocking
# check; a property without a row uses RECON_FOUR_EYES_THRESHOLD_MINOR, else its unexplained threshold
# (``review.four_eyes``).
approval_thresholds = Table(
    "approval_thresholds",
    metadata,
    Column("property_id", Text, primary_key=True),
    Column("four_eyes_above_minor", BigInteger, nullable=False),
    Column("updated_at", UTC_TIMESTAMP, nullable=False),
)

# ----- event processing (beside payment_events, never inside the raw payload) ------------------------

payment_event_processing = Table(
    "payment_event_processing",
    metadata,
    # seq: arrival order, the sensor's cursor and the source of its run keys.
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("event_id", Text, nullable=False, unique=True),
    Column("provider", Text, nullable=False),
    Column("provider_payment_id", Text, nullable=True),
    Column("account", Text, nullable=True),  # connected account the event came from, if any
    # pending → processing → processed | failed (retried at available_at) → dead when the budget is spent
    Column("status", Text, nullable=False, server_default="pending"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("available_at", UTC_TIMESTAMP, nullable=False),
    Column("locked_until", UTC_TIMESTAMP, nullable=True),
    Column("locked_by", Text, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("outcome", Text, nullable=True),
    Column("processed_at", UTC_TIMESTAMP, nullable=True),
    Column("property_id", Text, nullable=True),
    Column("night", Text, nullable=True),
    # The retry budget runs from the first failed real try; a requeue records who brought a dead event back.
    Column("first_failed_at", UTC_TIMESTAMP, nullable=True),
    Column("requeued_at", UTC_TIMESTAMP, nullable=True),
    Column("requeued_by", Text, nullable=True),
    Index("ix_payment_event_processing_due", "status", "available_at"),
)

# A delivery that reuses a stored event id with a different body: kept as evidence, never applied (the
# stored event is never modified). One row per distinct body of an event id.
payment_event_conflicts = Table(
    "payment_event_conflicts",
    metadata,
    Column("event_id", Text, primary_key=True),
    Column("body_sha256", Text, primary_key=True),
    Column("provider", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("received_at", UTC_TIMESTAMP, nullable=False),
)

# One row per booking the processor ever confirmed: the proof that a booking is confirmed once.
booking_confirmations = Table(
    "booking_confirmations",
    metadata,
    Column("booking_id", Text, primary_key=True),
    Column("event_id", Text, nullable=False),
    Column("provider_payment_id", Text, nullable=False),
    Column("confirmed_at", UTC_TIMESTAMP, nullable=False),
)

# A night touched by an event after it closed: the sensor re-requests it once per generation
# (the run key carries the generation, so a re-evaluated tick never launches twice).
stale_nights = Table(
    "stale_nights",
    metadata,
    Column("property_id", Text, primary_key=True),
    Column("night", Text, primary_key=True),
    Column("reason", Text, nullable=False),
    Column("marked_at", UTC_TIMESTAMP, nullable=False),
    Column("generation", Integer, nullable=False, server_default="1"),
)

# Named positions in provider streams (e.g. the last /v1/events id recovered).
provider_cursors = Table(
    "provider_cursors",
    metadata,
    Column("name", Text, primary_key=True),
    Column("value", Text, nullable=False),
    Column("updated_at", UTC_TIMESTAMP, nullable=False),
)

# The deployment-wide provider rate bound (recon_pipeline/providers/ratelimit.py): per bucket, the next
# free request slot in Unix seconds by the database's clock. Made by migration 0002 (UNLOGGED on PostgreSQL).
provider_rate_slots = Table(
    "provider_rate_slots",
    metadata,
    Column("bucket", Text, primary_key=True),
    Column("next_slot_s", Float(precision=53), nullable=False),
)

# Per property-night, the outcome of its latest reconciliation (``storage/night_outcomes.py``): a run
# reconciles a batch of properties, so what each property's night came to is kept here, where the
# stale-night sensor, the SLO check, ``recon reconcile-night --wait`` and the analyst find it. Made by
# migration 0003.
night_reconciliations = Table(
    "night_reconciliations",
    metadata,
    Column("property_id", Text, primary_key=True),
    Column("night", Text, primary_key=True),
    Column("run_id", Text, nullable=False),
    Column("batch_key", Text, nullable=True),
    Column("status", Text, nullable=False),  # succeeded | failed
    Column("error", Text, nullable=True),
    Column("findings", Integer, nullable=True),
    Column("adjustments_proposed", Integer, nullable=True),
    Column("started_at", UTC_TIMESTAMP, nullable=False),
    Column("finished_at", UTC_TIMESTAMP, nullable=False),
    Index("ix_night_reconciliations_night_status", "night", "status"),
)

# ----- payouts and the bank (recon_pipeline/payouts; made by migration 0005) --------------------------

# One row per payout a provider reported, refreshed whenever it is seen (its status moves). ``traced``:
# every movement it carried was given a property-night; ``sum_difference_minor``: its amount less its
# transactions' net (0 when it adds up, NULL when the provider cannot break it down).
payouts = Table(
    "payouts",
    metadata,
    Column("payout_id", Text, primary_key=True),
    Column("provider", Text, nullable=False),
    Column("provider_account", Text, nullable=True),  # NULL: the platform's own balance
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("status", Text, nullable=False),  # paid | failed | pending | in_transit | canceled
    Column("failure_code", Text, nullable=True),
    Column("arrival_night", Text, nullable=False),
    Column("automatic", Boolean, nullable=False),
    Column("statement_descriptor", Text, nullable=True),  # the bank reference a credit is matched by
    Column("created_at", UTC_TIMESTAMP, nullable=False),
    Column("traced", Boolean, nullable=False),
    Column("transactions", Integer, nullable=True),
    Column("sum_difference_minor", BigInteger, nullable=True),
    Column("holder_property_id", Text, nullable=False),  # the property whose night holds its finding
    Column("last_seen_at", UTC_TIMESTAMP, nullable=False),
    Index("ix_payouts_arrival_night", "arrival_night"),
)

# The balance transactions a payout carried, each with the property-night it belongs to (NULL: untraced).
payout_transactions = Table(
    "payout_transactions",
    metadata,
    Column("payout_id", Text, primary_key=True),
    Column("transaction_id", Text, primary_key=True),
    Column("source_id", Text, nullable=True),  # the money movement: ch_..., re_..., du_...
    Column("kind", Text, nullable=False),
    Column("amount_minor", BigInteger, nullable=False),
    Column("fee_minor", BigInteger, nullable=False),
    Column("net_minor", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("created_at", UTC_TIMESTAMP, nullable=False),
    Column("property_id", Text, nullable=True),
    Column("night", Text, nullable=True),
    Index("ix_payout_transactions_property_night", "property_id", "night"),
)

# Credits of imported bank statements (CAMT.053), one per transaction detail; ``matched_payout_id``: the
# payout it paid, once matched (recon_pipeline/payouts/deposit.py).
bank_credits = Table(
    "bank_credits",
    metadata,
    Column("statement_id", Text, primary_key=True),
    Column("entry_reference", Text, primary_key=True),
    Column("detail_index", Integer, primary_key=True),
    Column("account_iban", Text, nullable=True),
    Column("booking_date", Text, nullable=False),
    Column("value_date", Text, nullable=True),
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("remittance_info", Text, nullable=False),
    Column("imported_at", UTC_TIMESTAMP, nullable=False),
    Column("matched_payout_id", Text, nullable=True, unique=True),
)

# ----- posting approved adjustments to the PMS (recon_pipeline/postings; made by migration 0006) -------

# The transactional outbox: one row per approved adjustment, written in the approval's transaction and
# drained by the poster (postings/drain.py). ``state``: approved → posting → posted | failed | unknown
# (db/outbox_states.py). ``attempts`` counts real posts only (a lookup or a claim counts nothing);
# ``lookups`` paces the lookups that resolve an unknown outcome. ``claimed_by``/``locked_until``: the
# drainer holding the row and until when; an expired claim of a ``posting`` row is resolved by lookup.
# ``resolved_by``/``resolution_note``: who settled the row by hand and why (recon postings resolve).
posting_outbox = Table(
    "posting_outbox",
    metadata,
    Column("adjustment_id", Text, primary_key=True),
    Column("idempotency_key", Text, nullable=False, unique=True),
    Column("state", Text, nullable=False, server_default="approved"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("lookups", Integer, nullable=False, server_default="0"),
    Column("next_attempt_at", UTC_TIMESTAMP, nullable=False),
    Column("claimed_by", Text, nullable=True),
    Column("locked_until", UTC_TIMESTAMP, nullable=True),
    Column("adapter", Text, nullable=True),  # the adapter of the last post or lookup (sql | http)
    Column("pms_reference", Text, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", UTC_TIMESTAMP, nullable=False),
    Column("updated_at", UTC_TIMESTAMP, nullable=False),
    Column("resolved_by", Text, nullable=True),
    Column("resolution_note", Text, nullable=True),
    Index("ix_posting_outbox_due", "state", "next_attempt_at"),
)

# The review desk's people (revision 0008): ``properties`` is a comma list of the property ids they may
# see; ``role`` is analyst | approver | admin; ``password_hash`` is argon2id (argon2-cffi's encoded form).
review_users = Table(
    "review_users",
    metadata,
    Column("name", Text, primary_key=True),
    Column("role", Text, nullable=False),
    Column("properties", Text, nullable=False),
    Column("password_hash", Text, nullable=False),
    Column("created_at", UTC_TIMESTAMP, nullable=False),
)

# Every sign-in and action on the review desk: who, when, what, on which target and the amount they saw.
review_audit = Table(
    "review_audit",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", UTC_TIMESTAMP, nullable=False),
    Column("user_name", Text, nullable=False),  # not "user": a reserved word in PostgreSQL
    Column("action", Text, nullable=False),
    Column("target", Text, nullable=True),
    Column("amount_seen", BigInteger, nullable=True),
    Column("detail", Text, nullable=True),
    Index("ix_review_audit_user_name_at", "user_name", "at"),
)

# The review desk's sessions (revision 0010): the cookie holds a random id, this row its SHA-256 (a copy
# of the table signs no one in). Sign-out, a changed password or role, and the session's idle or absolute
# end (review_desk/sessions.py) delete the row, and with it the session.
review_sessions = Table(
    "review_sessions",
    metadata,
    Column("session_hash", Text, primary_key=True),
    Column("user_name", Text, nullable=False),
    Column("signed_in_at", UTC_TIMESTAMP, nullable=False),
    Column("last_seen_at", UTC_TIMESTAMP, nullable=False),
    Index("ix_review_sessions_user_name", "user_name"),
)

# Failed sign-ins per ``name:<name>`` and per ``client:<address>`` (revision 0010; review_desk/signin.py):
# shared by every desk process; a row older than the lock's bound is forgotten.
review_signin_failures = Table(
    "review_signin_failures",
    metadata,
    Column("attempt_key", Text, primary_key=True),
    Column("failures", Integer, nullable=False),
    Column("last_failure_at", UTC_TIMESTAMP, nullable=False),
    Index("ix_review_signin_failures_last", "last_failure_at"),
)


# ----- the review desk as analysts work (revision 0012) ------------------------------------------------

# A user's named filters of one desk list (``list_name``: findings, adjustments, payouts, nights, matches);
# ``query`` is the list's query string as the list page reads it.
review_saved_views = Table(
    "review_saved_views",
    metadata,
    Column("view_id", Integer, primary_key=True, autoincrement=True),
    Column("user_name", Text, nullable=False),
    Column("list_name", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("query", Text, nullable=False),
    Column("created_at", UTC_TIMESTAMP, nullable=False),
    UniqueConstraint("user_name", "list_name", "name", name="uq_review_saved_views_name"),
)

# The provider's record as the night's pull last saw it, for each record a finding or a match names: what
# a finding's page shows of the provider's side without asking the provider. ``provider``: the registered
# provider's name (its dashboard links come from its folder); ``fee_minor``/``net_minor``: the fee the
# provider took on the movement (negative, as the ledger signs fees) and the amount less it. Upserted in
# the property-night's transaction (batches/write.py).
provider_records = Table(
    "provider_records",
    metadata,
    Column("property_id", Text, primary_key=True),
    Column("provider_record_id", Text, primary_key=True),
    Column("kind", Text, primary_key=True),
    Column("night", Text, nullable=False),
    Column("provider", Text, nullable=False),
    Column("provider_account", Text, nullable=True),
    Column("charge_id", Text, nullable=True),
    Column("payment_intent_id", Text, nullable=True),
    Column("booking_id", Text, nullable=True),
    Column("status", Text, nullable=True),
    Column("settled", Boolean, nullable=False),
    Column("created_at", UTC_TIMESTAMP, nullable=True),
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", Text, nullable=False),
    Column("fee_minor", BigInteger, nullable=True),
    Column("net_minor", BigInteger, nullable=True),
    Column("settlement_amount_minor", BigInteger, nullable=True),
    Column("settlement_currency", Text, nullable=True),
    Column("card_brand", Text, nullable=True),
    Column("card_last4", Text, nullable=True),
    Column("approval_code", Text, nullable=True),
    Column("dashboard_url", Text, nullable=True),  # the record's page in the provider's dashboard, if any
    Column("run_id", Text, nullable=True),
    Column("seen_at", UTC_TIMESTAMP, nullable=False),
)


# ----- the night's takings (revision 0014) -------------------------------------------------------------

# A property-night's takings as its latest run counted them (reconcile/takings.py): per tender on the
# ledger's side (``grouped_by`` tender: cash, bank_transfer, ota_collect... and not_recorded), and per card
# brand on both sides (``grouped_by`` brand, ``side`` ledger or provider), each in one currency: how many
# movements and their signed sum. Written in the property-night's transaction (storage/night_takings.py): a
# line whose figures did not change is not written, one that is gone is deleted. ``run_id``/``recorded_at``:
# the run that last changed the line's figures.
night_takings = Table(
    "night_takings",
    metadata,
    Column("property_id", Text, primary_key=True),
    Column("night", Text, primary_key=True),
    Column("side", Text, primary_key=True),  # ledger | provider
    Column("grouped_by", Text, primary_key=True),  # tender | brand
    Column("name", Text, primary_key=True),  # the tender or the brand (unknown: none can be read)
    Column("currency", Text, primary_key=True),
    Column("movements", Integer, nullable=False),
    Column("amount_minor", BigInteger, nullable=False),
    Column("run_id", Text, nullable=True),
    Column("recorded_at", UTC_TIMESTAMP, nullable=False),
)
