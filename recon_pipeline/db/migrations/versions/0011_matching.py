"""Matching beyond the provider's id: the ledger's card and reference keys, each property's fee booking and
match policy, and the matches a run finds or a person decides.

A PMS that never learns the provider's id records a card payment as brand + last four, the issuer's
approval code and a free-text reference: ``ledger_entries`` gains those four columns. ``properties`` gains
``fee_booking`` (per_movement, per_payout, none) and ``match_policy`` (JSON). Both tables are the PMS's and
other systems insert into them with only the contract's columns, so every new column is nullable (NULL is
today's behaviour). A database made before Alembic by a build that already had a column keeps it: the
revision adds a column only where it is absent, as 0004 does.

``matches`` holds each property-night's matches and suggestions, kept true across re-runs as findings
are; ``match_decisions`` is the append-only audit of every confirm, reject and pair by hand.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recon_pipeline.db.types import UtcDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

ADDED_COLUMNS = {
    "ledger_entries": ("card_brand", "card_last4", "approval_code", "reference"),
    "properties": ("fee_booking", "match_policy"),
}


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for table, columns in ADDED_COLUMNS.items():
        present = {column["name"] for column in inspector.get_columns(table)}
        for column in columns:
            if column not in present:
                op.add_column(table, sa.Column(column, sa.Text, nullable=True))
    op.create_table(
        "matches",
        sa.Column("match_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("property_id", sa.Text, nullable=False),
        sa.Column("night", sa.Text, nullable=False),
        sa.Column("match_key", sa.Text, nullable=False),
        sa.Column("rule", sa.Text, nullable=False),
        sa.Column("score", sa.Float(precision=53), nullable=True),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=True),
        sa.Column("provider_record_ids", sa.Text, nullable=False),
        sa.Column("ledger_entry_ids", sa.Text, nullable=False),
        sa.Column("booking_id", sa.Text, nullable=True),
        sa.Column("provider_amount_minor", sa.BigInteger, nullable=True),
        sa.Column("ledger_amount_minor", sa.BigInteger, nullable=True),
        sa.Column("currency", sa.Text, nullable=True),
        sa.Column("keys_agree", sa.Text, nullable=True),
        sa.Column("keys_differ", sa.Text, nullable=True),
        sa.Column("detail", sa.Text, nullable=True),
        sa.Column("run_id", sa.Text, nullable=True),
        sa.Column("detected_at", UtcDateTime(), nullable=False),
        sa.Column("cleared_at", UtcDateTime(), nullable=True),
        sa.Column("decided_by", sa.Text, nullable=True),
        sa.Column("decided_at", UtcDateTime(), nullable=True),
        sa.Column("decision_reason", sa.Text, nullable=True),
        sa.UniqueConstraint("property_id", "night", "match_key", name="uq_matches_match"),
    )
    op.create_index("ix_matches_status", "matches", ["status", "property_id", "night"])
    op.create_table(
        "match_decisions",
        sa.Column("decision_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("property_id", sa.Text, nullable=False),
        sa.Column("night", sa.Text, nullable=False),
        sa.Column("match_key", sa.Text, nullable=False),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("previous_status", sa.Text, nullable=True),
        sa.Column("decided_by", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("provider_record_ids", sa.Text, nullable=False),
        sa.Column("ledger_entry_ids", sa.Text, nullable=False),
        sa.Column("provider_amount_minor", sa.BigInteger, nullable=True),
        sa.Column("ledger_amount_minor", sa.BigInteger, nullable=True),
        sa.Column("currency", sa.Text, nullable=True),
        sa.Column("decided_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_match_decisions_match", "match_decisions", ["property_id", "night", "match_key"])


def downgrade() -> None:
    op.drop_table("match_decisions")
    op.drop_table("matches")
    for table, columns in ADDED_COLUMNS.items():
        with op.batch_alter_table(table) as batch:  # SQLite drops a column by copying the table
            for column in columns:
                batch.drop_column(column)
