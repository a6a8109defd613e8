"""The night's takings: per tender on the ledger's side, and per card brand on both sides.

``night_takings`` keeps, per property-night, what a night auditor compares by hand: the ledger's takings
per tender (cash, bank transfer, OTA-collected...) and the cards per brand, the PMS's against the
provider's, each in one currency with how many movements and their signed sum (``reconcile/takings.py``).
The night's run writes it in the property-night's transaction; the review desk's night page and the HTML
report read it.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recon_pipeline.db.types import UtcDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "night_takings",
        sa.Column("property_id", sa.Text, primary_key=True),
        sa.Column("night", sa.Text, primary_key=True),
        sa.Column("side", sa.Text, primary_key=True),
        sa.Column("grouped_by", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("currency", sa.Text, primary_key=True),
        sa.Column("movements", sa.Integer, nullable=False),
        sa.Column("amount_minor", sa.BigInteger, nullable=False),
        sa.Column("run_id", sa.Text, nullable=True),
        sa.Column("recorded_at", UtcDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("night_takings")
