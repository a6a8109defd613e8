"""The sign-in limit: failed sign-ins counted per name and per client address, in the database.

Only failures count, so a person signing in and out all day never locks themself out. ``failures`` failed
sign-ins on one key, each within ``lock_s`` of the one before, lock the key until ``lock_s`` after the last
of them; a locked name or address is refused before its password is checked, so guessing on while locked
neither counts nor extends the lock. The counts live in ``review_signin_failures``, shared by every desk
process; a key's row is forgotten once its last failure is older than the bound, which keeps the table to
the last ``lock_s`` of failures whatever a flood of names sends. An admin lifts a name's lock with
``recon users unlock NAME``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, select

from recon_pipeline.db.schema import review_signin_failures
from recon_pipeline.db.upsert import dialect_insert


@dataclass(frozen=True)
class SignInLimit:
    """``failures`` failed sign-ins on a key lock it for ``lock_s`` seconds after the last one."""

    failures: int = 5
    lock_s: float = 15 * 60

    def since(self, now: datetime) -> datetime:
        """The oldest failure that still counts at ``now``."""
        return now - timedelta(seconds=self.lock_s)


def name_key(name: str) -> str:
    """The key of the failures of a name (what ``recon users unlock NAME`` forgets)."""
    return f"name:{name}"


def attempt_keys(name: str, client: str) -> tuple[str, str]:
    """The keys a sign-in counts under: the name tried and the client's address."""
    return name_key(name), f"client:{client}"


def locked_keys(
    connection: Connection, keys: tuple[str, ...], now: datetime, limit: SignInLimit
) -> list[str]:
    """Which of ``keys`` are locked at ``now``."""
    c = review_signin_failures.c
    query = select(c.attempt_key).where(
        c.attempt_key.in_(keys), c.failures >= limit.failures, c.last_failure_at > limit.since(now)
    )
    return sorted(connection.execute(query).scalars())


def record_failure(
    connection: Connection, keys: tuple[str, ...], now: datetime, limit: SignInLimit
) -> list[str]:
    """Count a failed sign-in under each of ``keys``; the keys this failure locked."""
    c = review_signin_failures.c
    connection.execute(delete(review_signin_failures).where(c.last_failure_at <= limit.since(now)))
    newly_locked = []
    for key in keys:
        statement = dialect_insert(connection, review_signin_failures)
        statement = (
            statement.values(attempt_key=key, failures=1, last_failure_at=now)
            .on_conflict_do_update(
                index_elements=["attempt_key"],
                set_={"failures": c.failures + 1, "last_failure_at": statement.excluded.last_failure_at},
            )
            .returning(c.failures)
        )
        if connection.execute(statement).scalar_one() == limit.failures:
            newly_locked.append(key)
    return newly_locked


def forget_failures(connection: Connection, key: str) -> int:
    """Forget ``key``'s failed sign-ins (lifting its lock); how many there were."""
    c = review_signin_failures.c
    failures = connection.execute(select(c.failures).where(c.attempt_key == key)).scalar()
    connection.execute(delete(review_signin_failures).where(c.attempt_key == key))
    return int(failures or 0)
