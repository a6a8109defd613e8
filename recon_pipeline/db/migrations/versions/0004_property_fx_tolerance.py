"""properties.fx_tolerance_bps: how far a ledger entry booked at a conversion's settlement figure may be off
the balance transaction before it is an ``fx_difference``, in basis points of the settlement amount.

``properties`` is the PMS's table and other systems insert into it with only the contract's columns, so the
column is nullable: NULL is the default tolerance, 0. A database made before Alembic by a build that
already had the column (``create_all`` of its schema, then adopted by 0001) keeps it: the revision adds
the column only where it is absent, as 0002 creates its table.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TABLE = "properties"
COLUMN = "fx_tolerance_bps"


def upgrade() -> None:
    if COLUMN not in {column["name"] for column in sa.inspect(op.get_bind()).get_columns(TABLE)}:
        op.add_column(TABLE, sa.Column(COLUMN, sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:  # SQLite drops a column by copying the table
        batch.drop_column(COLUMN)
