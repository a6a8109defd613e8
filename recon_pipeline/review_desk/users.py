"""The review desk's people: adding them with an argon2 hash, and checking a password at sign-in.

A user sees only the properties listed on their row; the list is checked against the ``properties``
table when the user is added, so a typo is refused rather than silently granting nothing. A new password
or role, or the user's removal, ends their sessions (``sessions.py``): whoever held one signs in again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import Connection, RowMapping, delete, insert, select, update

from recon_pipeline.db.schema import properties, review_users
from recon_pipeline.keys import validate_property_id
from recon_pipeline.review_desk.sessions import end_user_sessions

ROLES = ("analyst", "approver", "admin")
MAX_NAME_LENGTH = 64
MIN_PASSWORD_LENGTH = 12
MAX_PASSWORD_LENGTH = 1024  # argon2 hashes any length; a bound keeps a sign-in from costing more


@dataclass(frozen=True)
class ReviewUser:
    """A signed-in person: their role and the properties whose findings they may see."""

    name: str
    role: str
    properties: tuple[str, ...]


@dataclass(frozen=True)
class UserChange:
    """A user as changed, and how many of their sessions the change ended (a new password or role)."""

    user: ReviewUser
    sessions_ended: int


def validate_name(name: str) -> str:
    """A user name: printable, no spaces or commas, at most ``MAX_NAME_LENGTH`` characters."""
    if not name or len(name) > MAX_NAME_LENGTH or not name.isprintable() or any(c in name for c in " ,"):
        raise ValueError(
            f"invalid user name {name!r}: 1-{MAX_NAME_LENGTH} printable characters, no space or comma"
        )
    return name


def validate_role(role: str) -> str:
    if role not in ROLES:
        raise ValueError(f"invalid role {role!r}: one of {', '.join(ROLES)}")
    return role


def validate_password(password: str) -> str:
    if not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
        raise ValueError(f"password must be {MIN_PASSWORD_LENGTH}-{MAX_PASSWORD_LENGTH} characters")
    return password


def parse_properties(text: str) -> tuple[str, ...]:
    """``P1,P2`` as a sorted tuple of valid property ids, each once; ValueError naming a bad one."""
    given = {item.strip() for item in text.split(",") if item.strip()}
    if not given:
        raise ValueError("--properties needs at least one property id")
    return tuple(sorted(validate_property_id(item) for item in given))


def add_user(
    connection: Connection, name: str, role: str, property_ids: tuple[str, ...], password: str, now: datetime
) -> ReviewUser:
    """Insert a user with an argon2id hash; ValueError for an unknown property or a name already taken."""
    _validate(connection, name, role, property_ids, password)
    if _exists(connection, name):
        raise ValueError(f"user {name!r} already exists")
    connection.execute(
        insert(review_users).values(
            name=name,
            role=role,
            properties=",".join(property_ids),
            password_hash=PasswordHasher().hash(password),
            created_at=now,
        )
    )
    return ReviewUser(name, role, property_ids)


def reset_user(
    connection: Connection, name: str, role: str, property_ids: tuple[str, ...], password: str, now: datetime
) -> bool:
    """Add the user, or give an existing one this role, these properties and this password (the demo's
    users: a re-run prints a password that works); True if added."""
    if not _exists(connection, name):
        add_user(connection, name, role, property_ids, password, now)
        return True
    change_user(connection, name, role, property_ids, password)
    return False


def change_user(
    connection: Connection,
    name: str,
    role: str | None = None,
    property_ids: tuple[str, ...] | None = None,
    password: str | None = None,
) -> UserChange:
    """Give an existing user another role, other properties or a new password (None keeps each). A new
    password or another role ends their sessions; other properties reach their sessions at the next
    request (``load_user``). ValueError for an unknown user or property, a bad role or password."""
    current = load_user(connection, name)
    if current is None:
        raise ValueError(f"no user {name!r}")
    changed = ReviewUser(name, role or current.role, property_ids or current.properties)
    _validate(connection, name, changed.role, changed.properties, password)
    values: dict[str, str] = {"role": changed.role, "properties": ",".join(changed.properties)}
    if password is not None:
        values["password_hash"] = PasswordHasher().hash(password)
    connection.execute(update(review_users).where(review_users.c.name == name).values(**values))
    ends_sessions = password is not None or changed.role != current.role
    return UserChange(changed, end_user_sessions(connection, name) if ends_sessions else 0)


def remove_user(connection: Connection, name: str) -> None:
    """Delete the user and end their sessions; the audit log keeps their name."""
    if connection.execute(delete(review_users).where(review_users.c.name == name)).rowcount != 1:
        raise ValueError(f"no user {name!r}")
    end_user_sessions(connection, name)


def list_users(connection: Connection) -> list[RowMapping]:
    """Every user's name, role, properties and creation time, by name (never the hash)."""
    c = review_users.c
    return list(
        connection.execute(select(c.name, c.role, c.properties, c.created_at).order_by(c.name)).mappings()
    )


def _validate(
    connection: Connection, name: str, role: str, property_ids: tuple[str, ...], password: str | None
) -> None:
    validate_name(name)
    validate_role(role)
    if password is not None:
        validate_password(password)
    known = set(connection.execute(select(properties.c.property_id)).scalars())
    unknown = [property_id for property_id in property_ids if property_id not in known]
    if unknown:
        raise ValueError(f"unknown property {unknown[0]!r}: not in the properties table")


def _exists(connection: Connection, name: str) -> bool:
    return (
        connection.execute(select(review_users.c.name).where(review_users.c.name == name)).first() is not None
    )


def authenticate(connection: Connection, name: str, password: str) -> ReviewUser | None:
    """The user if ``password`` is theirs, else None (also for an unknown name, after the same work)."""
    row = connection.execute(select(review_users).where(review_users.c.name == name)).first()
    hasher = PasswordHasher()
    if row is None or len(password) > MAX_PASSWORD_LENGTH:
        # Hash anyway so that an unknown name takes as long as a wrong password.
        hasher.hash(password[:MAX_PASSWORD_LENGTH])
        return None
    try:
        hasher.verify(row.password_hash, password)
    except (VerificationError, InvalidHashError):
        return None
    return ReviewUser(row.name, row.role, tuple(row.properties.split(",")))


def load_user(connection: Connection, name: str) -> ReviewUser | None:
    """The stored user of a session (None once deleted: their session no longer signs them in)."""
    row = connection.execute(select(review_users).where(review_users.c.name == name)).first()
    return None if row is None else ReviewUser(row.name, row.role, tuple(row.properties.split(",")))
