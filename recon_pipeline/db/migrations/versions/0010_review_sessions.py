"""review_sessions and review_signin_failures: desk sessions that end, and a sign-in limit shared by every
desk process.

A signed cookie alone cannot be revoked: a copy of it kept working after sign-out. The cookie now carries
a random session id whose hash is a ``review_sessions`` row; sign-out, a changed password or role and the
session's idle or absolute end delete the row. ``review_signin_failures`` counts failed sign-ins per name
and per client address in the database, so several desk processes share one count.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recon_pipeline.db.types import UtcDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_sessions",
        sa.Column("session_hash", sa.Text, primary_key=True),
        sa.Column("user_name", sa.Text, nullable=False),
        sa.Column("signed_in_at", UtcDateTime(), nullable=False),
        sa.Column("last_seen_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_review_sessions_user_name", "review_sessions", ["user_name"])
    op.create_table(
        "review_signin_failures",
        sa.Column("attempt_key", sa.Text, primary_key=True),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("last_failure_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_review_signin_failures_last", "review_signin_failures", ["last_failure_at"])


def downgrade() -> None:
    op.drop_table("review_signin_failures")
    op.drop_table("review_sessions")
