"""posting_outbox: approved adjustments waiting to be posted to the PMS, and what posting them came to.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recon_pipeline.db.types import UtcDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "posting_outbox",
        sa.Column("adjustment_id", sa.Text, primary_key=True),
        sa.Column("idempotency_key", sa.Text, nullable=False, unique=True),
        sa.Column("state", sa.Text, nullable=False, server_default="approved"),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("lookups", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_attempt_at", UtcDateTime(), nullable=False),
        sa.Column("claimed_by", sa.Text, nullable=True),
        sa.Column("locked_until", UtcDateTime(), nullable=True),
        sa.Column("adapter", sa.Text, nullable=True),
        sa.Column("pms_reference", sa.Text, nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("resolved_by", sa.Text, nullable=True),
        sa.Column("resolution_note", sa.Text, nullable=True),
    )
    op.create_index("ix_posting_outbox_due", "posting_outbox", ["state", "next_attempt_at"])


def downgrade() -> None:
    op.drop_table("posting_outbox")
