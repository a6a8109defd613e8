"""approval_thresholds, each property's own four-eyes threshold; review_audit.user renamed user_name.

Four-eyes approval used the property's unexplained-amount threshold, the number the blocking check
judges, so making four-eyes visible (lowering it) failed the property's next night. ``user`` is a reserved
word in PostgreSQL: ``select user from review_audit`` there returns the session user, not the column. The
rename keeps every audit row; SQLite alters the table in batch mode (a copy), as 0004's downgrade does.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recon_pipeline.db.types import UtcDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

AUDIT = "review_audit"


def upgrade() -> None:
    op.create_table(
        "approval_thresholds",
        sa.Column("property_id", sa.Text, primary_key=True),
        sa.Column("four_eyes_above_minor", sa.BigInteger, nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
    )
    _rename_audit_user("user", "user_name", "ix_review_audit_user_at", "ix_review_audit_user_name_at")


def downgrade() -> None:
    _rename_audit_user("user_name", "user", "ix_review_audit_user_name_at", "ix_review_audit_user_at")
    op.drop_table("approval_thresholds")


def _rename_audit_user(old: str, new: str, old_index: str, new_index: str) -> None:
    """Rename the audit log's user column and its (user, at) index along with it. The index goes first and
    comes back after the batch: a batch cannot index a column it renames."""
    op.drop_index(old_index, table_name=AUDIT)
    with op.batch_alter_table(AUDIT) as batch:
        batch.alter_column(old, new_column_name=new, existing_type=sa.Text, existing_nullable=False)
    op.create_index(new_index, AUDIT, [new, "at"])
