"""review_users and review_audit: the review desk's people (argon2 hashes) and its audit log.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recon_pipeline.db.types import UtcDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_users",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("properties", sa.Text, nullable=False),
        sa.Column("password_hash", sa.Text, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
    )
    op.create_table(
        "review_audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("user", sa.Text, nullable=False),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("target", sa.Text, nullable=True),
        sa.Column("amount_seen", sa.BigInteger, nullable=True),
        sa.Column("detail", sa.Text, nullable=True),
    )
    op.create_index("ix_review_audit_user_at", "review_audit", ["user", "at"])


def downgrade() -> None:
    op.drop_table("review_audit")
    op.drop_table("review_users")
