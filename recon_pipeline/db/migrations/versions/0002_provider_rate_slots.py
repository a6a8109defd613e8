"""provider_rate_slots: the deployment-wide provider rate bucket (``recon_pipeline/providers/ratelimit.py``).

Per bucket, the next free request slot in Unix seconds by the database's clock. UNLOGGED on PostgreSQL: a
slot needs no WAL flush (a crash empties the table, and the next request simply starts a fresh schedule),
which makes a reservation cost a round trip rather than an fsync. SQLite has no such option.

A database made before Alembic by a build that already had the table (``create_all`` of its schema) keeps
it: the revision creates the table only where it is absent, as 0001 adopts the others.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TABLE = "provider_rate_slots"


def upgrade() -> None:
    bind = op.get_bind()
    if TABLE not in sa.inspect(bind).get_table_names():
        op.create_table(
            TABLE,
            sa.Column("bucket", sa.Text, primary_key=True),
            sa.Column("next_slot_s", sa.Float(precision=53), nullable=False),
        )
    if bind.dialect.name == "postgresql":
        op.execute(f"ALTER TABLE {TABLE} SET UNLOGGED")


def downgrade() -> None:
    """The table holds only schedules, which a fresh start rebuilds: dropping it loses nothing."""
    op.drop_table(TABLE)
