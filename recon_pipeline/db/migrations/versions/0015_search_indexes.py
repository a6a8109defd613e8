"""The review desk's search served by indexes: a finding by its booking, provider record, ledger entry,
a part of its record key, or its ledger entry's reference.

The desk's search (``review_desk/findings.py::search_condition``) is a union of one lookup per column,
each answered by its index: without them, one search over every property read all of ``discrepancies``
(2.1 s of a core at 560,000 findings) while everyone else's pages waited for the CPU. A part of the record
key is found by a trigram index (PostgreSQL's ``pg_trgm``, a trusted extension any database owner may
create); SQLite gets a plain index on the column, which its ``LIKE`` cannot use, at its scale no matter.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# (index, table, column): every index this revision adds
INDEXES = (
    ("ix_discrepancies_booking", "discrepancies", "booking_id"),
    ("ix_discrepancies_provider_record", "discrepancies", "provider_record_id"),
    ("ix_discrepancies_ledger_entry", "discrepancies", "ledger_entry_id"),
    ("ix_ledger_entries_reference", "ledger_entries", "reference"),
)
RECORD_KEY_INDEX = "ix_discrepancies_record_key_trigram"


def upgrade() -> None:
    # A database 0001 adopted was made by ``create_all`` and may have the indexes already (as 0007's).
    inspector = sa.inspect(op.get_bind())
    tables = ("discrepancies", "ledger_entries")
    present = {index["name"] for table in tables for index in inspector.get_indexes(table)}
    for name, table, column in INDEXES:
        if name not in present:
            op.create_index(name, table, [column])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    if RECORD_KEY_INDEX not in present:
        op.create_index(
            RECORD_KEY_INDEX,
            "discrepancies",
            ["record_key"],
            postgresql_using="gin",
            postgresql_ops={"record_key": "gin_trgm_ops"},
        )


def downgrade() -> None:
    op.drop_index(RECORD_KEY_INDEX, "discrepancies")
    for name, table, _column in reversed(INDEXES):
        op.drop_index(name, table)
