"""night_reconciliations: per property-night, the outcome of its latest reconciliation.

A run reconciles a batch of properties of one night (``recon_pipeline/batches``), so Dagster's partition
status (per night) no longer says how each property's night went: this table does.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recon_pipeline.db.types import UtcDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TABLE = "night_reconciliations"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("property_id", sa.Text, primary_key=True),
        sa.Column("night", sa.Text, primary_key=True),
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("batch_key", sa.Text, nullable=True),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("findings", sa.Integer, nullable=True),
        sa.Column("adjustments_proposed", sa.Integer, nullable=True),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("finished_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_night_reconciliations_night_status", TABLE, ["night", "status"])


def downgrade() -> None:
    op.drop_table(TABLE)
