"""The partition lock: every writer of a property-night's pipeline tables (findings, adjustments, matches,
night takings) takes it first, so each one's read of what is there is current when it decides what to
change, and two concurrent runs of one partition take turns.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import Connection, text

# connection.info entry: (transaction, partition keys whose advisory lock it holds)
_HELD_LOCKS = "recon_partition_locks"

# One statement takes the keys' locks one after the other, in the order given (the function scan keeps it).
_LOCK_KEYS = text(
    "SELECT pg_advisory_xact_lock(hashtextextended(keys.key, 0)) "
    "FROM unnest(CAST(:keys AS text[])) WITH ORDINALITY AS keys(key, position) ORDER BY keys.position"
)


def lock_partition(connection: Connection, property_id: str, night: str) -> None:
    """Hold the (property, night) writer lock until the transaction ends (``lock_partitions`` of one)."""
    lock_partitions(connection, night, (property_id,))


def lock_partitions(connection: Connection, night: str, property_ids: Collection[str]) -> None:
    """Hold the writer locks of the properties' partitions of ``night`` until the transaction ends.

    PostgreSQL: a transaction-scoped advisory lock on each partition's key, asked for once per transaction
    (the adjustments and the findings of a property-night are written in one: the second writer finds it
    held), the keys not yet held taken in one statement in sorted order, so two batches that share
    partitions take them in the same order and never deadlock. SQLite has a single writer per database
    already, and its transactions that write never interleave.
    """
    if connection.dialect.name != "postgresql":
        return
    held_by, keys = connection.info.get(_HELD_LOCKS, (None, frozenset()))
    held = keys if held_by is not None and held_by is connection.get_transaction() else frozenset()
    wanted = sorted({f"recon/discrepancies/{property_id}/{night}" for property_id in property_ids} - held)
    if not wanted:
        return
    connection.execute(_LOCK_KEYS, {"keys": wanted})
    transaction = connection.get_transaction()  # begun by the statement if it was not already
    # Only the current transaction's keys are kept: the entry stays as small as one transaction's locks.
    connection.info[_HELD_LOCKS] = (transaction, held | set(wanted))
