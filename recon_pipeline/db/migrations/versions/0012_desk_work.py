"""The review desk as analysts work: who a finding is assigned to, each user's saved views, and the
provider's record as the provider holds it for the finding pages.

``discrepancies`` gains ``assigned_to``/``assigned_at`` and ``cleared_run_id`` (the run that cleared the
finding) (nullable: the PMS's systems never write them).
``review_saved_views`` keeps a user's named filters per list. ``provider_records`` keeps, per property and
provider record, what the night's pull last saw of a record that a finding or a match names (status,
times, amount, fee, net, settlement, card, where the provider's dashboard shows it): a finding's page shows
the provider's side without asking the provider. A run upserts it in the property-night's transaction.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recon_pipeline.db.types import UtcDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    present = {column["name"] for column in inspector.get_columns("discrepancies")}
    if "assigned_to" not in present:
        op.add_column("discrepancies", sa.Column("assigned_to", sa.Text, nullable=True))
    if "assigned_at" not in present:
        op.add_column("discrepancies", sa.Column("assigned_at", UtcDateTime(), nullable=True))
    if "cleared_run_id" not in present:
        op.add_column("discrepancies", sa.Column("cleared_run_id", sa.Text, nullable=True))
    op.create_table(
        "review_saved_views",
        sa.Column("view_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("user_name", sa.Text, nullable=False),
        sa.Column("list_name", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.UniqueConstraint("user_name", "list_name", "name", name="uq_review_saved_views_name"),
    )
    op.create_table(
        "provider_records",
        sa.Column("property_id", sa.Text, primary_key=True),
        sa.Column("provider_record_id", sa.Text, primary_key=True),
        sa.Column("kind", sa.Text, primary_key=True),
        sa.Column("night", sa.Text, nullable=False),
        sa.Column("provider", sa.Text, nullable=False),
        sa.Column("provider_account", sa.Text, nullable=True),
        sa.Column("charge_id", sa.Text, nullable=True),
        sa.Column("payment_intent_id", sa.Text, nullable=True),
        sa.Column("booking_id", sa.Text, nullable=True),
        sa.Column("status", sa.Text, nullable=True),
        sa.Column("settled", sa.Boolean, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=True),
        sa.Column("amount_minor", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.Text, nullable=False),
        sa.Column("fee_minor", sa.BigInteger, nullable=True),
        sa.Column("net_minor", sa.BigInteger, nullable=True),
        sa.Column("settlement_amount_minor", sa.BigInteger, nullable=True),
        sa.Column("settlement_currency", sa.Text, nullable=True),
        sa.Column("card_brand", sa.Text, nullable=True),
        sa.Column("card_last4", sa.Text, nullable=True),
        sa.Column("approval_code", sa.Text, nullable=True),
        sa.Column("dashboard_url", sa.Text, nullable=True),
        sa.Column("run_id", sa.Text, nullable=True),
        sa.Column("seen_at", UtcDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("provider_records")
    op.drop_table("review_saved_views")
    with op.batch_alter_table("discrepancies") as batch:  # SQLite drops a column by copying the table
        batch.drop_column("cleared_run_id")
        batch.drop_column("assigned_at")
        batch.drop_column("assigned_to")
