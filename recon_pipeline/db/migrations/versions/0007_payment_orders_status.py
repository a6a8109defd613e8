"""ix_payment_orders_property_status: the holds and orphans reads select a property's orders by status.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TABLE = "payment_orders"
INDEX = "ix_payment_orders_property_status"


def upgrade() -> None:
    # A database 0001 adopted was made by ``create_all`` and may have the index already (as 0004's column).
    if INDEX not in {index["name"] for index in sa.inspect(op.get_bind()).get_indexes(TABLE)}:
        op.create_index(INDEX, TABLE, ["property_id", "status"])


def downgrade() -> None:
    op.drop_index(INDEX, table_name=TABLE)
