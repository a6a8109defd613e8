"""payouts, payout_transactions and bank_credits: payouts traced to property-nights and their deposits.

Revision ID: 0005
Revises: 0003
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recon_pipeline.db.types import UtcDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "payouts",
        sa.Column("payout_id", sa.Text, primary_key=True),
        sa.Column("provider", sa.Text, nullable=False),
        sa.Column("provider_account", sa.Text, nullable=True),
        sa.Column("amount_minor", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("failure_code", sa.Text, nullable=True),
        sa.Column("arrival_night", sa.Text, nullable=False),
        sa.Column("automatic", sa.Boolean, nullable=False),
        sa.Column("statement_descriptor", sa.Text, nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("traced", sa.Boolean, nullable=False),
        sa.Column("transactions", sa.Integer, nullable=True),
        sa.Column("sum_difference_minor", sa.BigInteger, nullable=True),
        sa.Column("holder_property_id", sa.Text, nullable=False),
        sa.Column("last_seen_at", UtcDateTime(), nullable=False),
    )
    op.create_index("ix_payouts_arrival_night", "payouts", ["arrival_night"])
    op.create_table(
        "payout_transactions",
        sa.Column("payout_id", sa.Text, primary_key=True),
        sa.Column("transaction_id", sa.Text, primary_key=True),
        sa.Column("source_id", sa.Text, nullable=True),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("amount_minor", sa.BigInteger, nullable=False),
        sa.Column("fee_minor", sa.BigInteger, nullable=False),
        sa.Column("net_minor", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.Text, nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("property_id", sa.Text, nullable=True),
        sa.Column("night", sa.Text, nullable=True),
    )
    op.create_index("ix_payout_transactions_property_night", "payout_transactions", ["property_id", "night"])
    op.create_table(
        "bank_credits",
        sa.Column("statement_id", sa.Text, primary_key=True),
        sa.Column("entry_reference", sa.Text, primary_key=True),
        sa.Column("detail_index", sa.Integer, primary_key=True),
        sa.Column("account_iban", sa.Text, nullable=True),
        sa.Column("booking_date", sa.Text, nullable=False),
        sa.Column("value_date", sa.Text, nullable=True),
        sa.Column("amount_minor", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.Text, nullable=False),
        sa.Column("remittance_info", sa.Text, nullable=False),
        sa.Column("imported_at", UtcDateTime(), nullable=False),
        sa.Column("matched_payout_id", sa.Text, nullable=True, unique=True),
    )


def downgrade() -> None:
    op.drop_table("bank_credits")
    op.drop_table("payout_transactions")
    op.drop_table("payouts")
