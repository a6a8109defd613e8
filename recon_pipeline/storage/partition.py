"""The partition lock: every writer of a property-night's pipeline tables (findings, adjustments, matches,
night takings) takes it first, so each one's read of what is there is current when it decides what to
change, and two concurrent runs of one partition take turns.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

# connection.info entry: (transaction, partition keys whose advisory lock it holds)
_HELD_LOCKS = "recon_partition_locks"


def lock_partition(connection: Connection, property_id: str, night: str) -> None:
    """Hold the (property, night) writer lock until the transaction ends.

    PostgreSQL: a transaction-scoped advisory lock on the partition's key, asked for once per transaction
    (the adjustments and the findings of a property-night are written in one: the second writer finds it
    held). SQLite has a single writer per database already, and its transactions that write never
    interleave.
    """
    if connection.dialect.name != "postgresql":
        return
    key = f"recon/discrepancies/{property_id}/{night}"
    held_by, keys = connection.info.get(_HELD_LOCKS, (None, frozenset()))
    if held_by is not None and held_by is connection.get_transaction() and key in keys:
        return
    connection.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": key})
    transaction = connection.get_transaction()  # begun by the statement if it was not already
    # Only the current transaction's keys are kept: the entry stays as small as one transaction's locks.
    connection.info[_HELD_LOCKS] = (transaction, (keys if held_by is transaction else frozenset()) | {key})
