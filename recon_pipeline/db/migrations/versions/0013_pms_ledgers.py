"""Ledgers as PMSs keep them: how a guest paid, and the group a booking belongs to.

``ledger_entries.tender`` says how the guest paid (card, cash, bank_transfer, ota_collect, voucher, other;
NULL: not recorded): only a card, or an entry that does not say, is compared with the provider.
``bookings.group_id`` names the group (block, master folio) a booking belongs to: a payment taken for a
group may be posted across its bookings. Both tables are the PMS's and other systems insert into them with
only the contract's columns, so both columns are nullable (NULL is the behaviour before them), added only
where absent, as 0011 does.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

ADDED_COLUMNS = {"ledger_entries": ("tender",), "bookings": ("group_id",)}


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for table, columns in ADDED_COLUMNS.items():
        present = {column["name"] for column in inspector.get_columns(table)}
        for column in columns:
            if column not in present:
                op.add_column(table, sa.Column(column, sa.Text, nullable=True))


def downgrade() -> None:
    for table, columns in ADDED_COLUMNS.items():
        with op.batch_alter_table(table) as batch:  # SQLite drops a column by copying the table
            for column in columns:
                batch.drop_column(column)
