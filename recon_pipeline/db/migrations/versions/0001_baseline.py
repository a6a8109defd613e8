"""Baseline: every table as ``recon db init`` made it before Alembic (issue 12).

On an empty database it creates them. On a database made before Alembic (tables present, no
``alembic_version``) it adopts what is there: creates the tables an older release did not have and adds
the columns and indexes it lacked, which is what the hand-written ``init_db`` did on every start. Added
columns are nullable or defaulted (the data contract demands it of every column we add), so adding them
to a populated table loses nothing; rows are never touched.

The tables are written out here rather than imported from ``db/schema.py``: a revision is a frozen
picture of the schema at one point, and later revisions build on exactly this picture.

Revision ID: 0001
Revises:
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def baseline() -> sa.MetaData:
    """The schema of revision 0001."""
    metadata = sa.MetaData()
    utc = sa.DateTime(timezone=True)
    text, big = sa.Text, sa.BigInteger
    sa.Table(
        "properties",
        metadata,
        sa.Column("property_id", text, primary_key=True),
        sa.Column("name", text, nullable=False),
        sa.Column("timezone", text, nullable=False),
        sa.Column("currency", text, nullable=False),
        sa.Column("night_cutoff", text, nullable=False, server_default="00:00"),
        sa.Column("provider_account", text, nullable=True),
    )
    sa.Table(
        "bookings",
        metadata,
        sa.Column("booking_id", text, primary_key=True),
        sa.Column("property_id", text, nullable=False),
        sa.Column("status", text, nullable=False),
        sa.Column("amount_minor", big, nullable=False),
        sa.Column("currency", text, nullable=False),
        sa.Column("created_at", utc, nullable=False),
        sa.Column("updated_at", utc, nullable=False),
        sa.Index("ix_bookings_property_status", "property_id", "status"),
    )
    sa.Table(
        "payment_orders",
        metadata,
        sa.Column("provider_payment_id", text, primary_key=True),
        sa.Column("property_id", text, nullable=False),
        sa.Column("booking_id", text, nullable=True),
        sa.Column("amount_minor", big, nullable=False),
        sa.Column("amount_refunded_minor", big, nullable=False, server_default="0"),
        sa.Column("currency", text, nullable=False),
        sa.Column("status", text, nullable=False),
        sa.Column("captured_at", utc, nullable=True),
        sa.Column("updated_at", utc, nullable=False),
        sa.Index("ix_payment_orders_property_captured", "property_id", "captured_at"),
    )
    sa.Table(
        "payment_events",
        metadata,
        sa.Column("event_id", text, primary_key=True),
        sa.Column("provider", text, nullable=False),
        sa.Column("event_type", text, nullable=False),
        sa.Column("provider_payment_id", text, nullable=True),
        sa.Column("payload", text, nullable=False),
        sa.Column("received_at", utc, nullable=False),
    )
    sa.Table(
        "ledger_entries",
        metadata,
        sa.Column("entry_id", text, primary_key=True),
        sa.Column("property_id", text, nullable=False),
        sa.Column("booking_id", text, nullable=True),
        sa.Column("provider_record_id", text, nullable=True),
        sa.Column("kind", text, nullable=False),
        sa.Column("amount_minor", big, nullable=False),
        sa.Column("currency", text, nullable=False),
        sa.Column("posted_at", utc, nullable=False),
        sa.Index("ix_ledger_entries_property_posted", "property_id", "posted_at"),
    )
    sa.Table(
        "adjustments",
        metadata,
        sa.Column("adjustment_id", text, primary_key=True),
        sa.Column("idempotency_key", text, nullable=False, unique=True),
        sa.Column("property_id", text, nullable=False),
        sa.Column("night", text, nullable=False),
        sa.Column("kind", text, nullable=False),
        sa.Column("provider_record_id", text, nullable=True),
        sa.Column("ledger_entry_id", text, nullable=True),
        sa.Column("amount_minor", big, nullable=False),
        sa.Column("currency", text, nullable=False),
        sa.Column("reason", text, nullable=False),
        sa.Column("status", text, nullable=False, server_default="proposed"),
        sa.Column("created_at", utc, nullable=False),
        sa.Column("run_id", text, nullable=True),
        sa.Column("category", text, nullable=True),
        sa.Column("record_key", text, nullable=True),
        sa.Column("revision", sa.Integer, nullable=False, server_default="1"),
        sa.Column("updated_at", utc, nullable=True),
        sa.Column("superseded_by", text, nullable=True),
        sa.Index("ix_adjustments_property_night", "property_id", "night"),
    )
    sa.Table(
        "adjustment_reviews",
        metadata,
        sa.Column("review_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("adjustment_id", text, nullable=False),
        sa.Column("action", text, nullable=False),
        sa.Column("previous_status", text, nullable=False),
        sa.Column("status", text, nullable=False),
        sa.Column("reviewed_by", text, nullable=False),
        sa.Column("note", text, nullable=False),
        sa.Column("amount_minor", big, nullable=False),
        sa.Column("currency", text, nullable=False),
        sa.Column("reviewed_at", utc, nullable=False),
        sa.Index("ix_adjustment_reviews_adjustment", "adjustment_id"),
    )
    sa.Table(
        "discrepancies",
        metadata,
        sa.Column("discrepancy_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("property_id", text, nullable=False),
        sa.Column("night", text, nullable=False),
        sa.Column("category", text, nullable=False),
        sa.Column("record_key", text, nullable=False),
        sa.Column("kind", text, nullable=True),
        sa.Column("provider_record_id", text, nullable=True),
        sa.Column("ledger_entry_id", text, nullable=True),
        sa.Column("booking_id", text, nullable=True),
        sa.Column("provider_amount_minor", big, nullable=True),
        sa.Column("ledger_amount_minor", big, nullable=True),
        sa.Column("difference_minor", big, nullable=False),
        sa.Column("currency", text, nullable=False),
        sa.Column("ledger_currency", text, nullable=True),
        sa.Column("detail", text, nullable=True),
        sa.Column("detected_at", utc, nullable=False),
        sa.Column("run_id", text, nullable=True),
        sa.Column("review_status", text, nullable=False, server_default="open"),
        sa.Column("reviewed_by", text, nullable=True),
        sa.Column("reviewed_at", utc, nullable=True),
        sa.Column("review_note", text, nullable=True),
        sa.Column("reviewed_difference_minor", big, nullable=True),
        sa.Column("cleared_at", utc, nullable=True),
        sa.UniqueConstraint(
            "property_id", "night", "category", "record_key", name="uq_discrepancies_finding"
        ),
        sa.Index("ix_discrepancies_review_status", "review_status", "property_id", "night"),
    )
    sa.Table(
        "discrepancy_reviews",
        metadata,
        sa.Column("review_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("property_id", text, nullable=False),
        sa.Column("night", text, nullable=False),
        sa.Column("category", text, nullable=False),
        sa.Column("record_key", text, nullable=False),
        sa.Column("action", text, nullable=False),
        sa.Column("previous_status", text, nullable=False),
        sa.Column("reviewed_by", text, nullable=False),
        sa.Column("note", text, nullable=True),
        sa.Column("difference_minor", big, nullable=False),
        sa.Column("currency", text, nullable=False),
        sa.Column("reviewed_at", utc, nullable=False),
        sa.Column("run_id", text, nullable=True),
        sa.Index("ix_discrepancy_reviews_finding", "property_id", "night", "category", "record_key"),
    )
    sa.Table(
        "discrepancy_thresholds",
        metadata,
        sa.Column("property_id", text, primary_key=True),
        sa.Column("unexplained_threshold_minor", big, nullable=False),
        sa.Column("updated_at", utc, nullable=False),
    )
    sa.Table(
        "payment_event_processing",
        metadata,
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("event_id", text, nullable=False, unique=True),
        sa.Column("provider", text, nullable=False),
        sa.Column("provider_payment_id", text, nullable=True),
        sa.Column("account", text, nullable=True),
        sa.Column("status", text, nullable=False, server_default="pending"),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("available_at", utc, nullable=False),
        sa.Column("locked_until", utc, nullable=True),
        sa.Column("locked_by", text, nullable=True),
        sa.Column("last_error", text, nullable=True),
        sa.Column("outcome", text, nullable=True),
        sa.Column("processed_at", utc, nullable=True),
        sa.Column("property_id", text, nullable=True),
        sa.Column("night", text, nullable=True),
        sa.Column("first_failed_at", utc, nullable=True),
        sa.Column("requeued_at", utc, nullable=True),
        sa.Column("requeued_by", text, nullable=True),
        sa.Index("ix_payment_event_processing_due", "status", "available_at"),
    )
    sa.Table(
        "payment_event_conflicts",
        metadata,
        sa.Column("event_id", text, primary_key=True),
        sa.Column("body_sha256", text, primary_key=True),
        sa.Column("provider", text, nullable=False),
        sa.Column("payload", text, nullable=False),
        sa.Column("received_at", utc, nullable=False),
    )
    sa.Table(
        "booking_confirmations",
        metadata,
        sa.Column("booking_id", text, primary_key=True),
        sa.Column("event_id", text, nullable=False),
        sa.Column("provider_payment_id", text, nullable=False),
        sa.Column("confirmed_at", utc, nullable=False),
    )
    sa.Table(
        "stale_nights",
        metadata,
        sa.Column("property_id", text, primary_key=True),
        sa.Column("night", text, primary_key=True),
        sa.Column("reason", text, nullable=False),
        sa.Column("marked_at", utc, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False, server_default="1"),
    )
    sa.Table(
        "provider_cursors",
        metadata,
        sa.Column("name", text, primary_key=True),
        sa.Column("value", text, nullable=False),
        sa.Column("updated_at", utc, nullable=False),
    )
    return metadata


def upgrade() -> None:
    bind = op.get_bind()
    present = set(sa.inspect(bind).get_table_names())
    for table in baseline().sorted_tables:
        if table.name in present:
            _complete(table)
        else:
            table.create(bind)


def _complete(table: sa.Table) -> None:
    """Add the columns and indexes an older release's ``table`` lacks (ALTER in batch mode on SQLite)."""
    inspector = sa.inspect(op.get_bind())
    columns = {column["name"] for column in inspector.get_columns(table.name)}
    indexes = {index["name"] for index in inspector.get_indexes(table.name)}
    missing = [column for column in table.columns if column.name not in columns]
    if missing:
        with op.batch_alter_table(table.name) as batch:
            for column in missing:
                batch.add_column(column)
    for index in table.indexes:
        if index.name not in indexes:
            op.create_index(index.name, table.name, [column.name for column in index.columns])


def downgrade() -> None:
    """None: the baseline holds the PMS's own tables, which no migration of ours may drop."""
    raise NotImplementedError("revision 0001 is the baseline; there is nothing below it to go back to")
